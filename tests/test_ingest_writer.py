"""Ingest's writer thread (issue 18): Chroma upserts run while the next batch embeds, and the
BM25 terms are worked out meanwhile. What is stored must not change, nor what a failure leaves.

Real parts throughout: `python -m ragqa ingest` processes, `chroma run` on 127.0.0.1 killed with
SIGKILL, the loopback OpenAI-compatible embedder (tests/helpers/llm_server.py; fast, so that
two batches of papers take seconds), the local embedder for the seeds.
"""

from __future__ import annotations

import filecmp
import json
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

import pytest

from ragqa.config import load_settings
from ragqa.index import lexical
from ragqa.index.ingest import PAPERS_PER_BATCH
from ragqa.index.store import Store, local_dir
from ragqa.models.encoders import LocalMiniLM

from .helpers.corpus import _corpus
from .helpers.ingest import _consistent_paper_ids, _env
from .helpers.processes import PausedIngest, _one_error_line

REST = 40  # papers of the second batch


@pytest.mark.server
def test_a_failed_write_is_one_line_and_the_rerun_writes_only_what_is_missing(
        ragqa, home, tmp_path, restartable_server, llm_server):
    server = restartable_server
    env = {"RAGQA_CHROMA_HOST": "127.0.0.1", "RAGQA_CHROMA_PORT": str(server.port),
           "RAGQA_HOME": str(home), **_env(llm_server)}
    corpus = _corpus(tmp_path / "papers.jsonl", PAPERS_PER_BATCH + REST)

    # Paused in the writer, after the first batch's upsert; the second batch, embedded
    # meanwhile, waits for the writer. The server dies: the writer's failure is the process's.
    paused = PausedIngest(env, "upserted", str(corpus))
    server.kill_9()
    code, stderr = paused.finish()
    assert code == 1, stderr
    assert f"Chroma server at 127.0.0.1:{server.port} failed" in _one_error_line(stderr)

    server.start()
    calls = len(llm_server.embed_calls)
    again = ragqa("ingest", str(corpus), "--quiet", "--json", **env)
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert (report["unchanged"], report["added"]) == (PAPERS_PER_BATCH, REST)
    assert sum(c.size for c in llm_server.embed_calls[calls:]) == REST
    assert len(_consistent_paper_ids(home, port=server.port)) == PAPERS_PER_BATCH + REST


def _rows(database: Path) -> list[tuple]:
    with closing(sqlite3.connect(database)) as db:
        return db.execute("SELECT * FROM papers ORDER BY idx").fetchall()


def test_the_snapshot_ingest_writes_is_the_one_chroma_alone_gives(seeded, home):
    """The seeded home's snapshot was written by `ragqa ingest --seeds`, with the terms the
    writer worked out while embedding; one written from Chroma alone must be the same, byte for
    byte."""
    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    folder = local_dir(settings, "default")
    ingested = folder / lexical.read_current(folder)["dir"]
    store = Store(settings, "default", LocalMiniLM())
    papers = list(store.iter_papers())
    assert len(papers) == 29
    with tempfile.TemporaryDirectory() as tmp:
        fresh = lexical.write_snapshot(Path(tmp), papers, "0" * 64)
        assert _rows(fresh / "papers.sqlite") == _rows(ingested / "papers.sqlite")
        assert _same_bm25(fresh, ingested)


def _same_bm25(a: Path, b: Path) -> bool:
    names = sorted(p.name for p in (b / "bm25").iterdir())
    _, mismatch, errors = filecmp.cmpfiles(a / "bm25", b / "bm25", names, shallow=False)
    return names == sorted(p.name for p in (a / "bm25").iterdir()) and not mismatch + errors


def test_known_terms_are_used_only_for_the_same_document(tmp_path):
    """Terms worked out for another text of a paper (one edited since) are not used."""
    from ragqa.sources import read_sources

    from .conftest import SEEDS

    papers = read_sources([SEEDS]).papers[:6]
    without = lexical.write_snapshot(tmp_path / "plain", papers, "0" * 64)
    known = {p.paper_id: lexical.document_terms(p) for p in papers}
    assert _same_bm25(lexical.write_snapshot(tmp_path / "known", papers, "0" * 64,
                                             known_terms=known), without)
    known[papers[1].paper_id] = lexical.document_terms(papers[2])  # another text's terms
    assert _same_bm25(lexical.write_snapshot(tmp_path / "stale", papers, "0" * 64,
                                             known_terms=known), without)
    papers_without_1 = [p for p in papers if p is not papers[1]]
    other = lexical.write_snapshot(tmp_path / "other", papers_without_1, "0" * 64)
    assert not _same_bm25(other, without)  # the comparison can tell snapshots apart
