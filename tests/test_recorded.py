"""Real model text in CI: replies recorded from Qwen2.5-Coder-1.5B-Instruct Q4_K_M under
llama.cpp's server (bench/local_llm.sh, bench/record_llm.py; tests/fixtures/llm/*.json) are
replayed through the loopback server and the real openai client, streamed and not. Whatever
the model wrote, what ragqa shows is never a bare citation or number, never an uncited claim
left unflagged, and cites only papers that were retrieved."""

from __future__ import annotations

import json

import pytest

from ragqa.answering.answer import (
    ABSTAINED,
    CITED_NOTHING,
    answer_question,
    answer_sentences,
    cited_numbers,
)
from ragqa.answering.chat import ask_in_session, new_session
from ragqa.answering.citations import degenerate_reason, states_fact
from ragqa.models.llm import make_llm

from .helpers.answers import _ask, _llm_env, _retriever
from .helpers.corpus import A2SG
from .helpers.llm_server import FIXTURES, load_fixture, replay

RECORDED = sorted(p.stem for p in FIXTURES.glob("*.json") if p.stem != "citation_styles")


def _shown_answer_is_sound(answer: dict) -> None:
    """The rules every shown answer keeps, whatever the model wrote."""
    text = answer["answer"]
    assert text.strip()
    assert degenerate_reason(text, "English", lambda t: "English") not in (
        "it was only citations", "it was only a number")
    flagged = {u["sentence"] for u in answer["unsupported"]}
    for sentence in answer_sentences(text):
        if states_fact(sentence) and sentence not in (ABSTAINED, CITED_NOTHING):
            assert cited_numbers(sentence) or sentence in flagged, sentence
    retrieved = {p["paper_id"] for p in answer["papers"]}
    assert {c["paper_id"] for c in answer["citations"]} <= retrieved
    assert [c["n"] for c in answer["citations"]] == list(range(1, len(answer["citations"]) + 1))


def test_the_recordings_are_real_replies_to_ragqa_s_own_prompts():
    assert {"ask_list_answer", "ask_fact_answer", "ask_absent_answer", "ask_titles_answer",
            "translate_translate", "condense_condense"} <= set(RECORDED)
    for name in RECORDED:
        fixture = load_fixture(name)
        assert fixture["model"].startswith("qwen2.5-coder-1.5b")
        # one exchange, or (screen_seeds) every screening batch of several questions
        for exchange in fixture.get("exchanges") or [fixture]:
            assert exchange["key"] and exchange["key"] in exchange["request_prompt"]
        if fixture.get("stream_chunks"):
            assert "".join(fixture["stream_chunks"]).strip() == fixture["response"].strip()


@pytest.mark.server
@pytest.mark.parametrize("name", ["ask_list_answer", "ask_fact_answer", "ask_titles_answer"])
def test_recorded_answers_are_never_shown_bare(seeded, llm_server, name):
    fixture = load_fixture(name)
    question = fixture["key"].split("\n")[0]
    llm_server.reply = replay(name)
    answer = _ask(seeded, question, **_llm_env(llm_server))
    assert llm_server.requests, "the recorded prompt was asked again"
    _shown_answer_is_sound(answer)
    # What the real model wrote: "[1]", "278", and a list of numbers and titles
    assert answer["fallback"] in ("it was only citations", "it was only a number",
                                  "it named papers and said nothing about them")
    assert "unusable" in answer["notice"] and answer["answer"] != fixture["response"]


@pytest.mark.server
def test_a_near_miss_is_never_put_to_the_model(seeded, llm_server):
    """The real model cited GFFMERGE ("[1]") for "protein structure design", which no seed
    paper addresses; retrieval now finds no paper for it, so no prompt is sent at all."""
    fixture = load_fixture("ask_absent_answer")
    llm_server.reply = replay("ask_absent_answer")
    answer = _ask(seeded, fixture["key"].split("\n")[0], **_llm_env(llm_server))
    assert not llm_server.requests and not answer["citations"]
    assert answer["answer"].startswith("None of the 29 papers") and answer["closest"]


@pytest.mark.server
def test_the_recorded_list_answer_falls_back_to_the_complete_list(seeded, llm_server, home):
    llm_server.reply = replay("ask_list_answer")
    offline = _ask(seeded, "Which papers do full-duplex speech?")
    retriever = _retriever(home, llm_server)
    tokens: list[str] = []
    answer = answer_question(retriever, "Which papers do full-duplex speech?",
                             llm=make_llm(retriever.store.settings), on_token=tokens.append)
    assert "".join(tokens) == "[1]" and llm_server.requests[-1]["body"]["stream"] is True
    assert answer.fallback == "it was only citations" and answer.text == offline["answer"]
    assert {c.title for c in answer.citations} >= {"Moshi-RAG", "τ-Voice"}


@pytest.mark.server
def test_the_recorded_fact_answer_becomes_the_quoted_fact(seeded, llm_server):
    llm_server.reply = replay("ask_fact_answer")
    answer = _ask(seeded, "How many tasks does τ-Voice evaluate?", **_llm_env(llm_server))
    assert answer["fallback"] == "it was only a number"
    assert "278 tasks" in answer["answer"].replace("**", "")
    assert answer["citations"][0]["title"] == "τ-Voice"


@pytest.mark.server
def test_the_recorded_translation_is_what_is_searched(seeded, llm_server):
    llm_server.reply = replay("translate_translate", "translate_answer")
    question = load_fixture("translate_translate")["key"].split("\n")[0]
    answer = _ask(seeded, question, **_llm_env(llm_server))
    assert answer["retrieval_query"] == load_fixture("translate_translate")["response"].strip()
    assert answer["language"] == "Chinese"
    _shown_answer_is_sound(answer)
    asked = any("Answer:" in json.dumps(r["body"], ensure_ascii=False)
                for r in llm_server.requests[1:])
    if asked and degenerate_reason(load_fixture("translate_answer")["response"], "Chinese",
                                   lambda t: "English"):
        assert answer["fallback"]


@pytest.mark.server
def test_a_lossy_recorded_translation_is_searched_with_the_multilingual_vectors_too(
        seeded, llm_server):
    # The real model turned 脉冲神经网络 (spiking neural networks) into "pulse neural networks":
    # searched alone, that finds no paper; merged with the question's own multilingual search
    # (issue 14 item 9, issue 15), the spiking paper A²SG is among the sources.
    llm_server.reply = replay("translate_translate", "translate_answer")
    question = load_fixture("translate_translate")["key"].split("\n")[0]
    translation = load_fixture("translate_translate")["response"].strip()
    assert "pulse" in translation.lower() and "spik" not in translation.lower()
    alone = _json_of(seeded("search", translation, "--json"))
    assert A2SG not in {r["paper_id"] for r in alone["results"]}
    answer = _ask(seeded, question, **_llm_env(llm_server))
    assert answer["retrieval_query"] == translation
    assert A2SG in {p["paper_id"] for p in answer["papers"]}
    _shown_answer_is_sound(answer)


def _json_of(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.server
def test_the_recorded_condensed_follow_up_is_the_standalone_question(seeded, llm_server,
                                                                      home):
    names = [n for n in RECORDED if n.startswith("condense_")]
    llm_server.reply = replay(*names)
    retriever = _retriever(home, llm_server)
    llm = make_llm(retriever.store.settings)
    session = new_session("default")
    first = load_fixture("condense_answer_1")["key"].split("\n")[0]
    follow_up = load_fixture("condense_condense")["key"].split("\n")[0]
    answer, _ = ask_in_session(session, first, retriever, llm)
    _shown_answer_is_sound({**answer.as_json()})
    answer, turn = ask_in_session(session, follow_up, retriever, llm)
    assert turn.standalone == load_fixture("condense_condense")["response"].strip()
    _shown_answer_is_sound(json.loads(json.dumps(turn.answer)))


@pytest.mark.server
def test_a_recorded_summary_keeps_its_names_and_checks_every_sentence(seeded, llm_server, home):
    from ragqa.answering.answer import CITATION
    from ragqa.answering.summarize import as_json, summarize

    names = [n for n in RECORDED if n.startswith("summarize_")]
    llm_server.reply = replay(*names)
    retriever = _retriever(home, llm_server)
    summary = as_json(summarize(retriever, "audio and speech",
                                llm=make_llm(retriever.store.settings)))
    recorded = {load_fixture(n)["response"].strip() for n in names if "theme_name" in n}
    assert {t["name"] for t in summary["themes"]} == recorded
    assert all(r["path"].endswith("/chat/completions") for r in llm_server.requests)
    for theme in summary["themes"]:
        flagged = set(theme["unsupported"])
        for sentence in answer_sentences(theme["text"]):
            if states_fact(sentence):
                assert CITATION.search(sentence) or any(
                    f in sentence or sentence in f for f in flagged), sentence
    assert summary["references"] and summary["overview"]
