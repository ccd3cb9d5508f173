"""Shared fixtures: every test gets its own RAGQA_HOME under a temp dir (nothing touches the
user's data folder), and drives the real CLI through typer's test runner."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragqa.faces.cli import app

REPO = Path(__file__).resolve().parents[1]
SEEDS = REPO / "seeds"
FULL_DUPLEX = "Which papers do full-duplex speech?"


class Ragqa:
    """Runs `ragqa ...` in-process with a given environment."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, **env: str):  # noqa: A002
        return self.runner.invoke(app, list(args), env={**self.env, **env}, input=input,
                                  catch_exceptions=False)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's keys, Chroma server or .env file."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGQA_CHROMA_HOST", "RAGQA_CHROMA_PORT",
                 "RAGQA_CHROMA_TOKEN", "RAGQA_EMBED_PROVIDER", "RAGQA_COLLECTION", "RAGQA_LLM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAGQA_ENV_FILE", str(tmp_path / "no.env"))
    monkeypatch.setenv("RAGQA_HOME", str(tmp_path / "home"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def ragqa(home: Path) -> Ragqa:
    return Ragqa({"RAGQA_HOME": str(home)})


@pytest.fixture(scope="session")
def _seeded_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder with the seeds ingested once per session (embedding takes seconds)."""
    template = tmp_path_factory.mktemp("seeded") / "home"
    result = Ragqa({"RAGQA_HOME": str(template)})("ingest", "--seeds", "--quiet")
    assert result.exit_code == 0, result.output
    return template


@pytest.fixture
def seeded(_seeded_template: Path, home: Path, ragqa: Ragqa) -> Ragqa:
    """`ragqa` over a private copy of a data folder that already holds the seeds."""
    shutil.copytree(_seeded_template, home)
    return ragqa


@pytest.fixture
def seeds_copy(tmp_path: Path) -> Path:
    """The two seed files in a folder a test may edit."""
    folder = tmp_path / "src"
    shutil.copytree(SEEDS, folder)
    return folder


@pytest.fixture
def llm_server():
    """The loopback OpenAI-compatible server (tests/llm_server.py), started for one test."""
    from .llm_server import LoopbackLLM

    server = LoopbackLLM().start()
    yield server
    server.stop()
