"""Faults (issue 7): a failing LLM endpoint (case 4), hostile input files and questions, terminal
escape sequences in abstracts (case 6), and secrets that no command may print (case 7).

Already covered elsewhere, not repeated here:
- LLM 500/401/429/malformed/timeout with retries off: test_ask.py
  test_llm_failures_are_one_clear_line_and_exit_1; a stream cut mid-way through the API:
  test_stream_cut_midway_is_an_error_not_a_partial_answer; connection refused with retries off:
  test_connection_refused_is_exit_1.
- Empty, whitespace-only, binary and Latin-1 seed files, malformed JSON lines, bad years:
  test_corpus.py test_bad_input_exits_2_with_one_line_and_writes_nothing; UTF-16 with BOM, CRLF
  and CR: test_boms_utf16_and_line_endings_read_like_plain_utf8 and
  test_crlf_seed_files_parse_like_the_originals; a duplicate id in a second file:
  test_a_bad_second_file_fails_before_the_good_first_is_written; markup in ids and titles:
  test_cli.py test_ids_with_markup_characters_render.
"""

from __future__ import annotations

import json
import logging
import random
import re
import shutil
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ragqa.errors import CorpusError
from ragqa.faces.cli import app
from ragqa.sources import read_sources
from ragqa.sources.paper import text_id

from .conftest import FULL_DUPLEX, Ragqa
from .helpers.corpus import (
    ABSTRACT_1,
    ABSTRACT_2,
    ABSTRACT_3,
    _assert_failed_cleanly,
    _jsonl,
    _write,
)
from .helpers.llm_server import Reply

KEY = "sk-faults-canary-3f9a1c7e5b2d4680aa"
TOKEN = "chroma-faults-canary-77c1e0d9b3"
MOSHI_ID = "7a6f3d2432b8bff8"  # Moshi-RAG in the seeds


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _llm(server, **extra: str) -> dict[str, str]:
    """The loopback endpoint with ragqa's default retries (RAGQA_LLM_RETRIES unset: 2)."""
    return {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": KEY,
            "RAGQA_LLM_MODEL": "loopback-model", "RAGQA_SCREEN": "off", **extra}


def _one_error_line(result, contains: str) -> str:
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragqa: error: "), result.stderr
    assert contains in lines[0], lines[0]
    assert "Traceback" not in result.output
    return lines[0]


def _no_answer_shown(result) -> None:
    """Nothing on stdout reads as an answer: no header, no references, no cited sentence."""
    for mark in ("Written answer", "References", "[1]"):
        assert mark not in result.stdout, result.stdout


@contextmanager
def _no_log_capture() -> Iterator[None]:
    """pytest hands log records to its own handler; the real `ragqa` process has none, so there
    Python's last-resort handler prints every WARNING on stderr. Tests of what stderr shows run
    the command under this, as the process would."""
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()
    try:
        yield
    finally:
        root.handlers[:] = saved


def _run(ragqa, *args: str, input: str | None = None, **env: str):  # noqa: A002
    with _no_log_capture():
        return ragqa(*args, input=input, **env)


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def too_slow(*_args):
        raise TimeoutError(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ================================================================ case 4: the LLM endpoint

# FORCE_COLOR makes rich treat the test's stdout as a terminal, so `ask` streams tokens.
MODES = [pytest.param({}, ("--no-stream",), id="whole"),
         pytest.param({"FORCE_COLOR": "1"}, (), id="streamed")]


def _rate_limited_first(times: list[float], answer: str = "Moshi-RAG does full-duplex "
                        "speech [1].") -> Callable[[dict], Reply]:
    def reply(body: dict) -> Reply:
        times.append(time.monotonic())
        if len(times) == 1:
            return Reply(status=429, headers={"Retry-After": "1"})
        return Reply(answer)

    return reply


@pytest.mark.server
@pytest.mark.parametrize(("env", "args"), MODES)
def test_429_with_retry_after_once_then_the_answer_arrives(seeded, llm_server, env, args):
    times: list[float] = []
    llm_server.reply = _rate_limited_first(times)
    result = _run(seeded, "ask", FULL_DUPLEX, *args, **_llm(llm_server, **env))
    assert result.exit_code == 0, result.output
    assert len(times) == 2 and times[1] - times[0] >= 0.9  # Retry-After: 1 was honoured
    assert llm_server.requests[-1]["body"].get("stream", False) is (not args)
    assert "Written answer by loopback-model" in result.stdout
    assert "Moshi-RAG does full-duplex speech" in result.stdout
    assert result.stderr == ""  # no retry chatter


@pytest.mark.server
def test_429_once_through_the_api_streams_the_whole_answer(seeded, llm_server, home):
    from ragqa.answering.answer import answer_question
    from ragqa.config import load_settings
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.models.llm import make_llm
    from ragqa.retrieval.retriever import Retriever

    times: list[float] = []
    llm_server.reply = _rate_limited_first(times)
    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/x",
                              **_llm(llm_server)})
    retriever = Retriever(Store(settings, "default", make_encoder(settings)))
    tokens: list[str] = []
    answer = answer_question(retriever, FULL_DUPLEX, llm=make_llm(settings),
                             on_token=tokens.append)
    assert len(times) == 2 and "".join(tokens).strip() == "Moshi-RAG does full-duplex speech [1]."
    assert answer.text.split("\n\nAlso relevant:")[0] == "Moshi-RAG does full-duplex speech [1]."


@pytest.mark.server
@pytest.mark.parametrize(("env", "args"), MODES)
def test_always_429_is_one_line_and_exit_1_within_bounded_time(seeded, llm_server, env, args):
    """Fails without the llm.py fix: llama-index's "Retrying ... as it raised RateLimitError"
    warning was a second line on stderr."""
    llm_server.reply = lambda body: Reply(status=429, headers={"Retry-After": "1"})
    started = time.monotonic()
    result = _run(seeded, "ask", FULL_DUPLEX, *args, **_llm(llm_server, **env))
    elapsed = time.monotonic() - started
    _one_error_line(result, "is rate limiting (HTTP 429) and retries ran out")
    _no_answer_shown(result)
    # RAGQA_LLM_RETRIES=2: exactly 3 tries (one retry layer, not llama-index's on top of the
    # openai client's), each after the server's Retry-After (1 s).
    assert len(llm_server.requests) == 3
    assert elapsed < 30, elapsed


def _always(reply: Reply) -> Callable[[dict], Reply]:
    return lambda body: reply


_FAILURES = [
    pytest.param({"OPENAI_BASE_URL": "refused"}, None, "cannot be reached", id="refused"),
    pytest.param({}, Reply(status=500), "failed with HTTP 500", id="http-500"),
    pytest.param({}, Reply(status=503, headers={"Retry-After": "0"}), "failed with HTTP 503",
                 id="http-503"),
    pytest.param({"RAGQA_LLM_FIRST_TOKEN_TIMEOUT": "1"}, Reply("late", delay=2.5),
                 "did not answer within 1 s", id="slower-than-timeout"),
    pytest.param({}, Reply(malformed=True), "cannot read", id="malformed-json"),
    pytest.param({}, Reply("Moshi-RAG does full-duplex speech [1]. " * 20, cut_body=True),
                 "cannot be reached", id="body-cut-midway"),
]


@pytest.mark.server
@pytest.mark.parametrize(("extra", "reply", "message"), _FAILURES)
def test_endpoint_failures_with_default_retries_are_one_line(seeded, llm_server, extra, reply,
                                                             message):
    """The test_ask.py failure tests run with RAGQA_LLM_RETRIES=0; with the default retries the
    retry layer must stay silent and the wait bounded."""
    if reply is not None:
        llm_server.reply = _always(reply)
    env = _llm(llm_server, **extra)
    if extra.get("OPENAI_BASE_URL") == "refused":
        env["OPENAI_BASE_URL"] = f"http://127.0.0.1:{_free_port()}/v1"
    started = time.monotonic()
    result = _run(seeded, "ask", FULL_DUPLEX, "--no-stream", **env)
    _one_error_line(result, message)
    assert result.stdout == ""
    assert KEY not in result.output
    assert time.monotonic() - started < 45


@pytest.mark.server
def test_stream_cut_midway_through_the_cli_leaves_no_answer_on_screen(seeded, llm_server):
    llm_server.reply = lambda body: Reply("Moshi-RAG does full-duplex speech [1]. " * 5,
                                          cut_after=4)
    result = _run(seeded, "ask", FULL_DUPLEX, **_llm(llm_server, FORCE_COLOR="1"))
    _one_error_line(result, "broke off the answer mid-stream")
    assert llm_server.requests[-1]["body"]["stream"] is True
    _no_answer_shown(result)
    # The streamed tokens were a transient display: erased before the error, never left standing.
    assert result.stdout == "" or result.stdout.endswith("\x1b[2K"), repr(result.stdout[-80:])


@pytest.mark.server
@pytest.mark.parametrize(("env", "args"), MODES)
@pytest.mark.parametrize("reason", ["length", "stop"])
def test_an_answer_cut_at_the_output_limit_says_so(seeded, llm_server, env, args, reason):
    llm_server.reply = lambda body: Reply("Moshi-RAG does full-duplex speech [1] and",
                                          finish_reason=reason)
    result = _run(seeded, "ask", FULL_DUPLEX, *args, **_llm(llm_server, **env))
    assert result.exit_code == 0, result.output
    assert "Moshi-RAG does full-duplex speech" in result.stdout
    assert ("output limit" in result.stdout) is (reason == "length")
    as_json = _run(seeded, "ask", FULL_DUPLEX, "--json", **_llm(llm_server))
    notice = json.loads(as_json.stdout)["notice"]
    assert ("output limit" in notice) is (reason == "length"), notice


# ================================================================ case 6: input files

_LATIN1 = "Schrödinger café".encode("latin-1")


@pytest.mark.parametrize(("name", "content", "line"), [
    ("l.jsonl", _jsonl({"id": "a", "abstract": ABSTRACT_1}).encode() + b'{"id": "b", '
     b'"abstract": "' + _LATIN1 + b'"}\n', 2),
    ("l.csv", b'id,abstract\na,"' + ABSTRACT_1.encode() + b'"\nb,"' + _LATIN1 + b'"\n', 3),
])
def test_latin1_jsonl_and_csv_name_the_line(tmp_path, name, content, line):
    with pytest.raises(CorpusError) as caught:
        read_sources([_write(tmp_path / name, content)])
    assert caught.value.line == line and "UTF-8" in caught.value.message


def test_utf16_without_bom_is_binary_not_a_crash(tmp_path):
    path = _write(tmp_path / "u.txt", (ABSTRACT_1 + "\n").encode("utf-16-le"))
    with pytest.raises(CorpusError, match="binary"):
        read_sources([path])


def _big_abstract(size: int, seed: int = 0) -> str:
    """`size` characters of sentences, many saying "we propose" and naming nothing: the worst
    case for deriving a title."""
    sentences = [ABSTRACT_3, "We propose a method for things.", "We present results on 278 "
                 "tasks, up 12.5% [3].", "This paper introduces the idea that speech matters."]
    rng = random.Random(seed)
    parts, total = [], 0
    while total < size:
        parts.append(rng.choice(sentences))
        total += len(parts[-1]) + 1
    return " ".join(parts)


def test_a_10_mb_abstract_parses_quickly(tmp_path):
    """Fails without the corpus.py fix: derive_title sliced the text to its end after every
    "we propose", quadratic in its length (about 5 s at 1.6 MB, minutes at 10 MB)."""
    from ragqa.sources.paper import derive_title

    text = _big_abstract(10 * 1024 * 1024)
    with _time_limit(20):
        title = derive_title(text)
    assert 0 < len(title) < 120
    # Such an abstract is no longer read whole (issue 49): a line over 1 MiB is bad input.
    path = _write(tmp_path / "big.txt", "ICML 2026 Papers\n\n" + text + "\n")
    with _time_limit(20), pytest.raises(CorpusError, match="a line over 1 MiB"):
        read_sources([path])


def test_chunk_metadata_of_a_long_paper_is_linear():
    """Fails without the corpus.py fix: `Paper.content_hash` (JSON of the whole paper, then
    SHA-256) was recomputed for each chunk's metadata, so ingest was quadratic in a paper's
    length: about 20 s here for the 2,000 chunks of a 2 MB abstract, 15+ minutes at 10 MB."""
    from ragqa.index.store import chunk_metadata
    from ragqa.sources.paper import Paper

    paper = Paper("big", "Big", _big_abstract(2 * 1024 * 1024), "big.txt#1")
    with _time_limit(4):
        hashes = {chunk_metadata(paper, i, 2000)["content_hash"] for i in range(2000)}
    assert len(hashes) == 1


def _ingest_big(ragqa, server, tmp_path, size: int) -> tuple[str, object]:
    """Ingest one abstract of `size` characters with the loopback embedder (the local one needs
    minutes for megabytes; figures in the report)."""
    text = _big_abstract(size, seed=1)
    path = _write(tmp_path / "big.txt", text + "\n")
    env = {"RAGQA_EMBED_PROVIDER": "openai", "RAGQA_EMBED_BASE_URL": server.url,
           "RAGQA_EMBED_MODEL": "loopback-embed"}
    return text, ragqa("ingest", str(path), "--quiet", "--json", **env), env


def _check_big_ingested(ragqa, text: str, result, env: dict, chunks: int) -> None:
    """The abstract kept, cut at MAX_TEXT_CHARS (issue 49: a text is bounded), in chunks."""
    from ragqa.sources.paper import MAX_TEXT_CHARS, cut_text

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["added"] == 1 and report["chunks"] >= chunks
    assert report["tallies"] == {"cut": 1}
    kept = cut_text(text, MAX_TEXT_CHARS)
    shown = ragqa("show", text_id(kept), "--json", **env)
    assert shown.exit_code == 0 and json.loads(shown.stdout)["text"] == kept
    found = ragqa("search", "surrogate gradients flat minima", "--json", **env)
    assert found.exit_code == 0 and json.loads(found.stdout)["total_papers"] == 1


@pytest.mark.server
def test_a_half_megabyte_abstract_is_cut_and_ingested_in_chunks(ragqa, llm_server, tmp_path):
    text, result, env = _ingest_big(ragqa, llm_server, tmp_path, 512 * 1024)
    _check_big_ingested(ragqa, text, result, env, chunks=60)


@pytest.mark.server
def test_a_10_mb_abstract_is_one_line_of_bad_input(ragqa, llm_server, tmp_path):
    _, result, _ = _ingest_big(ragqa, llm_server, tmp_path, 10 * 1024 * 1024)
    assert result.exit_code == 2 and "a line over 1 MiB" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["seeds", "jsonl"])
def test_100000_abstracts_in_one_file_parse(tmp_path, kind):
    n = 100_000
    rng = random.Random(7)
    words = (ABSTRACT_1 + " " + ABSTRACT_2 + " " + ABSTRACT_3).split()
    bodies = [f"Paper {i}: " + " ".join(rng.choices(words, k=25)) + "." for i in range(n)]
    if kind == "seeds":
        path = _write(tmp_path / "many.txt", "ICML 2026 Papers\n\n" + "\n\n".join(bodies) + "\n")
    else:
        path = _write(tmp_path / "many.jsonl", "".join(
            json.dumps({"abstract": b, "year": 2026}) + "\n" for b in bodies))
    started = time.monotonic()
    papers = read_sources([path]).papers
    elapsed = time.monotonic() - started
    assert len(papers) == n and len({p.paper_id for p in papers}) == n
    assert papers[-1].source == f"{path.name}#{n}" and papers[-1].text == bodies[-1]
    assert elapsed < 120, elapsed


_WRONG_TYPES = [
    # (record, what the one error line must say)
    pytest.param({"authors": [{"name": ["Ada"]}]}, "authors", id="author-name-list"),
    pytest.param({"authors": [["Ada", "Alan"]]}, "authors", id="authors-nested-list"),
    pytest.param({"authors": 1815}, "authors", id="authors-number"),
    pytest.param({"authors": {"name": "Ada"}}, "authors", id="authors-object"),
    pytest.param({"title": ["A", "title"]}, "title", id="title-list"),
    pytest.param({"title": {"en": "A title"}}, "title", id="title-object"),
    pytest.param({"abstract": ["A list", "of sentences"]}, "abstract", id="abstract-list"),
    pytest.param({"abstract": True}, "abstract", id="abstract-bool"),
    pytest.param({"abstract": {"text": ABSTRACT_2}}, "abstract", id="abstract-object"),
    pytest.param({"id": ["x"]}, "id", id="id-list"),
    pytest.param({"id": False}, "id", id="id-bool"),
    pytest.param({"id": {"x": 1}}, "id", id="id-object"),
    pytest.param({"venue": ["ICML"]}, "venue", id="venue-list"),
    pytest.param({"url": {"href": "x"}}, "url", id="url-object"),
    pytest.param({"year": 10**20}, "year", id="year-huge-int"),
    pytest.param({"year": 1e20}, "year", id="year-huge-float"),
    pytest.param({"year": -5}, "year", id="year-negative"),
    pytest.param({"year": "99999"}, "year", id="year-five-digits"),
]


@pytest.mark.parametrize(("fields", "what"), _WRONG_TYPES)
def test_jsonl_fields_of_the_wrong_type_exit_2(ragqa, home, tmp_path, fields, what):
    """Before the corpus.py fix, {"name": ["Ada"]} crashed with AttributeError (an "internal
    error", exit 1) and years like 1e20 were stored, then printed as floats."""
    record = {"id": "bad", "abstract": ABSTRACT_2, **fields}
    path = _write(tmp_path / "types.jsonl", _jsonl({"id": "ok", "abstract": ABSTRACT_1}, record))
    result = ragqa("ingest", str(path), "--quiet")
    _assert_failed_cleanly(result, home, "types.jsonl:2")
    assert what in result.stderr


@pytest.mark.parametrize(("line", "what"), [
    pytest.param('{"id": "bad", "abstract": "%s", "score": NaN}', "NaN", id="nan"),
    pytest.param('{"id": "bad", "abstract": "%s", "score": -Infinity}', "Infinity", id="inf"),
    pytest.param('{"id": 1' + "0" * 5000 + ', "abstract": "%s"}', "digits", id="5000-digits"),
    pytest.param('{"abstract": "%s", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
                 "nested too deeply", id="nested-100000-deep"),
])
def test_json_lines_python_accepts_but_json_does_not_exit_2(ragqa, home, tmp_path, line, what):
    """Before the corpus.py fix: NaN/Infinity were kept (and `papers --json` printed invalid
    JSON); a 5,000-digit number and deep nesting were internal errors (exit 1)."""
    path = _write(tmp_path / "odd.jsonl", _jsonl({"id": "ok", "abstract": ABSTRACT_1})
                  + (line % ABSTRACT_2) + "\n")
    result = ragqa("ingest", str(path), "--quiet")
    _assert_failed_cleanly(result, home, "odd.jsonl:2")
    assert what in result.stderr


def test_authors_lists_skip_nulls_and_keep_numbers_as_text(tmp_path):
    path = _write(tmp_path / "a.jsonl", _jsonl(
        {"id": "a", "abstract": ABSTRACT_1, "authors": [{"name": "Ada"}, None, {"name": None},
                                                        "  ", "Alan", {"name": 42}]}))
    assert read_sources([path]).papers[0].authors == "Ada; Alan; 42"


@pytest.mark.parametrize(("first", "second", "where"), [
    pytest.param(("a.txt", f"{ABSTRACT_1}\n\n{ABSTRACT_2}\n"),
                 ("b.jsonl", _jsonl({"abstract": "  " + ABSTRACT_2.upper() + "  "})),
                 "b.jsonl:1", id="same-text-seeds-then-jsonl"),
    pytest.param(("a.csv", f'id,abstract\nx-1,"{ABSTRACT_1}"\n'),
                 ("b.jsonl", _jsonl({"_id": "x-1", "abstract": ABSTRACT_3})),
                 "b.jsonl:1", id="same-id-csv-then-jsonl"),
    pytest.param(("a.jsonl", _jsonl({"id": "x", "abstract": ABSTRACT_1})),
                 ("b.csv", f'id,abstract\ny,"{ABSTRACT_2}"\nx,"{ABSTRACT_3}"\n'),
                 "b.csv:3", id="same-id-jsonl-then-csv"),
])
def test_duplicate_ids_across_files_and_formats_exit_2(ragqa, home, tmp_path, first, second,
                                                       where):
    paths = [_write(tmp_path / name, content) for name, content in (first, second)]
    result = ragqa("ingest", *map(str, paths), "--quiet")
    _assert_failed_cleanly(result, home, where)
    assert "duplicate paper id" in result.stderr


ODD_IDS = ["a/b/../c", "x", "x::0", "x::1", "::", "über-ü", "論文-42", "with space",
           "%2F..%2F", "'quote\"", "dollar$^{2}", "🙂", "L" * 5000]


def test_ids_with_odd_characters_round_trip(ragqa, tmp_path):
    long_x = " ".join([ABSTRACT_1, ABSTRACT_2, ABSTRACT_3] * 12)  # several chunks: x::0, x::1
    records = [{"id": pid, "title": f"Paper {i}",
                "abstract": long_x if pid == "x" else f"{ABSTRACT_2} Variant {i}."}
               for i, pid in enumerate(ODD_IDS)]
    path = _write(tmp_path / "odd.jsonl", _jsonl(*records))
    ingested = ragqa("ingest", str(path), "--quiet", "--json")
    assert ingested.exit_code == 0, ingested.output
    assert json.loads(ingested.stdout)["chunks"] > len(ODD_IDS)  # "x" is several chunks
    listing = json.loads(ragqa("papers", "--json").stdout)
    assert sorted(p["paper_id"] for p in listing["papers"]) == sorted(ODD_IDS)
    for record in records:
        shown = ragqa("show", record["id"], "--json")
        assert shown.exit_code == 0, (record["id"][:40], shown.output)
        assert json.loads(shown.stdout)["text"] == record["abstract"]
    assert ragqa("show", "L" * 4000).exit_code == 0  # a unique prefix of the long id
    text = ragqa("show", "a/b/../c")
    assert text.exit_code == 0 and "a/b/../c" in text.stdout
    again = json.loads(ragqa("ingest", str(path), "--quiet", "--json").stdout)
    assert (again["unchanged"], again["added"], again["chunks"]) == (len(ODD_IDS), 0, 0)


# ================================================================ case 6: questions

CONTROLS = "\x1b[2J\x1b[H\x07\r\x9b31m\u202e\x08\x00"


@pytest.mark.parametrize("command", ["ask", "search"])
@pytest.mark.parametrize("question", ["", "   ", "\t\n"])
def test_empty_question_is_exit_2(seeded, command, question):
    result = seeded(command, question)
    assert result.exit_code == 2, result.output
    assert result.stderr == "ragqa: error: the question is empty\n"


@pytest.mark.parametrize("command", ["ask", "search"])
def test_a_100000_character_question_is_answered(seeded, command):
    rng = random.Random(3)
    words = ["full-duplex", "speech", "agents", "listen", "talk", "retrieval", "tensor"]
    question = " ".join(rng.choice(words) for _ in range(20_000))[:100_000]
    assert len(question) == 100_000
    started = time.monotonic()
    result = seeded(command, question, "--json")
    assert result.exit_code == 0, result.output[:500]
    assert time.monotonic() - started < 60
    payload = json.loads(result.stdout)
    assert payload["total_papers"] == 29


@pytest.mark.parametrize("command", ["ask", "search"])
def test_control_characters_in_a_question_never_reach_the_terminal(seeded, command):
    question = f"Which papers do {CONTROLS}full-duplex speech?{CONTROLS}"
    result = seeded(command, question)
    assert result.exit_code == 0, result.output
    assert "full-duplex speech" in result.stdout
    _assert_inert(result.stdout + result.stderr)
    as_json = seeded(command, question, "--json")
    # What is echoed (and searched) is the question without the escape sequences.
    assert json.loads(as_json.stdout)["question" if command == "ask" else "query"] == (
        "Which papers do full-duplex speech?")
    _assert_inert(as_json.stdout)


# ================================================================ case 6: escape sequences

CLEAR = "\x1b[2J\x1b[H"
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\"
OSC52 = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"
C1_CSI = "\x9b2J\x9b31m"
EVIL = f"{CLEAR}{OSC8}{OSC52}\rOVERWRITE{C1_CSI}\u202eevil\u202c"
# What a terminal would act on: ESC, BEL, CR, backspace, the C1 range (CSI is U+009B), bidi
# overrides. Plain "\n" and "\t" are fine.
_ACTIVE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _assert_inert(output: str) -> None:
    found = _ACTIVE.findall(output)
    assert not found, f"raw control characters in the output: {sorted(set(found))!r}"


@pytest.fixture(scope="module")
def _evil_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder holding the seeds and papers whose titles and abstracts carry terminal
    escape sequences: one JSONL record with a real title, one seeds-style abstract (derived
    title). Built once for the module (embedding takes seconds)."""
    folder = tmp_path_factory.mktemp("evil")
    records = folder / "evil.jsonl"
    records.write_text(_jsonl({
        "id": "evil-1", "title": f"Full-duplex{EVIL} speech agents",
        "abstract": f"We study full-duplex speech agents{EVIL} that listen and speak at once. "
                    f"Full-duplex{EVIL} speech dialogue is evaluated on new benchmarks.",
        "authors": f"Mallory{EVIL}", "venue": f"ICML{C1_CSI}", "url": f"https://x/{OSC52}"}),
        encoding="utf-8")
    seeds = folder / "evil.txt"
    seeds.write_text(f"ICML 2026 Papers\n\nIn this work we propose {CLEAR}EvilNet{C1_CSI}, a "
                     f"full-duplex speech model{OSC8} that talks over you.{EVIL}\n",
                     encoding="utf-8")
    template = folder / "home"
    result = Ragqa({"RAGQA_HOME": str(template)})("ingest", "--seeds", str(records), str(seeds),
                                                  "--quiet")
    assert result.exit_code == 0, result.output
    _assert_inert(result.stdout + result.stderr)
    return template


@pytest.fixture
def evil(_evil_template: Path, home: Path, ragqa):
    """`ragqa` over a private copy of the escape-sequence collection."""
    shutil.copytree(_evil_template, home)
    return ragqa


EVIL_COMMANDS = [
    ("search", FULL_DUPLEX), ("search", "full-duplex speech", "--no-cut", "-k", "40"),
    ("ask", FULL_DUPLEX), ("ask", "What do full-duplex speech agents do?"),
    ("show", "evil-1"), ("papers",), ("papers", "--full"),
    ("summarize", "full-duplex speech"), ("summarize", "--all"),
]


@pytest.mark.parametrize("args", EVIL_COMMANDS, ids=" ".join)
def test_escape_sequences_in_abstracts_are_neutralised(evil, args):
    result = evil(*args)
    assert result.exit_code == 0, result.output
    _assert_inert(result.stdout + result.stderr)
    assert "OVERWRITE" in result.stdout or args[0] == "papers"  # the text itself is still there


@pytest.mark.parametrize("args", EVIL_COMMANDS, ids=" ".join)
def test_escape_sequences_in_json_output_are_escaped(evil, args):
    """Fails without the render.py fix: json.dumps(ensure_ascii=False) escapes ESC but writes
    U+009B (a one-character CSI) and bidi overrides raw."""
    result = evil(*args, "--json")
    assert result.exit_code == 0, result.output
    _assert_inert(result.stdout + result.stderr)
    assert "\\u009b" in result.stdout or args[0] == "summarize"


def test_escape_sequences_in_chat_are_neutralised(evil, tmp_path):
    script = [FULL_DUPLEX, "Which of them evaluate on benchmarks?", "/sources", "/show 1",
              f"/show {CLEAR}", f"/{OSC52}", f"/save {tmp_path / 'chat.md'}"]
    result = evil("chat", input="\n".join(script) + "\n")
    assert result.exit_code == 0, result.output
    _assert_inert(result.stdout + result.stderr)
    turns = evil("chat", "--json", input=FULL_DUPLEX + "\n" + "Which of them listen?\n")
    assert turns.exit_code == 0, turns.output
    _assert_inert(turns.stdout + turns.stderr)


def test_rich_markup_in_titles_cannot_break_chat(ragqa, tmp_path):
    """Fails without the cli.py fix: the condensed follow-up ("→ …") names the cited papers by
    title and was printed as rich markup, so a title holding "[/bold]" ended the chat with a
    MarkupError (exit 1); "/show [/x]" did the same."""
    path = _write(tmp_path / "m.jsonl", _jsonl(
        {"id": "m1", "title": "Full-duplex [/] speech [/bold] agents", "abstract":
         "We study full-duplex speech agents that listen and speak at the same time."},
        {"id": "m2", "title": "Another [red]full-duplex system", "abstract":
         "A full-duplex spoken dialogue system that handles interruptions and backchannels."}))
    assert ragqa("ingest", str(path), "--quiet").exit_code == 0
    script = [FULL_DUPLEX, "Which of them handle interruptions?", "/show [/x]", "/x[/]"]
    result = ragqa("chat", input="\n".join(script) + "\n")
    assert result.exit_code == 0, result.output
    assert "→ Which of the papers Full-duplex [/] speech [/bold] agents" in result.stdout
    assert "No [[/x]] in the last answer." in result.stderr
    assert "Unknown command /x[/]" in result.stderr


@pytest.mark.server
def test_escape_sequences_in_an_llm_answer_are_neutralised(evil, llm_server):
    llm_server.reply = lambda body: Reply(f"Full-duplex agents{EVIL} exist [1].")
    result = evil("ask", FULL_DUPLEX, "--no-stream", **_llm(llm_server))
    assert result.exit_code == 0, result.output
    assert "OVERWRITE" in result.stdout
    _assert_inert(result.stdout + result.stderr)


def test_escape_sequences_in_bad_input_messages_are_neutralised(ragqa, home, tmp_path):
    path = _write(tmp_path / f"bad{C1_CSI}.jsonl",
                  _jsonl({"id": "ok", "abstract": ABSTRACT_1},
                         {"id": "y", "abstract": ABSTRACT_2, "year": f"20{EVIL}26"}))
    result = ragqa("ingest", str(path), "--quiet")
    _assert_failed_cleanly(result, home, ".jsonl:2")
    _assert_inert(result.stderr)
    skipped = ragqa("ingest", str(path), "--skip-bad")
    assert skipped.exit_code == 0 and "Skipped 1" in skipped.stderr
    _assert_inert(skipped.stdout + skipped.stderr)


# ================================================================ case 7: secrets


def _secret_free(*texts: str) -> None:
    for text in texts:
        for secret in (KEY, TOKEN, KEY[-12:], TOKEN[-12:]):
            assert secret not in text, f"a secret ({secret[:6]}…) was printed"


def _commands() -> list[tuple[str, ...]]:
    names = {c.name or c.callback.__name__ for c in app.registered_commands}
    commands = [("ingest", "--seeds", "--quiet"), ("search", FULL_DUPLEX),
                ("search", FULL_DUPLEX, "--json"), ("ask", FULL_DUPLEX),
                ("ask", FULL_DUPLEX, "--json"), ("chat", "--json"), ("chat",),
                ("summarize", "full-duplex speech"), ("summarize", "speech", "--json"),
                ("papers", "--json"), ("show", MOSHI_ID), ("doctor",), ("doctor", "--json")]
    if "eval" in names:
        commands.append(("eval", "BEIR-FOLDER", "--quiet"))
    return commands


def _beir(folder: Path) -> Path:
    """A tiny BEIR set (two abstracts, one query) for `ragqa eval`."""
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(_jsonl(
        {"_id": "d1", "title": "Moshi-RAG", "text": ABSTRACT_1},
        {"_id": "d2", "title": "TableAgent-Bench", "text": ABSTRACT_2}), encoding="utf-8")
    (folder / "queries.jsonl").write_text(_jsonl({"_id": "q1", "text": "full-duplex speech"}),
                                          encoding="utf-8")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n",
                                               encoding="utf-8")
    return folder


def _echo_key(server, status: int) -> Callable[[dict], Reply]:
    """An error whose body repeats the Authorization header, as some proxies do."""
    def reply(body: dict) -> Reply:
        auth = server.requests[-1]["headers"].get("Authorization", "")
        return Reply(status=status, error_message=f"Incorrect API key provided: {auth}")

    return reply


SCENARIOS = ["llm-answers", "llm-401", "llm-500-echoing-the-key", "chroma-server-down",
             "bad-settings"]


@pytest.mark.server
@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("command", _commands(), ids=" ".join)
def test_secrets_never_appear_in_any_output(seeded, home, llm_server, tmp_path, command,
                                            scenario):
    """A canary OPENAI_API_KEY and RAGQA_CHROMA_TOKEN, set for every command in every scenario,
    appear in no stdout, stderr, JSON, saved chat session, summary file or other file under
    RAGQA_HOME. "llm-500-echoing-the-key" fails without the llm.py fix: llama-index's retry
    warning printed the server's error body, key included."""
    env = {**_llm(llm_server, RAGQA_LLM_TIMEOUT="5"), "RAGQA_CHROMA_TOKEN": TOKEN}
    if scenario == "llm-answers":
        llm_server.reply = lambda body: Reply("Moshi-RAG does full-duplex speech [1].")
    elif scenario == "llm-401":
        llm_server.reply = _echo_key(llm_server, 401)
    elif scenario == "llm-500-echoing-the-key":
        llm_server.reply = _echo_key(llm_server, 500)
    elif scenario == "chroma-server-down":
        env.update(RAGQA_CHROMA_HOST="127.0.0.1", RAGQA_CHROMA_PORT=str(_free_port()))
    else:
        env.update(RAGQA_EMBED_PROVIDER="bogus")
    args = list(command)
    if args[0] == "eval":
        args[1] = str(_beir(tmp_path / "beir"))
    if args[0] == "summarize":
        args += ["--out", str(tmp_path / "summary.md")]
    chat_input = FULL_DUPLEX + "\n/save " + str(tmp_path / "chat.md") + "\n"
    result = _run(seeded, *args, input=chat_input if args[0] == "chat" else None, **env)
    _secret_free(result.stdout, result.stderr)
    assert "Traceback" not in result.output
    if scenario == "llm-answers":
        assert result.exit_code == 0, result.output
    elif scenario == "bad-settings":
        assert result.exit_code == 2 and "RAGQA_EMBED_PROVIDER" in result.stderr
    elif scenario == "chroma-server-down":
        assert result.exit_code == 1 and "Chroma server at 127.0.0.1" in result.output
    elif args[0] in ("ask", "summarize") and scenario != "llm-answers":
        _one_error_line(result, "LLM endpoint")
    for path in [*home.rglob("*"), *tmp_path.glob("*.md")]:
        if path.is_file():
            _secret_free(path.read_bytes().decode("utf-8", "replace"))


@pytest.mark.server
def test_secrets_stay_out_of_debug_tracebacks(seeded, llm_server):
    llm_server.reply = _echo_key(llm_server, 401)
    with pytest.raises(Exception) as caught:  # noqa: PT011 - --debug re-raises whatever failed
        seeded("ask", FULL_DUPLEX, "--debug", **_llm(llm_server))
    import traceback

    _secret_free("".join(traceback.format_exception(caught.value)))
    assert caught.type.__name__ == "LLMError"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_with_a_secret_set_freed_memory_never_reaches_new_allocations(tmp_path):
    """What hnswlib (in Chroma) mallocs and writes to disk uninitialised must not hold a key
    an earlier buffer held (config.scrub_heap_if_secrets, which the CLI and servers call)."""
    import ctypes

    from ragqa.config import load_settings, scrub_heap_if_secrets

    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    assert scrub_heap_if_secrets(load_settings(
        {"RAGQA_HOME": str(tmp_path), "RAGQA_ENV_FILE": "/x", "OPENAI_API_KEY": KEY}))
    buffer = KEY.encode() * 64
    for _ in range(3):
        old = libc.malloc(len(buffer))
        ctypes.memmove(old, buffer, len(buffer))
        libc.free(old)
        new = libc.malloc(len(buffer))  # glibc hands the same chunk straight back
        seen = ctypes.string_at(new, len(buffer))
        libc.free(new)
        assert KEY[-12:].encode() not in seen
