"""`ragqa serve` against a web page the user happens to visit: DNS rebinding (a hostile name
pointed at 127.0.0.1) gets 421 on every route, CORS for every origin needs a token, /mcp
follows --cors like the other routes, and a client cannot switch on an LLM the operator did not
configure. A real server on loopback, driven over HTTP."""

from __future__ import annotations

import shutil
import time

import httpx
import pytest

from .conftest import FULL_DUPLEX
from .helpers.serve import RagqaServer

ORIGIN = "http://app.example"
ROUTES = [("GET", "/", None), ("GET", "/static/app.js", None), ("GET", "/api/health", None),
          ("GET", "/docs", None), ("GET", "/openapi.json", None), ("GET", "/v1/models", None),
          ("GET", "/api/papers", None), ("GET", "/api/papers/x", None),
          ("POST", "/api/search", {"question": FULL_DUPLEX}),
          ("POST", "/api/ask", {"question": FULL_DUPLEX}),
          ("POST", "/api/chat", {"message": FULL_DUPLEX}),
          ("POST", "/api/summarize", {"topic": "speech"}),
          ("POST", "/v1/chat/completions", {"model": "ragqa-default", "messages": [
              {"role": "user", "content": FULL_DUPLEX}]}),
          ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})]
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def served(_seeded_template, tmp_path_factory):
    home = tmp_path_factory.mktemp("guards") / "home"
    shutil.copytree(_seeded_template, home)
    server = RagqaServer(home, "--allow-host", "ragqa.internal", "--cors", ORIGIN)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.mark.server
def test_a_rebound_name_gets_421_on_every_route(served):
    with httpx.Client(base_url=served.url, timeout=60) as client:
        for method, path, body in ROUTES:
            reply = client.request(method, path, json=body, headers={
                "Host": "evil.example", "Origin": "http://evil.example", **MCP_HEADERS})
            assert reply.status_code == 421, (path, reply.status_code)
            error = reply.json()["error"]  # under /v1 in OpenAI's shape
            assert set(reply.json()) == {"error"} and "localhost" in str(error)


@pytest.mark.server
def test_the_servers_own_names_and_allowed_ones_are_answered(served):
    port = served.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}",
                 f"ragqa.internal:{port}", "RAGQA.internal"):
        reply = httpx.get(f"{served.url}/api/health", headers={"Host": host}, timeout=30)
        assert reply.status_code == 200, host


@pytest.mark.server
def test_mcp_honours_the_cors_origin(served):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "page", "version": "1"}}}
    allowed = httpx.post(f"{served.url}/mcp", json=initialize, timeout=60,
                         headers={"Origin": ORIGIN, **MCP_HEADERS})
    assert allowed.status_code == 200, allowed.text
    assert allowed.headers.get("access-control-allow-origin") == ORIGIN
    preflight = httpx.options(f"{served.url}/mcp", timeout=30, headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, mcp-session-id"})
    assert preflight.status_code == 200
    other = httpx.options(f"{served.url}/mcp", timeout=30, headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert other.headers.get("access-control-allow-origin") != "http://evil.example"


@pytest.mark.server
def test_a_client_cannot_ask_for_an_llm_the_operator_did_not_configure(served):
    for path, body in (("/api/ask", {"question": FULL_DUPLEX, "llm": "openai"}),
                       ("/api/chat", {"message": FULL_DUPLEX, "llm": "openai"}),
                       ("/api/summarize", {"topic": "speech", "llm": "openai"}),
                       ("/v1/chat/completions", {"model": "ragqa-default", "llm": "openai",
                                                 "messages": [{"role": "user",
                                                               "content": FULL_DUPLEX}]})):
        reply = httpx.post(f"{served.url}{path}", json=body, timeout=60)
        assert reply.status_code == 400, (path, reply.text)
        assert "no LLM configured" in reply.text
    extractive = httpx.post(f"{served.url}/api/ask", json={"question": FULL_DUPLEX,
                                                           "llm": "none"}, timeout=60)
    assert extractive.status_code == 200 and extractive.json()["mode"] == "extractive"


def test_cors_for_every_origin_needs_a_token(ragqa):
    refused = ragqa("serve", "--cors", "*", "--port", "9")
    assert refused.exit_code == 2
    assert refused.stderr.startswith("ragqa: error: --cors '*' lets every web page")


@pytest.mark.server
def test_beyond_the_limit_and_its_queue_answers_are_shed_with_retry_after(_seeded_template,
                                                                          tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from .helpers.llm_server import LoopbackLLM, Reply

    llm = LoopbackLLM().start()
    llm.reply = lambda body: Reply("Moshi-RAG listens while it speaks [1].", delay=2.0)
    home = tmp_path / "home"
    shutil.copytree(_seeded_template, home)
    server = RagqaServer(home, "--max-concurrent", "1", OPENAI_BASE_URL=llm.url,
                         RAGQA_LLM_MODEL="loopback-model", RAGQA_LLM_RETRIES="0")
    try:
        server.wait_ready()

        def ask(_: int) -> tuple[int, float, httpx.Response]:
            started = time.monotonic()
            reply = httpx.post(f"{server.url}/api/ask", json={"question": FULL_DUPLEX},
                               timeout=120)
            return reply.status_code, time.monotonic() - started, reply

        with ThreadPoolExecutor(6) as pool:
            asked = [pool.submit(ask, i) for i in range(6)]
            time.sleep(0.8)  # the answers are running or waiting: a search is not held
            search = httpx.post(f"{server.url}/api/search", json={"question": FULL_DUPLEX},
                                timeout=60)
            results = [f.result() for f in asked]
        assert search.status_code == 200
        statuses = sorted(status for status, _, _ in results)
        assert statuses == [200, 200, 200, 503, 503, 503]  # 1 running + 2 waiting, 3 shed
        for status, seconds, reply in results:
            if status == 503:
                assert reply.headers["retry-after"] == "2" and seconds < 2.0
                assert "busy" in reply.json()["error"]
    finally:
        server.stop()
        llm.stop()


@pytest.mark.server
def test_out_of_range_fields_are_422_not_500(served):
    for body in ({"question": FULL_DUPLEX, "year": 10**30}, {"question": FULL_DUPLEX, "k": 0},
                 {"question": FULL_DUPLEX, "year": -5}):
        reply = httpx.post(f"{served.url}/api/search", json=body, timeout=60)
        assert reply.status_code == 422, (body, reply.text)
        assert set(reply.json()) == {"error"} and "Traceback" not in reply.text


@pytest.mark.server
def test_a_screen_depth_over_the_operators_limit_is_refused(served):
    """RAGQA_SCREEN_MAX (200 here) bounds what a client may have the operator's LLM read for
    one question: more is a 400 naming the limit, on every route that screens."""
    for path, body in (("/api/ask", {"question": FULL_DUPLEX, "screen": "201"}),
                       ("/api/chat", {"message": FULL_DUPLEX, "screen": "201"}),
                       ("/api/summarize", {"topic": "speech", "screen": "99999"})):
        reply = httpx.post(f"{served.url}{path}", json=body, timeout=60)
        assert reply.status_code == 400, (path, reply.text)
        assert set(reply.json()) == {"error"}
        assert "200 (RAGQA_SCREEN_MAX)" in reply.json()["error"], reply.text
    within = httpx.post(f"{served.url}/api/ask", json={"question": FULL_DUPLEX,
                                                       "screen": "200"}, timeout=60)
    assert within.status_code == 200, within.text

