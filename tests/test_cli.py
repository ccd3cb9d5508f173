"""The command line itself: a light --help, settings from env and .env, doctor, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ragqa.config import load_settings

# rich too: its import alone is half of what `ragqa --help` may take (0.3 s, issue 6).
HEAVY = ("chromadb", "llama_index", "onnxruntime", "bm25s", "openai", "rich")


def test_help_imports_no_heavy_library():
    probe = (
        "import sys\n"
        "from ragqa.faces.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert "ingest" in done.stdout and "search" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_real_environment_wins_over_dotenv(tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("RAGQA_COLLECTION=from_file\nRAGQA_CHUNK_TOKENS=120\n", encoding="utf-8")
    settings = load_settings({"RAGQA_ENV_FILE": str(env_file), "RAGQA_HOME": str(tmp_path),
                              "RAGQA_COLLECTION": "from_env"})
    assert settings.collection == "from_env" and settings.chunk_tokens == 120


def test_bad_setting_is_a_usage_error(ragqa):
    result = ragqa("search", "x", RAGQA_EMBED_PROVIDER="bogus")
    assert result.exit_code == 2
    assert result.stderr == ("ragqa: error: RAGQA_EMBED_PROVIDER must be one of local, openai, "
                             "not 'bogus'\n")


def test_doctor_reports_checks_and_masks_secrets(seeded):
    canary = "sk-canary-0123456789abcdef-SECRET"
    token = "chroma-token-canary-XYZ987"
    result = seeded("doctor", "--json", OPENAI_API_KEY=canary, RAGQA_LLM="none",
                    RAGQA_CHROMA_TOKEN=token)
    assert canary not in result.output and token not in result.output
    payload = json.loads(result.stdout)
    assert payload["settings"]["openai_api_key"] == "sk-…CRET"
    checks = {c["check"]: c for c in payload["checks"]}
    assert checks["embedder"]["ok"] and "384 dimensions" in checks["embedder"]["detail"]
    assert checks["store"]["ok"] and "collection 'default'" in checks["store"]["detail"]
    assert result.exit_code == 0
    text = seeded("doctor", OPENAI_API_KEY=canary, RAGQA_LLM="none")
    assert canary not in text.output and "ok" in text.stdout


def test_version():
    done = subprocess.run([sys.executable, "-m", "ragqa", "--version"], capture_output=True,
                          text=True, check=True)
    assert done.stdout.startswith("ragqa ")


def test_ids_with_markup_characters_render(ragqa, tmp_path):
    source = tmp_path / "m.jsonl"
    source.write_text(json.dumps({"id": "x2[/]", "title": "[bold]Odd[/bold] title",
                                  "abstract": "An abstract about [red]markup[/red] in ids."})
                      + "\n", encoding="utf-8")
    assert ragqa("ingest", str(source), "-c", "odd", "--quiet").exit_code == 0
    listing = ragqa("papers", "-c", "odd")
    assert listing.exit_code == 0 and "x2[/]" in listing.stdout
    shown = ragqa("show", "x2[/]", "-c", "odd")
    assert shown.exit_code == 0 and "[bold]Odd[/bold] title" in shown.stdout


def test_damaged_session_file_is_a_one_line_error(ragqa, home):
    (home / "chats").mkdir(parents=True)
    (home / "chats" / "broken.json").write_text('{"session_id": "x"', encoding="utf-8")
    listed = ragqa("chat", "--list", "--json")
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []
    resumed = ragqa("chat", "--resume", "broken", input="hello\n")
    assert resumed.exit_code == 2 and "is damaged" in resumed.stderr
    assert "Traceback" not in resumed.output


def test_non_finite_numbers_are_rejected(ragqa):
    result = ragqa("search", "x", RAGQA_LOCK_TIMEOUT="nan")
    assert result.exit_code == 2 and "RAGQA_LOCK_TIMEOUT" in result.stderr


@pytest.mark.server
def test_openai_compatible_embedding_provider(ragqa, llm_server):
    env = {"RAGQA_EMBED_PROVIDER": "openai", "RAGQA_EMBED_BASE_URL": llm_server.url,
           "RAGQA_EMBED_MODEL": "loopback-embed", "RAGQA_EMBED_API_KEY": "sk-embed-canary-42"}
    ingested = ragqa("ingest", "--seeds", "--quiet", "--json", "-c", "remote", **env)
    assert ingested.exit_code == 0, ingested.output
    assert json.loads(ingested.stdout)["papers_total"] == 29
    calls = [r for r in llm_server.requests if r["path"].endswith("/embeddings")]
    assert calls and all(r["body"]["model"] == "loopback-embed" for r in calls)
    assert max(len(r["body"]["input"]) for r in calls) <= 32  # batched
    assert calls[0]["headers"]["Authorization"] == "Bearer sk-embed-canary-42"
    assert ragqa("search", "speech", "-c", "remote", "--json", **env).exit_code == 0
    other = ragqa("search", "speech", "-c", "remote")  # the local embedder: another model
    assert other.exit_code == 2 and "ragqa ingest --rebuild" in other.stderr
    assert "sk-embed-canary-42" not in other.output
