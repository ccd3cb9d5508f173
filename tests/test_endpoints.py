"""What the clients make of OPENAI_BASE_URL and RAGQA_EMBED_BASE_URL, seen from the loopback
server (every request's path, query and Authorization header: LoopbackLLM.seen).

- A query in the base URL stays a query, after the route: `.../v1?api-version=x` is asked as
  `/v1/chat/completions?api-version=x` (the client once glued its route after the query:
  `/v1?api-version=x/chat/completions`). The same for embeddings and llama.cpp's `/props`.
- Credentials in the URL (`http://user:pw@host/v1`) never replace the API key: with
  OPENAI_API_KEY set, the server gets `Bearer <key>` (httpx once sent the URL's user and
  password as Basic auth instead, and the key was lost); without one, the URL's credentials
  go as Basic auth, as any HTTP client sends them.
- Neither the key nor the URL's password shows in any output or file."""

from __future__ import annotations

import base64
import json

import pytest

from .conftest import FULL_DUPLEX
from .helpers.corpus import _corpus
from .helpers.llm_server import LoopbackLLM, Reply

pytestmark = pytest.mark.server

KEY = "sk-endpoint-canary-4c1e"
USER, PASSWORD = "canary-user-b27d", "canary-pw-e90a"
QUERY = "api-version=2024-01"


@pytest.fixture
def llm():
    server = LoopbackLLM().start()
    server.reply = lambda body: Reply("Moshi-RAG listens while it speaks [1].")
    server.context_limit = 100_000  # so that /props answers, and is asked
    yield server
    server.stop()


def _with_credentials(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{PASSWORD}@")


def _seen(llm: LoopbackLLM, method: str, path: str) -> list:
    return [s for s in llm.seen if s.method == method and s.path == path]


def _llm_env(url: str, **extra: str) -> dict[str, str]:
    return {"OPENAI_BASE_URL": url, "RAGQA_LLM_MODEL": "loopback-model",
            "RAGQA_LLM_RETRIES": "0", **extra}


def _leaks(text: str | bytes) -> list[str]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return [secret for secret in (KEY, PASSWORD, USER) if secret in text]


def _files_leaking(home) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and _leaks(p.read_bytes())]


def test_a_query_in_the_base_url_stays_after_the_route(seeded, llm):
    asked = seeded("ask", FULL_DUPLEX, "--json", **_llm_env(f"{llm.url}?{QUERY}"))
    assert asked.exit_code == 0, asked.output
    assert json.loads(asked.stdout)["mode"] == "llm"
    chats = _seen(llm, "POST", "/v1/chat/completions")
    assert chats, [(s.method, s.path, s.query) for s in llm.seen]
    assert all(s.query == {"api-version": ["2024-01"]} for s in chats)
    props = _seen(llm, "GET", "/props")  # the context the server has (llama.cpp)
    assert props and props[0].query == {"api-version": ["2024-01"]}
    doctor = seeded("doctor", "--json", **_llm_env(f"{llm.url}?{QUERY}"))
    models = _seen(llm, "GET", "/v1/models")  # doctor's check, as the answers reach it
    assert models and all(s.query == {"api-version": ["2024-01"]} for s in models), doctor.output


def test_credentials_in_the_url_do_not_replace_the_api_key(seeded, home, llm):
    env = _llm_env(_with_credentials(llm.url), OPENAI_API_KEY=KEY)
    asked = seeded("ask", FULL_DUPLEX, "--json", **env)
    assert asked.exit_code == 0, asked.output
    chat = seeded("chat", "--json", input=f"{FULL_DUPLEX}\n", **env)
    assert chat.exit_code == 0, chat.output
    doctor = seeded("doctor", "--json", **env)
    chats = _seen(llm, "POST", "/v1/chat/completions")
    assert len(chats) >= 2
    assert {s.authorization for s in chats} == {f"Bearer {KEY}"}
    assert {s.authorization for s in _seen(llm, "GET", "/props")} == {f"Bearer {KEY}"}
    assert {s.authorization for s in _seen(llm, "GET", "/v1/models")} == {f"Bearer {KEY}"}
    # Without a key, the URL's user and password are what authenticates: Basic auth.
    llm.seen.clear()
    without_key = seeded("ask", FULL_DUPLEX, "--json", **_llm_env(_with_credentials(llm.url)))
    assert without_key.exit_code == 0, without_key.output
    basic = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert {s.authorization for s in _seen(llm, "POST", "/v1/chat/completions")} == {basic}
    for result in (asked, chat, doctor, without_key):
        assert not _leaks(result.stdout) and not _leaks(result.stderr)
    assert not _files_leaking(home)


def test_the_embedding_endpoint_keeps_its_query_and_key(ragqa, home, tmp_path, llm):
    corpus = _corpus(tmp_path / "papers.jsonl", 12)
    env = {"RAGQA_EMBED_PROVIDER": "openai", "RAGQA_EMBED_MODEL": "loopback-embed",
           "RAGQA_EMBED_BASE_URL": _with_credentials(f"{llm.url}?{QUERY}"),
           "RAGQA_EMBED_API_KEY": KEY}
    ingested = ragqa("ingest", str(corpus), "--quiet", "--json", "-c", "remote", **env)
    assert ingested.exit_code == 0, ingested.output
    found = ragqa("search", "spectral graph", "-c", "remote", "--json", **env)
    assert found.exit_code == 0, found.output
    embeds = _seen(llm, "POST", "/v1/embeddings")
    assert embeds, [(s.method, s.path, s.query) for s in llm.seen]
    assert all(s.query == {"api-version": ["2024-01"]} for s in embeds)
    assert {s.authorization for s in embeds} == {f"Bearer {KEY}"}
    for result in (ingested, found):
        assert not _leaks(result.stdout) and not _leaks(result.stderr)
    assert not _files_leaking(home)
