"""Credentials inside OPENAI_BASE_URL (user info, query parameters) never leave the process:
not in answers, chat turns, `/v1` replies, the health route the page reads, `doctor`, saved
chats or any other file under the data folder, nor in what the server prints. The loopback LLM
answers for real; canaries ride in the URL's user name, password and query."""

from __future__ import annotations

import json
import shutil

import httpx
import pytest

from .conftest import FULL_DUPLEX
from .helpers.llm_server import LoopbackLLM, Reply
from .helpers.serve import RagqaServer

USER, PASSWORD, QUERY = "canary-user-7f3a", "canary-pass-91bd", "canary-query-55c2"
CANARIES = (USER, PASSWORD, QUERY)


def _leaks(text: str | bytes) -> list[str]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return [c for c in CANARIES if c in text]


@pytest.fixture(scope="module")
def llm():
    server = LoopbackLLM().start()
    server.reply = lambda body: Reply("Moshi-RAG listens while it speaks [1].")
    yield server
    server.stop()


def _url(llm: LoopbackLLM) -> str:
    host = llm.url.removeprefix("http://")
    return f"http://{USER}:{PASSWORD}@{host}?api-key={QUERY}"


def _files_leaking(home) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and _leaks(p.read_bytes())]


@pytest.mark.server
def test_the_cli_never_shows_or_stores_the_endpoints_credentials(seeded, home, llm):
    env = {"OPENAI_BASE_URL": _url(llm), "RAGQA_LLM_MODEL": "loopback-model",
           "RAGQA_LLM_RETRIES": "0"}
    asked = seeded("ask", FULL_DUPLEX, "--json", **env)
    assert asked.exit_code == 0, asked.output
    answer = json.loads(asked.stdout)
    assert answer["mode"] == "llm" and "127.0.0.1" in answer["model"]
    chat = seeded("chat", "--json", input=f"{FULL_DUPLEX}\nWhich of them is open source?\n",
                  **env)
    assert chat.exit_code == 0, chat.output
    doctor = seeded("doctor", "--json", **env)
    shown = dict(json.loads(doctor.stdout)["settings"])
    assert shown["openai_base_url"].endswith("(credentials and query hidden)")
    for result in (asked, chat, doctor):
        assert not _leaks(result.stdout) and not _leaks(result.stderr)
    assert not _files_leaking(home)


@pytest.mark.server
def test_the_server_never_shows_the_endpoints_credentials(_seeded_template, tmp_path, llm):
    home = tmp_path / "home"
    shutil.copytree(_seeded_template, home)
    server = RagqaServer(home, OPENAI_BASE_URL=_url(llm), RAGQA_LLM_MODEL="loopback-model",
                         RAGQA_LLM_RETRIES="0")
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=120) as client:
            replies = [client.get("/api/health"),
                       client.post("/api/ask", json={"question": FULL_DUPLEX}),
                       client.post("/api/chat", json={"message": FULL_DUPLEX}),
                       client.post("/v1/chat/completions", json={
                           "model": "ragqa-default",
                           "messages": [{"role": "user", "content": FULL_DUPLEX}]}),
                       client.post("/v1/chat/completions", json={
                           "model": "ragqa-default", "stream": True,
                           "messages": [{"role": "user", "content": FULL_DUPLEX}]})]
        for reply in replies:
            assert reply.status_code == 200, reply.text
            assert not _leaks(reply.text), reply.request.url
        assert "127.0.0.1" in replies[1].json()["model"]
        assert replies[2].json()["mode"] == "llm"
        server.terminate()
        assert not _leaks(server.stdout) and not _leaks(server.stderr)
        assert not _files_leaking(home)
    finally:
        server.stop()
