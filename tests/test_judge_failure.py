"""Issue 45: a judge that sends no usable verdict (a small local model that writes prose
instead of the JSON), or fails, costs a list question its screening, never its answer: the
offline list stands, with a one-line notice, in every face (CLI text and --json, HTTP /api,
the OpenAI-compatible /v1, MCP)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from .conftest import FULL_DUPLEX
from .helpers.judge import written_answer
from .helpers.llm_server import LoopbackLLM, Reply, prompt_name, prompt_of
from .helpers.serve import serving_copy

pytestmark = pytest.mark.server

SPEECH = {"Moshi-RAG", "τ-Voice", "Hibiki-Zero"}
NOTICE = "could not screen the candidates"


def _prose_judge(body: dict) -> Reply:
    """Screening prompts get prose (no JSON object); answer prompts a cited list."""
    if prompt_name(body) == "screen":
        return Reply("Papers 1 and 3 look relevant to me, the others less so.")
    return Reply(written_answer(prompt_of(body)))


def _failing_judge(body: dict) -> Reply:
    """Screening prompts fail on the server's side; answer prompts are answered."""
    if prompt_name(body) == "screen":
        return Reply(status=500, error_message="the model crashed")
    return Reply(written_answer(prompt_of(body)))


def _env(server: LoopbackLLM) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-judge-failure",
            "RAGQA_LLM_MODEL": "small-local", "RAGQA_LLM_RETRIES": "0", "RAGQA_SCREEN": "auto"}


@pytest.mark.parametrize("reply", [_prose_judge, _failing_judge], ids=["prose", "error"])
def test_the_cli_answers_with_the_offline_list_and_says_why(seeded, llm_server, reply):
    llm_server.reply = reply
    offline = json.loads(seeded("ask", FULL_DUPLEX, "--json", RAGQA_LLM="none").stdout)
    result = seeded("ask", FULL_DUPLEX, "--json", **_env(llm_server))
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert NOTICE in answer["notice"] and answer["mode"] == "llm"
    assert answer["screening"]["mode"] == "offline"
    assert answer["screening"]["stopped"] == "judge_failed" and answer["screening"]["failure"]
    assert [p["paper_id"] for p in answer["papers"]] == \
        [p["paper_id"] for p in offline["papers"]]
    assert {c["title"] for c in answer["citations"]} == \
        {p["title"] for p in offline["papers"] if p["tier"] == "core"}  # the tail is folded
    text = seeded("ask", FULL_DUPLEX, **_env(llm_server))
    assert text.exit_code == 0 and NOTICE in " ".join(text.stdout.split())
    assert "judged" not in text.stdout  # no "The model read N candidates and judged M"
    summary = seeded("summarize", "full-duplex speech", "--json", **_env(llm_server))
    assert summary.exit_code == 0, summary.output
    summary = json.loads(summary.stdout)
    assert NOTICE in summary["notice"] and summary["screening"]["mode"] == "offline"
    assert {r["title"] for r in summary["references"]} & SPEECH


@pytest.fixture
def served(_seeded_template, tmp_path, llm_server):
    llm_server.reply = _prose_judge
    with serving_copy(_seeded_template, tmp_path / "served-home", **_env(llm_server)) as server:
        yield server


def test_every_server_face_says_the_list_was_not_screened(served):
    api = httpx.post(f"{served.url}/api/ask", json={"question": FULL_DUPLEX}, timeout=120)
    assert api.status_code == 200, api.text
    assert NOTICE in api.json()["notice"] and api.json()["screening"]["mode"] == "offline"
    assert {c["title"] for c in api.json()["citations"]} & SPEECH

    v1 = httpx.post(f"{served.url}/v1/chat/completions", timeout=120, json={
        "model": "ragqa-default", "messages": [{"role": "user", "content": FULL_DUPLEX}]})
    assert v1.status_code == 200, v1.text
    assert NOTICE in " ".join(v1.json()["choices"][0]["message"]["content"].split())

    async def mcp_ask() -> dict:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        transport = streamable_http_client(f"{served.url}/mcp",
                                           http_client=httpx2.AsyncClient(timeout=120))
        async with Client(transport) as client:
            result = await client.call_tool("ask", {"question": FULL_DUPLEX})
            assert not result.is_error, result.content
            return result.structured_content

    answer = asyncio.run(mcp_ask())
    assert NOTICE in answer["notice"] and answer["screening"]["mode"] == "offline"
