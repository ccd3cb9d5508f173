"""Shared fixtures: every test gets its own RAGQA_HOME under a temp dir (nothing touches the
user's data folder), and drives the real CLI through typer's test runner."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragqa.faces.cli import app

# Before the helpers are imported: their asserts explain themselves as the tests' do.
pytest.register_assert_rewrite("tests.helpers")

from .helpers import FULL_DUPLEX, REPO, SEEDS  # noqa: E402, F401 (test files import them)
from .helpers.processes import ChromaServer  # noqa: E402


class Ragqa:
    """Runs `ragqa ...` in-process with a given environment."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | None = None, **env: str):  # noqa: A002
        try:
            return self.runner.invoke(app, list(args), env={**self.env, **env}, input=input,
                                      catch_exceptions=False)
        finally:
            gc.unfreeze()  # see _release_what_commands_left


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's keys, Chroma server or .env file."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGQA_CHROMA_HOST", "RAGQA_CHROMA_PORT",
                 "RAGQA_CHROMA_TOKEN", "RAGQA_EMBED_PROVIDER", "RAGQA_COLLECTION", "RAGQA_LLM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAGQA_ENV_FILE", str(tmp_path / "no.env"))
    monkeypatch.setenv("RAGQA_HOME", str(tmp_path / "home"))
    # The tests of written answers script one reply per prompt and run unscreened; the tests
    # of screening (tests/test_screening.py and the web page's) set RAGQA_SCREEN=auto.
    monkeypatch.setenv("RAGQA_SCREEN", "off")


# ---------------------------------------------------------------- memory (issue: 10.7 GB suite)
# Each in-process `ragqa` command leaves an encoder (~100 MB of onnxruntime session) and a
# Chroma client behind; in one pytest process that added up to 10.7 GB. What holds them:
# 1. `ragqa ingest` calls gc.freeze() once started (ragqa.faces.cli._no_gc_while_starting):
#    right in a process that ends with the command, but here everything then alive became
#    permanent, the garbage of every earlier command too (cycles that hold encoders and Stores).
#    Ragqa.__call__ unfreezes; the fixture below collects.
# 2. chromadb keeps one System per data folder for the life of the process
#    (SharedSystemClient._identifier_to_system; ragqa never closes its clients): ~5 MB each,
#    one per test home. The fixture stops those under the test's tmp_path.
# 3. A command that fails before it needs the embedder (bad input) returns while its model still
#    loads on a thread of its own (ragqa.app.start_loading_encoder): waited for, or tests of
#    0.1 s each had several models loading at once.
# 4. glibc gives each new thread a malloc arena (up to 8 per core); the models load on fresh
#    threads, and memory freed in those arenas mostly stays resident. Two arenas, and a trim
#    after each collection, keep it in bounds.

GC_SLACK = 256 << 20  # resident bytes the suite may grow by before a full collection (~0.1 s)
_rss_after_collect = [0]
try:
    _LIBC = ctypes.CDLL("libc.so.6")
    _LIBC.mallopt(-8, 2)  # M_ARENA_MAX: for arenas made from now on
except (OSError, AttributeError):  # not glibc
    _LIBC = None


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _stop_chroma_systems_under(folder: Path) -> None:
    if "chromadb" not in sys.modules:
        return
    from chromadb.api.shared_system_client import SharedSystemClient

    prefix = str(folder) + os.sep
    for identifier in [i for i in SharedSystemClient._identifier_to_system if i.startswith(prefix)]:
        system = SharedSystemClient._identifier_to_system.pop(identifier)
        SharedSystemClient._identifier_to_refcount.pop(identifier, None)
        with contextlib.suppress(Exception):
            system.stop()


@pytest.fixture(autouse=True)
def _release_what_commands_left(tmp_path: Path):
    yield
    for thread in threading.enumerate():
        if thread.name.startswith("ragqa-model-load"):
            thread.join(timeout=120)
    _stop_chroma_systems_under(tmp_path)
    gc.unfreeze()
    if _rss() > _rss_after_collect[0] + GC_SLACK:
        gc.collect()
        if _LIBC is not None:
            _LIBC.malloc_trim(0)
        _rss_after_collect[0] = _rss()


# The fast tier is `pytest -m "not slow"`. Slow: every test that runs ragqa over a data folder
# (the in-process CLI, a Store: each command loads the embedder and opens Chroma, 0.3-1.5 s),
# needs the seeded folder (a ~20 s ingest of the seeds, multilingual vectors included), or
# starts a server, a browser or a process (`server`), plus the few heavy ones marked where they
# are. Measured (full suite, load ~5 on 2 cores): those 526 tests took 768 of 800 s, the other
# 371 took 32 s (the fast tier: 34 s wall, 0.75 GB).
SLOW_FIXTURES = frozenset({"home", "ragqa", "seeded", "_seeded_template", "llm_server"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES.intersection(item.fixturenames) or item.get_closest_marker("server"):
            item.add_marker(pytest.mark.slow)


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
    """The loopback OpenAI-compatible server (tests/helpers/llm_server.py), started for one test."""
    from .helpers.llm_server import LoopbackLLM

    server = LoopbackLLM().start()
    yield server
    server.stop()


@pytest.fixture
def restartable_server(tmp_path: Path) -> Iterator[ChromaServer]:
    """`chroma run` on 127.0.0.1 over the test's folder, for a test that kills and restarts it."""
    server = ChromaServer(tmp_path / "server-data", tmp_path / "chroma.log")
    server.start()
    yield server
    server.stop()
