"""Ingest and search against a real `chroma run` server on 127.0.0.1, started by the test."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import FULL_DUPLEX
from .helpers.processes import _chroma_binary, _free_port, _wait_until_up

pytestmark = pytest.mark.server


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[int]:
    port = _free_port()
    log = (tmp_path / "chroma.log").open("w")
    process = subprocess.Popen(
        [_chroma_binary(), "run", "--path", str(tmp_path / "server-data"), "--host",
         "127.0.0.1", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        _wait_until_up(port, process)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def test_ingest_and_search_through_a_chroma_server(ragqa, home, chroma_server, tmp_path):
    env = {"RAGQA_CHROMA_HOST": "127.0.0.1", "RAGQA_CHROMA_PORT": str(chroma_server)}
    first = ragqa("ingest", "--seeds", "--quiet", "--json", **env)
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["added"] == 29
    assert not (home / "chroma").exists(), "the embedded store must not be used"
    again = json.loads(ragqa("ingest", "--seeds", "--quiet", "--json", **env).stdout)
    assert again["unchanged"] == 29 and again["chunks"] == 0

    found = json.loads(ragqa("search", FULL_DUPLEX, "--json", **env).stdout)["results"]
    assert {r["title"] for r in found[:2]} == {"Moshi-RAG", "τ-Voice"}

    # A teammate on another machine (another data folder) searches the same server: the BM25
    # index is derived from what the server holds.
    teammate = ragqa("search", FULL_DUPLEX, "--json", RAGQA_HOME=str(tmp_path / "other"), **env)
    assert teammate.exit_code == 0, teammate.output
    assert "ingesting" not in teammate.stderr
    assert [r["paper_id"] for r in json.loads(teammate.stdout)["results"]] == [
        r["paper_id"] for r in found]


@pytest.mark.parametrize("command", [["search", FULL_DUPLEX], ["ingest", "--seeds", "--quiet"]],
                         ids=["search", "ingest"])
def test_server_down_is_a_clear_runtime_error(ragqa, command):
    result = ragqa(*command, RAGQA_CHROMA_HOST="127.0.0.1", RAGQA_CHROMA_PORT=str(_free_port()),
                   RAGQA_CHROMA_TOKEN="tok-secret-1234")
    assert result.exit_code == 1
    assert result.stderr.startswith("ragqa: error: Chroma server at 127.0.0.1:")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert "tok-secret-1234" not in result.output
