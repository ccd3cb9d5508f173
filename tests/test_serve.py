"""`ragqa serve`: the real server process over real HTTP. Its answers are the CLI's `--json`
objects (compared with the CLI run on the same data folder), streamed answers arrive as SSE,
chat sessions are the CLI's, a later ingest is seen by the next request, and the safety rules
hold: token, body limit, JSON errors, no secret in any response or log, clean SIGTERM."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time

import httpx
import pytest

from ragqa.requests import ShowRequest

from .conftest import FULL_DUPLEX, Ragqa
from .helpers.llm_server import LoopbackLLM, Reply, prompt_of
from .helpers.serve import RagqaServer, comparable, server_env, sse

pytestmark = pytest.mark.server

KEY = "sk-serve-canary-4b8d2f6a1c3e5079"
TOKEN = "serve-token-canary-9e7c5a3b1d"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _cite_full_duplex(body: dict) -> Reply:
    import re

    numbers = dict(re.findall(r'<source n="(\d+)" title="([^"]*)"', prompt_of(body)))
    by_title = {title: n for n, title in numbers.items()}
    moshi, tau = by_title["Moshi-RAG"], by_title["τ-Voice"]
    return Reply(f"Moshi-RAG pairs a full-duplex interface with retrieval [{moshi}]. "
                 f"τ-Voice benchmarks full-duplex voice agents [{tau}, 99].")


class Recorder:
    """An httpx client that keeps every response body, for the canary check at the end."""

    def __init__(self, url: str) -> None:
        self.client = httpx.Client(base_url=url, timeout=120)
        self.seen: list[str] = []

    def __call__(self, method: str, path: str, **kwargs) -> httpx.Response:
        response = self.client.request(method, path, **kwargs)
        self.seen.append(f"{response.status_code} {dict(response.headers)} {response.text}")
        return response

    def stream(self, path: str, body: dict, headers: dict | None = None) -> list[tuple[str, str]]:
        with self.client.stream("POST", path, json=body, headers=headers or AUTH) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            events = sse(response)
        self.seen.append(repr(events))
        return events


@pytest.fixture(scope="module")
def llm():
    server = LoopbackLLM().start()
    server.reply = _cite_full_duplex
    yield server
    server.stop()


@pytest.fixture(scope="module")
def served(_seeded_template, tmp_path_factory, llm):
    home = tmp_path_factory.mktemp("serve") / "home"
    shutil.copytree(_seeded_template, home)
    server = RagqaServer(home, "--token", TOKEN, OPENAI_API_KEY=KEY, OPENAI_BASE_URL=llm.url,
                         RAGQA_LLM_MODEL="loopback-model", RAGQA_LLM_RETRIES="0")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def api(served):
    recorder = Recorder(served.url)
    yield recorder
    recorder.client.close()


def _cli(served) -> Ragqa:
    """The CLI over the server's own data folder, without the LLM."""
    return Ragqa({"RAGQA_HOME": str(served.home), "RAGQA_LLM": "none"})


def _cli_json(served, *args: str):
    result = _cli(served)(*args, "--json")
    assert result.exit_code == 0, result.output
    return comparable(json.loads(result.stdout))


# ---------------------------------------------------------------- the routes

def test_health_needs_no_token_and_says_what_answers(api):
    health = api("GET", "/api/health").json()
    assert health == {"status": "ok", "version": health["version"], "collection": "default",
                      "papers": 29, "mode": "llm", "llm_model": "loopback-model", "auth": True}


def test_search_is_the_cli_search_json(api, served):
    response = api("POST", "/api/search", json={"question": FULL_DUPLEX}, headers=AUTH)
    assert response.status_code == 200
    assert response.json() == _cli_json(served, "search", FULL_DUPLEX)
    filtered = api("POST", "/api/search", headers=AUTH,
                   json={"question": "speech", "k": 2, "cut": False, "year": 1999}).json()
    assert filtered["results"] == [] and filtered["filters"] == {"year": 1999}
    assert filtered == _cli_json(served, "search", "speech", "-k", "2", "--no-cut",
                                 "--year", "1999")


def test_ask_extractive_is_the_cli_ask_json(api, served):
    response = api("POST", "/api/ask", json={"question": FULL_DUPLEX, "llm": "none"},
                   headers=AUTH)
    answer = response.json()
    assert comparable(answer) == _cli_json(served, "ask", FULL_DUPLEX, "--llm", "none")
    assert answer["mode"] == "extractive"
    assert {c["title"] for c in answer["citations"]} >= {"Moshi-RAG", "τ-Voice"}


def test_ask_streams_llm_tokens_then_one_checked_answer(api, llm):
    events = api.stream("/api/ask", {"question": FULL_DUPLEX, "stream": True})
    kinds = [kind for kind, _ in events]
    assert kinds.count("answer") == 1 and kinds[-1] == "answer"
    assert kinds.count("token") >= 5 and set(kinds) == {"token", "answer"}
    draft = "".join(json.loads(data)["text"] for kind, data in events if kind == "token")
    assert "[99]" in draft or "99]" in draft  # the model's own draft, unchecked
    answer = json.loads(events[-1][1])
    assert answer["mode"] == "llm" and answer["dropped_citations"] == 1
    # The model's two first, then the papers of the list it left out ("Also relevant:").
    assert [c["title"] for c in answer["citations"]][:2] == ["Moshi-RAG", "τ-Voice"]
    assert "99" not in answer["answer"]
    assert llm.requests[-1]["body"]["stream"] is True


def test_ask_stream_without_llm_is_one_answer_event(api):
    events = api.stream("/api/ask", {"question": FULL_DUPLEX, "llm": "none", "stream": True})
    assert [kind for kind, _ in events] == ["answer"]
    assert json.loads(events[0][1])["mode"] == "extractive"


def test_llm_failure_is_503_json_and_an_error_event(api, llm):
    llm.reply = lambda body: Reply(status=500)
    try:
        response = api("POST", "/api/ask", json={"question": FULL_DUPLEX}, headers=AUTH)
        events = api.stream("/api/ask", {"question": FULL_DUPLEX, "stream": True})
    finally:
        llm.reply = _cite_full_duplex
    assert response.status_code == 503 and set(response.json()) == {"error"}
    assert "500" in response.json()["error"] or "LLM" in response.json()["error"]
    assert [kind for kind, _ in events] == ["error"]
    assert set(json.loads(events[0][1])) == {"error"}


def test_chat_turns_are_cli_sessions(api, served):
    first = api("POST", "/api/chat", headers=AUTH,
                json={"message": FULL_DUPLEX, "llm": "none"}).json()
    session, secret = first["session_id"], first["session_secret"]
    assert first["turn"] == 1 and first["standalone_question"] == FULL_DUPLEX
    assert first["citations"]
    events = api.stream("/api/chat", {"session_id": session, "session_secret": secret,
                                      "message": "Which of them uses retrieval?", "llm": "none",
                                      "stream": True})
    second = json.loads(events[-1][1])
    assert [kind for kind, _ in events] == ["answer"]
    assert second["turn"] == 2 and second["session_id"] == session
    assert "session_secret" not in second  # said once, with the first turn
    assert second["standalone_question"] != second["question"]  # "them" spelled out
    # searched among the papers of the first turn only
    assert "Moshi-RAG" in [c["title"] for c in second["citations"]]
    assert {c["paper_id"] for c in second["citations"]} <= {c["paper_id"]
                                                            for c in first["citations"]}
    # The CLI continues the conversation begun over HTTP.
    resumed = _cli(served)("chat", "--resume", session, "--json",
                           input="What does the first one evaluate?\n")
    assert resumed.exit_code == 0, resumed.output
    third = json.loads(resumed.stdout.splitlines()[-1])
    assert third["turn"] == 3 and third["session_id"] == session
    saved = json.loads((served.home / "chats" / f"{session}.json").read_text(encoding="utf-8"))
    assert len(saved["turns"]) == 3
    missing = api("POST", "/api/chat", headers=AUTH,
                  json={"session_id": "nosuchsession", "message": "hello"})
    assert missing.status_code == 404 and "nosuchsession" in missing.json()["error"]


def test_a_chat_cannot_be_joined_by_a_guessed_prefix_or_a_stolen_id(api, served):
    first = api("POST", "/api/chat", headers=AUTH,
                json={"message": FULL_DUPLEX, "llm": "none"}).json()
    session, secret = first["session_id"], first["session_secret"]
    assert len(session.rpartition("-")[2]) >= 32  # 128 random bits after the time
    attempts = {
        "a guessed prefix": {"session_id": session[:16], "session_secret": secret},
        "a stolen id": {"session_id": session},
        "a wrong secret": {"session_id": session, "session_secret": secret[:-2] + "xx"},
        "the CLI's session": {"session_id": _cli_session(served)},
    }
    for what, fields in attempts.items():
        refused = api("POST", "/api/chat", headers=AUTH,
                      json={**fields, "message": "Which of them is open source?", "llm": "none"})
        assert refused.status_code == 404, what
        body = refused.json()
        assert set(body) == {"error"} and "citations" not in refused.text, what
        assert "turn" not in body and str(first["citations"][0]["paper_id"]) not in refused.text
    saved = json.loads((served.home / "chats" / f"{session}.json").read_text(encoding="utf-8"))
    assert len(saved["turns"]) == 1 and secret not in json.dumps(saved)
    owner = api("POST", "/api/chat", headers=AUTH, json={
        "session_id": session, "session_secret": secret, "message": "Which of them is open "
        "source?", "llm": "none"})
    assert owner.status_code == 200 and owner.json()["turn"] == 2


def _cli_session(served) -> str:
    """A session started on the command line (it has no secret: HTTP never continues it)."""
    started = _cli(served)("chat", "--json", input=f"{FULL_DUPLEX}\n")
    assert started.exit_code == 0, started.output
    return json.loads(started.stdout.splitlines()[-1])["session_id"]


def test_papers_pages_and_show(api, served):
    listing = _cli_json(served, "papers")
    page = api("GET", "/api/papers", params={"offset": 25, "limit": 10}, headers=AUTH).json()
    assert page["total"] == 29 and page["offset"] == 25 and page["limit"] == 10
    assert page["papers"] == listing["papers"][25:]
    assert api("GET", "/api/papers", headers=AUTH).json()["papers"] == listing["papers"][:29]
    paper_id = listing["papers"][3]["paper_id"]
    shown = api("GET", f"/api/papers/{paper_id[:10]}", headers=AUTH).json()
    assert shown == _cli_json(served, "show", paper_id) == listing["papers"][3]
    missing = api("GET", "/api/papers/nosuchpaper", headers=AUTH)
    assert missing.status_code == 404 and set(missing.json()) == {"error"}
    too_many = api("GET", "/api/papers", params={"limit": 501}, headers=AUTH)
    assert too_many.status_code == 422 and set(too_many.json()) == {"error"}


def test_summarize_is_the_cli_summary_plus_markdown(api, served, tmp_path):
    response = api("POST", "/api/summarize", json={"topic": "speech", "llm": "none"},
                   headers=AUTH).json()
    out = tmp_path / "summary.md"
    expected = _cli_json(served, "summarize", "speech", "--llm", "none", "--out", str(out))
    markdown = response.pop("markdown")
    # --out also writes the map beside the file and shows it after the overview: the server's
    # Markdown is the same text without the picture (nothing is written on the server).
    written = out.read_text(encoding="utf-8")
    assert "![" in written and (tmp_path / "summary.map.png").is_file()
    assert response == expected and markdown == "".join(
        line for line in written.splitlines(keepends=True) if not line.startswith("![")
    ).replace("\n\n\n", "\n\n")
    assert markdown.startswith("# Summary: speech")
    for body in ({}, {"topic": "speech", "all": True}):
        bad = api("POST", "/api/summarize", json=body, headers=AUTH)
        assert bad.status_code == 400 and set(bad.json()) == {"error"}


def test_docs_and_openapi_work_offline(api):
    docs = api("GET", "/docs", headers=AUTH)
    assert docs.status_code == 200 and "/api/ask" in docs.text
    assert "<script" not in docs.text and "cdn" not in docs.text.lower()
    schema = api("GET", "/openapi.json", headers=AUTH).json()
    assert {"/api/ask", "/api/search", "/api/chat", "/v1/chat/completions"} <= set(schema["paths"])


def test_a_new_snapshot_is_picked_up_by_the_next_request(api, served, tmp_path):
    source = tmp_path / "extra.jsonl"
    source.write_text(json.dumps({
        "id": "serve-extra-1", "title": "Zyxwvut Holography For Octopus Locomotion",
        "text": "We study zyxwvut holography, a method for octopus locomotion in coral reefs. "
                "Octopus arms move by zyxwvut waves."}) + "\n", encoding="utf-8")
    question = "Which papers study zyxwvut holography for octopus locomotion?"
    before = api("POST", "/api/search", json={"question": question}, headers=AUTH).json()
    assert "serve-extra-1" not in [r["paper_id"] for r in before["results"]]
    ingest = _cli(served)("ingest", str(source), "--quiet")
    assert ingest.exit_code == 0, ingest.output
    after = api("POST", "/api/search", json={"question": question}, headers=AUTH).json()
    assert after["total_papers"] == 30
    assert after["results"][0]["paper_id"] == "serve-extra-1"
    assert after["results"][0]["similarity"] > 0.3  # found by Chroma too, not only by BM25
    assert api("GET", "/api/health").json()["papers"] == 30


def test_the_app_keeps_its_parts_warm_until_a_new_snapshot(seeded, home, tmp_path,
                                                           monkeypatch):
    """In-process: what every request asks for is the same object until an ingest writes."""
    from ragqa.app import App

    monkeypatch.setenv("RAGQA_HOME", str(home))
    core = App.open()
    warm = core.retriever()
    assert core.retriever() is warm and core.retriever().lexical is warm.lexical
    source = tmp_path / "one.jsonl"
    source.write_text(json.dumps({"id": "warm-1", "title": "A Paper On Warm Caches",
                                  "text": "Caches stay warm between requests."}) + "\n",
                      encoding="utf-8")
    assert seeded("ingest", str(source), "--quiet").exit_code == 0
    fresh = core.retriever()
    assert fresh is not warm and fresh.total_papers == 30
    assert fresh.store.encoder is warm.store.encoder  # the model is not loaded again
    assert core.retriever() is fresh
    assert core.show(ShowRequest("warm-1"))["title"] == "A Paper On Warm Caches"


# ---------------------------------------------------------------- safety

def test_every_route_but_health_and_the_page_needs_the_token(api):
    routes = [("POST", "/api/search", {"question": "speech"}), ("POST", "/api/ask",
              {"question": "speech", "llm": "none"}), ("GET", "/api/papers", None),
              ("GET", "/api/papers/abc", None), ("POST", "/api/chat", {"message": "x"}),
              ("POST", "/api/summarize", {"all": True}), ("GET", "/v1/models", None),
              ("POST", "/v1/chat/completions", {"model": "ragqa-default", "messages": []}),
              ("GET", "/docs", None), ("GET", "/openapi.json", None), ("POST", "/mcp", {}),
              ("GET", "/nosuchroute", None)]
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                    {"Authorization": f"Basic {TOKEN}"}):
        for method, path, body in routes:
            response = api(method, path, json=body, headers=headers)
            assert response.status_code == 401, (method, path, headers)
            assert set(response.json()) == {"error"}
    assert api("GET", "/api/health").status_code == 200
    page = api("GET", "/")
    assert page.status_code in (200, 404) and page.status_code != 401


def test_bad_bodies_are_json_errors_never_tracebacks(api):
    cases = [(b"not json", 422), (b'{"q": 1}', 422), (b'{"question": 5}', 422),
             (b'{"question": "x", "k": 0}', 422), (b'{"question": "x", "llm": "gpt"}', 422),
             (b'{"question": "   "}', 400), (b"[]", 422)]
    for body, status in cases:
        response = api("POST", "/api/ask", content=body,
                       headers={**AUTH, "Content-Type": "application/json"})
        assert response.status_code == status, body
        assert set(response.json()) == {"error"} and "Traceback" not in response.text
    unknown = api("GET", "/api/nosuch", headers=AUTH)
    assert unknown.status_code == 404 and set(unknown.json()) == {"error"}


def test_bodies_over_64_kb_are_413(api):
    big = json.dumps({"question": "a" * 70_000}).encode()
    response = api("POST", "/api/ask", content=big,
                   headers={**AUTH, "Content-Type": "application/json"})
    assert response.status_code == 413 and set(response.json()) == {"error"}

    def chunked():  # no Content-Length: counted as it arrives
        for _ in range(70):
            yield b"a" * 1000

    response = api("POST", "/api/search", content=chunked(),
                   headers={**AUTH, "Content-Type": "application/json"})
    assert response.status_code == 413 and set(response.json()) == {"error"}


def test_cors_is_off_by_default(api):
    preflight = api("OPTIONS", "/api/search", headers={
        "Origin": "http://elsewhere.example", "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers
    answered = api("GET", "/api/health", headers={"Origin": "http://elsewhere.example"})
    assert "access-control-allow-origin" not in answered.headers


def test_another_address_without_a_token_is_refused(tmp_path):
    env = server_env(tmp_path / "home")
    result = subprocess.run([sys.executable, "-m", "ragqa", "serve", "--host", "0.0.0.0"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "token" in result.stderr
    assert not (tmp_path / "home").exists()  # refused before opening anything


def test_a_port_in_use_is_one_line_and_exit_1(served, tmp_path):
    env = server_env(tmp_path / "home")
    result = subprocess.run([sys.executable, "-m", "ragqa", "serve", "--port", str(served.port)],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"ragqa: error: cannot listen on 127.0.0.1:{served.port}: Address already in use"]


def test_a_client_that_leaves_mid_stream_cancels_the_turn(api, served, llm):
    words = " ".join(["Moshi-RAG is a full-duplex speech model [1]."] * 8)
    llm.reply = lambda body: Reply(words, chunk_delay=0.08)  # about 4 s of writing
    chats = served.home / "chats"
    before = set(chats.iterdir()) if chats.is_dir() else set()
    try:
        with httpx.Client(base_url=served.url, timeout=60) as client, client.stream(
                "POST", "/api/chat", headers=AUTH,
                json={"message": FULL_DUPLEX, "stream": True}) as response:
            for line in response.iter_lines():
                if line.startswith("event: token"):
                    break  # the model is writing: leave
        time.sleep(6)  # past the time the whole answer would have taken
        # Cancelled at its next token: no turn saved, and the server answers as before.
        after = set(chats.iterdir()) if chats.is_dir() else set()
        assert after == before
        assert api("GET", "/api/health").json()["status"] == "ok"
    finally:
        llm.reply = _cite_full_duplex


def test_sigterm_during_a_turn_stops_cleanly_and_no_secret_leaked(api, served, llm):
    """The last test of the module: it stops the server."""
    llm.reply = lambda body: Reply("Moshi-RAG is a full-duplex model [1].", delay=1.5)
    result: dict = {}

    def slow_turn() -> None:
        with httpx.Client(base_url=served.url, timeout=60) as client:
            try:
                response = client.post("/api/chat", headers=AUTH,
                                       json={"message": FULL_DUPLEX})
                result["status"], result["body"] = response.status_code, response.text
            except httpx.HTTPError as exc:
                result["error"] = repr(exc)

    asked = len(llm.requests)
    thread = threading.Thread(target=slow_turn)
    thread.start()
    deadline = time.monotonic() + 30
    while len(llm.requests) == asked and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(llm.requests) > asked  # the turn is waiting for the LLM now
    code = served.terminate()
    thread.join(60)
    llm.reply = _cite_full_duplex
    assert code == 0, served.stderr
    # The answer in flight was finished (uvicorn waits for it), and its session saved whole.
    assert result.get("status") == 200, result
    sessions = list((served.home / "chats").iterdir())
    assert sessions and not [p for p in sessions if p.suffix != ".json"]
    for path in sessions:
        json.loads(path.read_text(encoding="utf-8"))
    assert "Traceback" not in served.stderr
    for secret in (KEY, TOKEN):
        assert secret not in served.stdout and secret not in served.stderr
        assert not [seen for seen in api.seen if secret in seen]
