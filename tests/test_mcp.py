"""MCP: the SDK's own client talks to `ragqa mcp` over stdio and to `ragqa serve`'s `/mcp` over
streamable HTTP; the tools return the CLI's `--json` objects."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys

import pytest

from .conftest import FULL_DUPLEX, Ragqa
from .helpers.serve import RagqaServer, comparable, server_env

pytestmark = pytest.mark.server

TOKEN = "mcp-token-canary-5c2e8a"
TOOLS = {"search_papers", "ask", "get_paper", "list_papers", "summarize", "list_collections",
         "collection_map", "topic_trends"}


@pytest.fixture(scope="module")
def home(_seeded_template, tmp_path_factory):
    home = tmp_path_factory.mktemp("mcp") / "home"
    shutil.copytree(_seeded_template, home)
    return home


def _cli_json(home, *args: str):
    result = Ragqa({"RAGQA_HOME": str(home), "RAGQA_LLM": "none"})(*args, "--json")
    assert result.exit_code == 0, result.output
    return comparable(json.loads(result.stdout))


async def _session(client, home) -> dict:
    """Everything the tests check, from one client session."""
    listed = (await client.list_tools()).tools
    out: dict = {"tools": {t.name: t for t in listed}}
    calls = {
        "search": ("search_papers", {"query": FULL_DUPLEX}),
        "filtered": ("search_papers", {"query": "speech", "k": 2, "year": 2026,
                                       "venue": "ICML"}),
        "ask": ("ask", {"question": "How many tasks does τ-Voice evaluate?"}),
        "summary": ("summarize", {"topic": "speech"}),
        "summary_all": ("summarize", {"all": True, "max_papers": 10}),
        "page": ("list_papers", {"offset": 3, "limit": 2}),
        "bad_k": ("search_papers", {"query": "speech", "k": 0}),
        # A page is at most 500 papers, as over HTTP; "all" (null) is the CLI's alone.
        "big_page": ("list_papers", {"limit": 501}),
        "null_page": ("list_papers", {"limit": None}),
        "full_page": ("list_papers", {"limit": 500}),
        # Deeper screening than the operator's RAGQA_SCREEN_MAX (200) allows.
        "deep_screen": ("ask", {"question": FULL_DUPLEX, "screen": "201"}),
        "deep_summary": ("summarize", {"topic": "speech", "screen": "201"}),
        "collections": ("list_collections", {}),
        "missing": ("get_paper", {"paper_id": "nosuchpaper"}),
        "empty": ("ask", {"question": "   "}),
        "map": ("collection_map", {"highlight": FULL_DUPLEX}),
        "trends": ("topic_trends", {"topic": "speech"}),
    }
    for key, (tool, arguments) in calls.items():
        out[key] = await client.call_tool(tool, arguments)
    paper_id = out["search"].structured_content["results"][0]["paper_id"]
    out["paper"] = await client.call_tool("get_paper", {"paper_id": paper_id[:8]})
    out["paper_id"] = paper_id
    return out


def _check(result: dict, home) -> None:
    tools = result["tools"]
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert "Returns" in tool.description
    assert set(tools["search_papers"].input_schema["properties"]) == {
        "query", "k", "cut", "venue", "year", "category"}
    assert tools["search_papers"].input_schema["required"] == ["query"]
    # Bounds and help come from the request types (ragqa/requests.py), as every face's do.
    k = tools["search_papers"].input_schema["properties"]["k"]
    assert any(a.get("minimum") == 1 and a.get("maximum") == 500 for a in k.get("anyOf", [k]))
    assert k["description"].startswith("At most this many papers")
    assert all(tool.annotations.read_only_hint for tool in tools.values())
    assert set(tools["summarize"].input_schema["properties"]) >= {"topic", "all", "max_papers",
                                                                  "llm", "category"}
    structured = {k: v.structured_content for k, v in result.items()
                  if k not in ("tools", "paper_id")}
    assert structured["search"] == _cli_json(home, "search", FULL_DUPLEX)
    assert structured["filtered"] == _cli_json(home, "search", "speech", "-k", "2", "--year",
                                               "2026", "--venue", "ICML")
    assert comparable(structured["ask"]) == _cli_json(home, "ask",
                                                      "How many tasks does τ-Voice evaluate?")
    assert "278 tasks" in structured["ask"]["answer"].replace("**", "")  # the figure in bold
    assert structured["summary"] == _cli_json(home, "summarize", "speech")
    assert structured["summary_all"] == _cli_json(home, "summarize", "--all", "--max-papers",
                                                  "10")
    assert structured["page"]["total"] == 29 and [p["paper_id"] for p in structured["page"][
        "papers"]] == [p["paper_id"] for p in _cli_json(home, "papers", "--offset", "3",
                                                        "--limit", "2")["papers"]]
    assert structured["paper"] == _cli_json(home, "show", result["paper_id"])
    assert structured["collections"] == {"current": "default", "papers": 29,
                                         "collections": [{"name": "default"}]}
    # The text content is the same object, for clients that read only text.
    assert json.loads(result["search"].content[0].text) == structured["search"]
    # The SDK checks the declared bounds itself, before the tool runs (its own wording).
    assert result["bad_k"].is_error and "greater than or equal to 1" in \
        result["bad_k"].content[0].text
    assert tools["list_papers"].input_schema["properties"]["limit"]["maximum"] == 500
    # Checked by the SDK against the declared bound, as k is (its own wording).
    assert result["big_page"].is_error and "less than or equal to 500" in \
        result["big_page"].content[0].text
    assert result["null_page"].is_error
    assert structured["full_page"]["limit"] == 500 and \
        len(structured["full_page"]["papers"]) == 29
    for deep in ("deep_screen", "deep_summary"):
        assert result[deep].is_error and "200 (RAGQA_SCREEN_MAX)" in result[deep].content[0].text
    # The map without its points; each highlighted paper with its theme.
    from ragqa.app import map_digest

    cli_map = map_digest(_cli_json(home, "map", "--highlight", FULL_DUPLEX))
    assert {k: v for k, v in structured["map"].items() if k != "seconds"} == \
        {k: v for k, v in cli_map.items() if k != "seconds"}
    assert "points" not in structured["map"]
    marked = structured["map"]["highlight"]["papers"]
    assert len(marked) >= 2 and all(p["theme"] in {t["name"] for t in
                                                   structured["map"]["themes"]} for p in marked)
    # The seeds are all of 2026: no trend, said in one line.
    assert result["trends"].is_error and "3 or more years" in result["trends"].content[0].text
    for bad in ("missing", "empty", "trends", "deep_screen"):
        assert result[bad].is_error
        message = result[bad].content[0].text
        assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert "nosuchpaper" in result["missing"].content[0].text


def test_mcp_over_stdio(home):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = server_env(home, RAGQA_LLM="none")
    params = StdioServerParameters(command=sys.executable, args=["-m", "ragqa", "mcp"], env=env)

    async def run() -> dict:
        async with Client(params) as client:
            return await _session(client, home)

    _check(asyncio.run(run()), home)


@pytest.fixture(scope="module")
def served(home):
    server = RagqaServer(home, "--token", TOKEN, RAGQA_LLM="none")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _http_transport(url: str, headers: dict):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers,
                                                                      timeout=120))


def test_mcp_over_streamable_http_with_the_token(served, home):
    from mcp import Client

    async def run() -> dict:
        transport = _http_transport(f"{served.url}/mcp", {"Authorization": f"Bearer {TOKEN}"})
        async with Client(transport) as client:
            return await _session(client, home)

    _check(asyncio.run(run()), home)
    assert TOKEN not in served.stdout and TOKEN not in served.stderr


def test_mcp_over_http_without_the_token_is_refused(served):
    import httpx

    response = httpx.post(f"{served.url}/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                     "method": "tools/list"},
                          headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 401 and set(response.json()) == {"error"}
