"""Lists in tiers (issue 45): the papers the list decision is sure of are the answer (its core);
the less certain rest (its tail) is folded below it with its count, listed on request (`ask
--all`, chat's `/more`, the page's fold, `unfold` over HTTP and MCP), and every face's JSON
carries each paper's tier. Marks re-cut the list; the candidates they bring are offered "to
review", apart from it."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from .conftest import FULL_DUPLEX
from .helpers import DOUBTED, DOUBTED_TOPIC
from .helpers.serve import serving_copy


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _tiers(answer: dict) -> tuple[list[str], list[str]]:
    return ([p["paper_id"] for p in answer["papers"] if p["tier"] == "core"],
            [p["paper_id"] for p in answer["papers"] if p["tier"] == "tail"])


def test_the_answer_is_the_core_and_the_tail_is_folded_with_its_count(seeded):
    answer = _json(seeded("ask", FULL_DUPLEX, "--json"))
    core, tail = _tiers(answer)
    assert core and tail  # the seeds' full-duplex list has a sure core and a less certain rest
    assert [c["paper_id"] for c in answer["citations"]] == core  # only the core is cited
    assert f"{len(tail)} more papers may address" in answer["answer"]
    probabilities = [p["score"] for p in answer["papers"]]
    assert probabilities == sorted(probabilities, reverse=True)  # core first, then the tail
    text = seeded("ask", FULL_DUPLEX)
    assert text.exit_code == 0 and "ragqa ask --all lists them" in text.stdout
    assert "less certainly (folded)" in " ".join(text.stdout.split())

    unfolded = _json(seeded("ask", FULL_DUPLEX, "--all", "--json"))
    assert [c["paper_id"] for c in unfolded["citations"]] == core + tail
    assert f"Less certain, {len(tail)} more papers:" in unfolded["answer"]
    assert "folded" not in unfolded["answer"]


def test_search_and_a_question_on_one_paper_keep_their_tiers_apart(seeded):
    search = _json(seeded("search", FULL_DUPLEX, "--json"))
    tiers = [r["tier"] for r in search["results"]]
    assert "tail" in tiers and tiers == sorted(tiers)  # "core" < "tail": the core first
    text = seeded("search", FULL_DUPLEX).stdout
    assert f"{tiers.count('tail')} more, less certain" in text
    fact = _json(seeded("ask", "How many tasks does τ-Voice evaluate?", "--json"))
    assert {p["tier"] for p in fact["papers"]} == {"core"}  # no tiers outside lists


def test_chat_more_alone_lists_the_folded_tail_and_marks_offer_review_apart(seeded):
    lines = [FULL_DUPLEX, "/more", "/more 1 /not 2"]
    result = seeded("chat", "--json", input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    first, unfolded, marked = (json.loads(line) for line in result.stdout.splitlines())
    core, tail = _tiers(first)
    assert [c["paper_id"] for c in unfolded["citations"]] == core + tail
    # marks re-cut the list they were made on: the rejected paper gone, none added to it
    in_list = [p["paper_id"] for p in marked["papers"] if p["tier"] != "review"]
    rejected = unfolded["citations"][1]["paper_id"]
    assert rejected not in in_list and set(in_list) <= set(core + tail)
    review = [p["paper_id"] for p in marked["papers"] if p["tier"] == "review"]
    assert not set(review) & set(in_list)
    assert ("To review" in marked["answer"]) == bool(review)
    nothing = seeded("chat", input="How many tasks does τ-Voice evaluate?\n/more\n")
    assert nothing.exit_code == 0 and "it folded nothing" in nothing.output


@pytest.fixture
def served(_seeded_template, tmp_path):
    with serving_copy(_seeded_template, tmp_path / "served-home", RAGQA_LLM="none") as server:
        yield server


@pytest.mark.server
def test_every_server_face_carries_the_tiers(served, seeded):
    cli = _json(seeded("ask", FULL_DUPLEX, "--json"))
    api = httpx.post(f"{served.url}/api/ask", json={"question": FULL_DUPLEX}, timeout=120)
    assert api.status_code == 200 and _tiers(api.json()) == _tiers(cli)
    unfold = httpx.post(f"{served.url}/api/ask", json={"question": FULL_DUPLEX, "unfold": True},
                        timeout=120).json()
    assert len(unfold["citations"]) == len(cli["papers"])
    v1 = httpx.post(f"{served.url}/v1/chat/completions", timeout=120, json={
        "model": "ragqa-default", "messages": [{"role": "user", "content": FULL_DUPLEX}]})
    content = " ".join(v1.json()["choices"][0]["message"]["content"].split())
    assert f"{len(_tiers(cli)[1])} more papers may address" in content
    # a chat client has no fold to open: the folded papers are listed below it, uncited
    for paper in (p for p in cli["papers"] if p["tier"] == "tail"):
        assert f"- {paper['title']} ({paper['source']}, id {paper['paper_id']})" in \
            v1.json()["choices"][0]["message"]["content"]

    async def mcp_ask() -> tuple[dict, dict]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        transport = streamable_http_client(f"{served.url}/mcp",
                                           http_client=httpx2.AsyncClient(timeout=120))
        async with Client(transport) as client:
            folded = await client.call_tool("ask", {"question": FULL_DUPLEX})
            unfolded = await client.call_tool("ask", {"question": FULL_DUPLEX, "unfold": True})
            return folded.structured_content, unfolded.structured_content

    folded, unfolded = asyncio.run(mcp_ask())
    assert _tiers(folded) == _tiers(cli)
    assert len(unfolded["citations"]) == len(cli["papers"])


@pytest.mark.server
def test_every_server_face_folds_a_doubted_topic(served, seeded):
    """A topic the list decision doubts (DOUBTED over the seeds): no paper is the
    answer in any face, its papers are all tail, folded, and unfolded on request."""
    question = DOUBTED
    cli = _json(seeded("ask", question, "--json"))
    core, tail = _tiers(cli)
    assert not core and tail
    api = httpx.post(f"{served.url}/api/ask", json={"question": question}, timeout=120).json()
    assert _tiers(api) == (core, tail) and api["answer"] == cli["answer"]
    assert "is clearly about" in api["answer"] and not api["citations"]
    unfold = httpx.post(f"{served.url}/api/ask", json={"question": question, "unfold": True},
                        timeout=120).json()
    assert [c["paper_id"] for c in unfold["citations"]] == tail
    v1 = httpx.post(f"{served.url}/v1/chat/completions", timeout=120, json={
        "model": "ragqa-default", "messages": [{"role": "user", "content": question}]})
    message = v1.json()["choices"][0]["message"]["content"]
    content = " ".join(message.split())
    assert f"is clearly about “{DOUBTED_TOPIC}”; {len(tail)} may address it" in content
    assert all(f"id {paper_id})" in message for paper_id in tail)  # listed, not a dead end


def test_chat_after_a_doubted_topic_unfolds_and_marks_say_how(seeded):
    result = seeded("chat", input=f"{DOUBTED}\n/more 1\n/more\n")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"is clearly about “{DOUBTED_TOPIC}”" in text
    assert "the last answer folded all its papers: /more alone lists them" in text
    assert "Less certain," in text and "[1]" in text  # /more alone lists them, numbered
