"""The Python API (ragqa.api, docs/python-api.md): a notebook's way in. Real Chroma, the real
embedder, the real CLI beside it: the API's results are the `--json` objects, typed, and a
session or collection it writes is the CLI's too. Opening changes nothing in the process, and
`import ragqa` stays light. Every example of docs/python-api.md runs here."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

import ragqa
from ragqa import results
from ragqa.errors import LLMError, NotFound, UserError
from ragqa.requests import AskRequest, IngestRequest, SearchRequest, SummarizeRequest

from .helpers import FULL_DUPLEX, REPO

pytestmark = pytest.mark.slow


@pytest.fixture
def papers(seeded, home: Path) -> ragqa.Collection:
    """The default collection of a home that holds the seeds (the CLI's `seeded` home), opened
    through the API."""
    with ragqa.open(home=home) as opened:
        yield opened


def _field_names(result_type: type) -> set[str]:
    return {f.name for f in fields(result_type)}


def test_ask_returns_the_cli_json_typed(papers, seeded):
    answer = papers.ask(FULL_DUPLEX)
    assert isinstance(answer, results.Answer)
    assert answer.citations and all(isinstance(c, results.Citation) for c in answer.citations)
    retrieved = {p.paper_id for p in answer.papers}
    assert {c.paper_id for c in answer.citations} <= retrieved
    assert [c.n for c in answer.citations] == list(range(1, len(answer.citations) + 1))
    assert answer.core and all(p.tier == "core" for p in answer.core)
    cli = json.loads(seeded("ask", FULL_DUPLEX, "--json").stdout)
    assert _field_names(results.Answer) == set(cli)
    mine = answer.to_json()
    for name in ("timings",):
        mine.pop(name), cli.pop(name)
    assert mine == cli


def test_search_papers_and_paper_are_typed_and_complete(papers, seeded):
    found = papers.search("spiking neural networks")
    assert isinstance(found, results.SearchResults) and found.results
    assert found.results[0].rank == 1 and found.total_papers == 29
    assert _field_names(results.SearchHit) == set(
        json.loads(seeded("search", "spiking neural networks", "--json").stdout)["results"][0])
    top = papers.search("spiking neural networks", k=3, cut=False)
    assert len(top.results) == 3
    page = papers.papers(limit=5)
    assert page.total == 29 and len(page.papers) == 5
    every = papers.papers()
    assert len(every.papers) == 29 and len({p.paper_id for p in every.papers}) == 29
    one = papers.paper(found.results[0].paper_id)
    assert isinstance(one, results.Paper) and one.title == found.results[0].title
    assert one.to_json() == json.loads(seeded("show", one.paper_id, "--json").stdout)
    assert papers.paper(one.paper_id[:8]).paper_id == one.paper_id  # a unique start
    with pytest.raises(NotFound):
        papers.paper("no-such-paper")
    assert papers.collections() == ["default"]


def test_a_chat_keeps_its_context_and_the_cli_resumes_it(papers, seeded):
    chat = papers.chat()
    molecules = chat.ask("Which papers work on molecules?")
    tensors = chat.ask("How do they represent tensors?")
    assert isinstance(tensors, results.ChatTurn) and tensors.turn == 2
    assert {c.paper_id for c in tensors.citations} <= {c.paper_id for c in molecules.citations}
    assert tensors.standalone_question != "How do they represent tensors?"
    again = papers.chat(chat.session_id)
    assert again.turns == 2
    first = again.ask("What does the first one propose?")
    assert [c.paper_id for c in first.citations] == [tensors.citations[0].paper_id]
    cli = seeded("chat", "--resume", chat.session_id, "--json", input="the second one\n")
    assert cli.exit_code == 0, cli.output
    assert json.loads(cli.stdout.splitlines()[-1])["turn"] == 4


def test_summarize_gives_themes_references_and_the_markdown(papers):
    summary = papers.summarize("speech")
    assert isinstance(summary, results.Summary) and summary.themes
    cited = {r.paper_id for r in summary.references}
    assert cited and all(p.paper_id in cited for t in summary.themes for p in t.papers)
    assert summary.markdown.startswith("# ") and summary.references[0].title in summary.markdown
    with pytest.raises(UserError, match="TOPIC or --all"):
        papers.summarize()


def test_ingest_into_a_new_collection_reports_progress(tmp_path, seeds_copy):
    told: list[str] = []
    mine = ragqa.open("mine", home=tmp_path / "home")
    with pytest.raises(UserError, match="holds no papers"):
        mine.search("speech")
    report = mine.ingest(seeds_copy, on_progress=told.append)
    assert isinstance(report, results.IngestReport)
    assert report.added == 29 and report.collection == "mine"
    assert any(re.fullmatch(r"Embedding 29/29", line) for line in told), told
    assert mine.search(FULL_DUPLEX).results  # the same object sees its own ingest
    assert mine.ingest(seeds_copy).unchanged == 29
    assert mine.collections() == ["mine"]


def test_bad_input_is_a_user_error_with_one_line(tmp_path):
    with pytest.raises(UserError, match="no setting named llm_modle"):
        ragqa.open(home=tmp_path, llm_modle="x")
    with pytest.raises(UserError, match="collection"):
        ragqa.open("no/slashes", home=tmp_path)
    papers = ragqa.open(home=tmp_path)
    with pytest.raises(UserError, match="empty"):
        papers.ask("   ")
    with pytest.raises(UserError, match="k must be at least 1"):
        papers.search("speech", k=0)


def test_settings_are_named_by_field_and_validated(tmp_path):
    from ragqa.config import Secret

    papers = ragqa.open("c1", home=tmp_path, llm_model="m1", chunk_tokens=200,
                        openai_base_url="http://127.0.0.1:9/v1", openai_api_key=Secret("sk-1"))
    assert papers.settings.home == tmp_path and papers.settings.llm_model == "m1"
    assert papers.settings.chunk_tokens == 200 and papers.settings.llm_configured
    assert papers.settings.openai_api_key.reveal() == "sk-1"
    with pytest.raises(UserError, match="not list"):
        ragqa.open(home=tmp_path, llm_model=["a"])
    with pytest.raises(UserError, match="RAGQA_CHUNK_TOKENS"):
        ragqa.open(home=tmp_path, chunk_tokens=1000)


def test_every_request_option_is_a_keyword_of_the_api():
    """As tests/test_parity.py checks the faces: what a request offers, the API offers."""
    # A chat's session is the Chat object's; the CLI's quiet/json flags are no options.
    offered = {AskRequest: ragqa.Collection.ask, SearchRequest: ragqa.Collection.search,
               SummarizeRequest: ragqa.Collection.summarize,
               IngestRequest: ragqa.Collection.ingest}
    for request, method in offered.items():
        names = set(inspect.signature(method).parameters)
        wanted = {f.name for f in fields(request)} - {"question", "topic", "paths"}
        assert wanted <= names, f"{method.__name__} lacks {wanted - names}"


def test_opening_and_asking_change_nothing_process_wide(seeded, home):
    """In a fresh interpreter (this one's BLAS and malloc were set by servers and CLI runs):
    the environment, the BLAS threads, the threads left running, the loggers' levels."""
    code = f"""
import logging, os, threading
# The libraries ragqa uses, imported before the first look: their BLAS and their own loggers
# (bm25s sets its own level) are theirs, not ragqa's doing.
import numpy, bm25s, chromadb, httpx, openai, onnxruntime
from threadpoolctl import threadpool_info
import ragqa

def state():
    return (dict(os.environ), {{p["filepath"]: p["num_threads"] for p in threadpool_info()}},
            {{name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}})

before = state()
papers = ragqa.open(home={str(home)!r})
assert papers.ask("Which papers work on molecules?").citations
assert papers.ask("全双工语音的论文有哪些？").citations  # the multilingual model loads
assert papers.search("speech").results
after = state()
assert after[0] == before[0], set(after[0].items()) ^ set(before[0].items())
assert all(after[1][lib] == threads for lib, threads in before[1].items()), (before, after)
changed = {{k: v for k, v in after[2].items() if k in before[2] and before[2][k] != v}}
assert not changed, changed
alive = [t.name for t in threading.enumerate() if t.is_alive() and not t.daemon
         and t is not threading.main_thread()]
assert not alive, alive
print("unchanged")
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "unchanged", run.stderr[-2000:]


def test_an_llm_writes_the_turns_and_summaries_it_is_asked_for(papers, llm_server):
    from .helpers.llm_server import Reply, prompt_of

    def reply(body):
        prompt = prompt_of(body)
        if "Moshi-RAG" in prompt:
            number = re.search(r"\[(\d+)\][^\[]*Moshi-RAG", prompt)
            cited = number.group(1) if number else 1
            return Reply(f"Moshi-RAG answers spoken questions [{cited}].")
        return Reply("These papers study speech [1].")

    llm_server.reply = reply
    with ragqa.open(home=papers.settings.home, openai_base_url=llm_server.url,
                    llm_model="loopback-model", llm_retries=0) as written:
        chat = written.chat()
        turn = chat.ask(FULL_DUPLEX)
        assert turn.mode == "llm" and turn.model.startswith("loopback-model via ")
        assert isinstance(turn, results.ChatTurn) and turn.citations
        summary = written.summarize("speech")
        assert summary.mode == "llm" and summary.llm_calls > 0
        llm_server.reply = lambda body: Reply(status=401, error_message="bad key sk-canary")
        with pytest.raises(LLMError) as failed:
            written.ask(FULL_DUPLEX)
        said = str(failed.value)
        assert "\n" not in said and "rejected the API key" in said and "sk-canary" not in said


def test_import_ragqa_stays_light():
    code = ("import sys, ragqa; print(sorted(m for m in ('ragqa.api', 'ragqa.app', 'chromadb', "
            "'llama_index', 'onnxruntime') if m in sys.modules)); ragqa.open; "
            "print('ragqa.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True"


def _examples() -> list[str]:
    text = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_docs_examples_run(tmp_path, _seeded_template):
    """Each ```python block of docs/python-api.md, in order, in one fresh interpreter, on a home
    that holds the seeds; offline (no key, no endpoint)."""
    examples = _examples()
    assert len(examples) >= 4
    home = tmp_path / "home"
    shutil.copytree(_seeded_template, home)
    script = tmp_path / "examples.py"
    script.write_text("\n".join(examples), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGQA_"))}
    env.update(RAGQA_HOME=str(home), RAGQA_ENV_FILE=str(tmp_path / "no.env"),
               RAGQA_SCREEN="off")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr


def test_a_key_never_reaches_the_files_an_api_ingest_writes(tmp_path, llm_server, seeds_copy):
    """The API's one process-wide change: with a secret set, an ingest into the embedded store
    scrubs freed memory first (as the CLI does), so that hnswlib's index files, written from
    uninitialised memory, never hold bytes of a key that an earlier request carried."""
    from .helpers.llm_server import Reply

    key = "sk-api-canary-5d1e9b3f7a2c4e6081"
    llm_server.reply = lambda body: Reply(status=500, error_message=f"echo {key}")
    home = tmp_path / "home"
    code = f"""
import ragqa
from ragqa.errors import LLMError
papers = ragqa.open("mine", home={str(home)!r}, openai_base_url={llm_server.url!r},
                    openai_api_key={key!r}, llm_retries=0)
papers.ingest({str(seeds_copy)!r})
for _ in range(3):
    try:
        papers.ask("Which papers do full-duplex speech?")
    except LLMError as exc:
        assert {key!r} not in str(exc)
papers.ingest({str(seeds_copy)!r}, rebuild=True)
print("done")
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO, timeout=600,
                         env={k: v for k, v in os.environ.items() if not k.startswith("OPENAI")})
    assert run.returncode == 0 and run.stdout.strip() == "done", run.stderr[-2000:]
    assert key not in run.stderr
    for path in home.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
