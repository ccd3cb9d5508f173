"""The scale-out embedding provider (RAGQA_EMBED_PROVIDER=openai) against the loopback server:
batching, bounded concurrency, retries with backoff and Retry-After, one-line failures without
the key, and an ingest that resumes where a failure or a kill stopped it."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

import numpy as np
import pytest

from ragqa.index.ingest import PAPERS_PER_BATCH
from ragqa.models.encoders import OpenAICompatibleEmbedder, _retry_after

from .helpers.corpus import _corpus
from .helpers.ingest import KEY, _env
from .helpers.llm_server import Reply

pytestmark = pytest.mark.server

REPO = Path(__file__).resolve().parents[1]


def _ingest(ragqa, corpus: Path, server, **extra: str):
    return ragqa("ingest", str(corpus), "--quiet", "--json", "-c", "remote",
                 **_env(server, **extra))


def _one_line_failure(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and KEY not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def fast_backoff(monkeypatch):
    """Backoff from 0.05 s instead of 0.5 s: the same doubling, a faster test."""
    monkeypatch.setattr(OpenAICompatibleEmbedder, "BACKOFF_BASE", 0.05)


# ---------------------------------------------------------------- batching and concurrency


@pytest.mark.parametrize("concurrency", [1, 3])
def test_ingest_batches_and_bounds_concurrency(ragqa, llm_server, tmp_path, concurrency):
    corpus = _corpus(tmp_path / "papers.jsonl", 150)
    llm_server.embed_reply = lambda n, body: Reply(delay=0.05)  # requests overlap if allowed
    result = _ingest(ragqa, corpus, llm_server, RAGQA_EMBED_BATCH_SIZE="8",
                     RAGQA_EMBED_CONCURRENCY=str(concurrency))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["added"] == report["papers_total"] == 150
    sizes = [c.size for c in llm_server.embed_calls]
    assert max(sizes) == 8  # full batches of the setting, never more
    assert sum(sizes) == report["chunks"] == 150  # every chunk sent once
    assert llm_server.max_in_flight <= concurrency
    if concurrency > 1:
        assert llm_server.max_in_flight > 1
    auth = {r["headers"].get("Authorization") for r in llm_server.requests}
    assert auth == {f"Bearer {KEY}"}


def test_requests_carry_32_texts_by_default(ragqa, llm_server, tmp_path):
    """The local embedder's default (one text per run) must not leak into requests."""
    result = _ingest(ragqa, _corpus(tmp_path / "papers.jsonl", 70), llm_server)
    assert result.exit_code == 0, result.output
    assert sorted(c.size for c in llm_server.embed_calls) == [6, 32, 32]

def test_vectors_keep_input_order_when_batches_finish_out_of_order(llm_server):
    rng = random.Random(3)
    llm_server.embed_reply = lambda n, body: Reply(delay=rng.uniform(0, 0.08))
    encoder = OpenAICompatibleEmbedder("m", llm_server.url, KEY, batch_size=3, concurrency=4)
    texts = [f"text {'x' * i}" for i in range(20)]
    vectors = encoder.embed(texts)
    # The loopback vector of a text: (len % 7 + 1, its place in its request + 1, 1), normalised.
    expected = np.array([[len(t) % 7 + 1, i % 3 + 1, 1.0] for i, t in enumerate(texts)])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert encoder.dimension == 3 and llm_server.max_in_flight > 1
    assert [c.size for c in llm_server.embed_calls].count(3) == 6


# ---------------------------------------------------------------- retries


def test_retry_after_is_honoured_then_success(ragqa, seeds_copy, llm_server):
    schedule = {1: Reply(status=429, headers={"Retry-After": "1"}), 2: Reply(status=503)}
    llm_server.embed_reply = lambda n, body: schedule.get(n)
    result = _ingest(ragqa, seeds_copy, llm_server, RAGQA_EMBED_CONCURRENCY="1")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["papers_total"] == 29
    calls = llm_server.embed_calls
    assert [c.status for c in calls[:3]] == [429, 503, 200]
    # Retry-After: 1 waits a second (the backoff alone would wait at most 0.5 s) ...
    assert calls[1].started - calls[0].started >= 0.95
    # ... and without one the second retry backs off 0.5 * 2 s, less up to 25 % jitter.
    assert calls[2].started - calls[1].started >= 0.74
    assert sum(c.size for c in calls if c.status == 200) == json.loads(result.stdout)["chunks"]


def test_backoff_doubles_between_retries(llm_server, fast_backoff):
    llm_server.embed_reply = lambda n, body: Reply(status=500) if n <= 3 else None
    encoder = OpenAICompatibleEmbedder("m", llm_server.url, KEY, retries=3)
    assert encoder.embed(["one text"]).shape == (1, 3)
    starts = [c.started for c in llm_server.embed_calls]
    gaps = np.diff(starts)
    assert len(starts) == 4
    for attempt, gap in enumerate(gaps):  # 0.05 * 2**attempt, less up to 25 % jitter
        assert gap >= 0.05 * 2 ** attempt * 0.75 - 0.005, gaps


def test_persistent_failure_is_one_line_exit_1_without_the_key(ragqa, seeds_copy, llm_server):
    llm_server.embed_reply = lambda n, body: Reply(status=503, headers={"Retry-After": "0.01"})
    result = _ingest(ragqa, seeds_copy, llm_server, RAGQA_EMBED_BATCH_SIZE="8",
                     RAGQA_EMBED_CONCURRENCY="2")
    line = _one_line_failure(result)
    # RAGQA_LLM_RETRIES defaults to 2; the embedder retries at least 3 times: 4 attempts.
    assert "HTTP 503 on all 4 attempts" in line and line.startswith("ragqa: error: ")
    assert result.stdout == ""
    # The first batch to fail for good stops the others: 4 batches were due, at most 2 ran
    # at once, and nothing is sent once the error is known.
    assert 4 <= len(llm_server.embed_calls) <= 2 * 4


def test_the_number_of_retries_follows_the_setting(ragqa, seeds_copy, llm_server):
    llm_server.embed_reply = lambda n, body: Reply(status=502, headers={"Retry-After": "0"})
    result = _ingest(ragqa, seeds_copy, llm_server, RAGQA_LLM_RETRIES="5",
                     RAGQA_EMBED_CONCURRENCY="1")
    assert "HTTP 502 on all 6 attempts" in _one_line_failure(result)
    assert len(llm_server.embed_calls) == 6


def test_a_rate_limit_longer_than_ragqa_waits_fails_at_once(ragqa, seeds_copy, llm_server):
    llm_server.embed_reply = lambda n, body: Reply(status=429, headers={"Retry-After": "3600"})
    started = time.monotonic()
    result = _ingest(ragqa, seeds_copy, llm_server, RAGQA_EMBED_CONCURRENCY="1")
    line = _one_line_failure(result)
    assert time.monotonic() - started < 30
    assert "HTTP 429" in line and "RAGQA_EMBED_CONCURRENCY" in line
    assert len(llm_server.embed_calls) == 1


@pytest.mark.parametrize("reply, words", [
    (Reply(status=400), "HTTP 400"),  # a client error is not retried
    (Reply(status=401), "HTTP 401; check RAGQA_EMBED_API_KEY"),
    (Reply(malformed=True), "not JSON"),
])
def test_bad_answers_fail_at_once(ragqa, seeds_copy, llm_server, reply, words):
    llm_server.embed_reply = lambda n, body: reply
    result = _ingest(ragqa, seeds_copy, llm_server, RAGQA_EMBED_CONCURRENCY="1")
    assert words in _one_line_failure(result)
    assert len(llm_server.embed_calls) == 1


def test_a_server_that_is_down_is_one_line(ragqa, seeds_copy, llm_server, fast_backoff):
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = _ingest(ragqa, seeds_copy, llm_server,
                     RAGQA_EMBED_BASE_URL=f"http://127.0.0.1:{port}/v1")
    assert "cannot connect on all 4 attempts" in _one_line_failure(result)


def test_retry_after_header_forms():
    assert _retry_after({"retry-after": "2"}) == 2.0
    assert _retry_after({"retry-after": "0.25"}) == 0.25
    assert _retry_after({"retry-after-ms": "150", "retry-after": "9"}) == 0.15
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= _retry_after({"retry-after": later}) <= 31
    assert _retry_after({"retry-after": "soon"}) is None and _retry_after({}) is None


def test_credentials_in_the_base_url_stay_out_of_the_embedder_id():
    encoder = OpenAICompatibleEmbedder("m", "http://user:pw-secret@host:8080/v1/?key=k2", KEY)
    assert encoder.embedder_id == "openai:m@http://host:8080/v1"
    assert OpenAICompatibleEmbedder("m", "http://Host:1/v1/", KEY).embedder_id == \
        "openai:m@http://Host:1/v1"  # a plain URL is kept as it was: existing indexes' id


# ---------------------------------------------------------------- resuming

# Ingest embeds and stores PAPERS_PER_BATCH papers at a time; the test corpus holds one such
# batch and part of a second. With one chunk a paper and 16 texts a request, the first batch
# takes FIRST requests; request FIRST + 2 is inside the second one.
PER_REQUEST = 16
FIRST = -(-PAPERS_PER_BATCH // PER_REQUEST)
REST = 86
RESUME_ENV = {"RAGQA_EMBED_BATCH_SIZE": str(PER_REQUEST), "RAGQA_EMBED_CONCURRENCY": "1"}


def _resume_and_count(ragqa, corpus: Path, llm_server) -> None:
    """A re-run embeds exactly the papers that the interrupted run did not store, then a third
    run embeds nothing at all."""
    llm_server.embed_reply = lambda n, body: None
    before = len(llm_server.embed_calls)
    resumed = _ingest(ragqa, corpus, llm_server, **RESUME_ENV)
    assert resumed.exit_code == 0, resumed.output
    report = json.loads(resumed.stdout)
    assert report["unchanged"] == PAPERS_PER_BATCH and report["added"] == REST
    assert report["papers_total"] == PAPERS_PER_BATCH + REST
    assert sum(c.size for c in llm_server.embed_calls[before:]) == REST

    before = len(llm_server.embed_calls)
    again = _ingest(ragqa, corpus, llm_server)
    assert json.loads(again.stdout)["unchanged"] == PAPERS_PER_BATCH + REST
    assert len(llm_server.embed_calls) == before  # nothing left to embed: no request at all


def test_a_rerun_after_a_failure_embeds_only_what_is_missing(ragqa, llm_server, tmp_path):
    corpus = _corpus(tmp_path / "papers.jsonl", PAPERS_PER_BATCH + REST)
    llm_server.embed_reply = lambda n, body: Reply(status=400) if n == FIRST + 2 else None
    failed = _ingest(ragqa, corpus, llm_server, **RESUME_ENV)
    assert "HTTP 400" in _one_line_failure(failed)
    assert len(llm_server.embed_calls) == FIRST + 2
    _resume_and_count(ragqa, corpus, llm_server)


def test_a_rerun_after_kill_9_embeds_only_what_is_missing(ragqa, llm_server, tmp_path, home):
    corpus = _corpus(tmp_path / "papers.jsonl", PAPERS_PER_BATCH + REST)
    stuck, release = threading.Event(), threading.Event()

    def reply(n: int, body: dict) -> Reply | None:
        if n >= FIRST + 2:  # inside the second batch: hang until the test has killed ragqa
            stuck.set()
            release.wait(30)
        return None

    llm_server.embed_reply = reply
    env = {**os.environ, "RAGQA_HOME": str(home), **_env(llm_server), **RESUME_ENV}
    process = subprocess.Popen([sys.executable, "-m", "ragqa", "ingest", str(corpus), "--quiet",
                                "-c", "remote"], env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        assert stuck.wait(120), process.stderr.read() if process.poll() is not None else ""
        process.send_signal(signal.SIGKILL)
        assert process.wait(30) == -signal.SIGKILL
    finally:
        release.set()
        if process.poll() is None:
            process.kill()
        process.stderr.close()
    assert len(llm_server.embed_calls) == FIRST + 2
    _resume_and_count(ragqa, corpus, llm_server)
