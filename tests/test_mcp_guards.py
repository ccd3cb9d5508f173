"""MCP under the server's limits, as /api and /v1 are: answers asked for over MCP count against
`--max-concurrent` (and `ragqa mcp` over stdio bounds them at the same default), and past the
queue the client gets the tool's one-line "busy" error at once, never a hang; a `screen` depth
over the operator's RAGQA_SCREEN_MAX is refused by every face. Real servers (`ragqa serve`,
`ragqa mcp`), the MCP SDK's own client, and a loopback LLM that answers slowly, so that calls
really overlap."""

from __future__ import annotations

import asyncio
import shutil
import sys
import time

import httpx
import pytest

from .conftest import FULL_DUPLEX
from .helpers.llm_server import LoopbackLLM, Reply
from .helpers.serve import RagqaServer, server_env

ANSWER = "Moshi-RAG listens while it speaks [1]."


def _slow_llm(delay: float) -> LoopbackLLM:
    llm = LoopbackLLM().start()
    llm.reply = lambda body: Reply(ANSWER, delay=delay)
    return llm


def _llm_env(llm: LoopbackLLM) -> dict[str, str]:
    return {"OPENAI_BASE_URL": llm.url, "RAGQA_LLM_MODEL": "loopback-model",
            "RAGQA_LLM_RETRIES": "0"}


async def _timed(client, tool: str, arguments: dict) -> tuple[object, float]:
    started = time.monotonic()
    result = await client.call_tool(tool, arguments)
    return result, time.monotonic() - started


def _busy(result) -> bool:
    return result.is_error and "busy" in result.content[0].text


@pytest.mark.server
def test_mcp_answers_count_against_max_concurrent_with_the_api(_seeded_template, tmp_path):
    from mcp import Client

    from .test_mcp import _http_transport

    llm = _slow_llm(2.0)
    home = tmp_path / "home"
    shutil.copytree(_seeded_template, home)
    server = RagqaServer(home, "--max-concurrent", "1", **_llm_env(llm))
    try:
        server.wait_ready()

        async def run() -> dict:
            async with Client(_http_transport(f"{server.url}/mcp", {})) as client:
                # One runs, two wait in the queue (2 x the limit), the fourth is refused.
                asked = [asyncio.create_task(_timed(client, "ask", {"question": FULL_DUPLEX}))
                         for _ in range(4)]
                await asyncio.sleep(0.8)
                # Meanwhile: the same slots are full for /api (shared, not a limit per face),
                # and a search, milliseconds of work, is not held on either face.
                api = await asyncio.to_thread(httpx.post, f"{server.url}/api/ask",
                                              json={"question": FULL_DUPLEX}, timeout=60)
                search = await client.call_tool("search_papers", {"query": FULL_DUPLEX})
                answers = await asyncio.gather(*asked)
                after = await client.call_tool("ask", {"question": FULL_DUPLEX})
            return {"answers": answers, "api": api, "search": search, "after": after}

        result = asyncio.run(asyncio.wait_for(run(), timeout=120))
    finally:
        server.stop()
        llm.stop()
    refused = [(r, s) for r, s in result["answers"] if r.is_error]
    assert len(refused) == 1, [r.content[0].text for r, _ in refused]
    answer, seconds = refused[0]
    message = answer.content[0].text
    assert _busy(answer) and "try again in 2 s" in message and seconds < 2.0
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    for answer, _ in result["answers"]:
        if not answer.is_error:
            assert answer.structured_content["mode"] == "llm"
    assert result["api"].status_code == 503 and "busy" in result["api"].json()["error"]
    assert not result["search"].is_error
    assert not result["after"].is_error  # the server still answers once the load is gone
    assert llm.max_chats_in_flight == 1


@pytest.mark.server
def test_stdio_mcp_runs_at_most_the_default_answers_at_once(_seeded_template, tmp_path):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from ragqa.faces.mcp import DEFAULT_MAX_CONCURRENT

    llm = _slow_llm(1.5)
    home = tmp_path / "home"
    shutil.copytree(_seeded_template, home)
    params = StdioServerParameters(command=sys.executable, args=["-m", "ragqa", "mcp"],
                                   env=server_env(home, **_llm_env(llm)))
    # The default running, twice as many waiting, and one more: refused.
    calls = 3 * DEFAULT_MAX_CONCURRENT + 1

    async def run() -> list:
        async with Client(params) as client:
            await client.call_tool("search_papers", {"query": "speech"})  # loaded and warm
            return await asyncio.gather(*(
                _timed(client, "ask", {"question": FULL_DUPLEX}) for _ in range(calls)))

    try:
        answers = asyncio.run(asyncio.wait_for(run(), timeout=180))
    finally:
        llm.stop()
    refused = [(r, s) for r, s in answers if r.is_error]
    assert len(refused) == 1 and _busy(refused[0][0]) and refused[0][1] < 1.5, \
        [r.content[0].text for r, _ in refused]
    assert llm.max_chats_in_flight == DEFAULT_MAX_CONCURRENT


def test_a_screen_depth_over_the_operators_limit_is_refused_by_the_cli(seeded):
    """The operator's own CLI is held to RAGQA_SCREEN_MAX too (one rule for every face): the
    refusal names the limit and how to ask within it; raising it is the operator's call."""
    refused = seeded("ask", FULL_DUPLEX, "--screen", "6", RAGQA_SCREEN_MAX="5")
    assert refused.exit_code == 2
    assert "screen 6 is over the most candidates a question may have read, 5 " \
        "(RAGQA_SCREEN_MAX)" in refused.stderr
    assert seeded("ask", FULL_DUPLEX, "--screen", "5", RAGQA_SCREEN_MAX="5").exit_code == 0
