"""`ragqa chat`: follow-ups resolved offline and through the loopback LLM, sessions that resume,
commands, and transcripts whose citations match their references."""

from __future__ import annotations

import json
import re

import pytest

from .helpers.llm_server import Reply, prompt_of

MOLECULES = "Which papers deal with molecules or materials?"
CARTESIAN = "Which of them uses Cartesian tensors?"
ORDERS = "What tensor orders does it predict?"


def _turns(result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def _titles(turn: dict) -> set[str]:
    return {c["title"] for c in turn["citations"]}


def test_three_turns_offline_land_on_the_right_papers(seeded):
    first, second, third = _turns(seeded("chat", "--json",
                                         input="\n".join([MOLECULES, CARTESIAN, ORDERS]) + "\n"))
    assert {"TACE-v1-OAM-M", "CEITNet"} <= _titles(first)
    assert first["standalone_question"] == MOLECULES
    assert second["question"] == CARTESIAN
    assert "TACE-v1-OAM-M" in second["standalone_question"]
    assert _titles(second) == {"TACE-v1-OAM-M", "CEITNet"}
    assert _titles(second) <= _titles(first)
    assert "CEITNet" in _titles(third)
    assert "order-2" in third["answer"]
    for turn in (first, second, third):
        assert turn["session_id"] == first["session_id"] and turn["dropped_citations"] == 0
        numbers = {int(n) for n in re.findall(r"\[(\d+)\]", turn["answer"])}
        assert numbers == {c["n"] for c in turn["citations"]}


def test_session_resumes_after_a_restart(seeded):
    first = _turns(seeded("chat", "--json", input=MOLECULES + "\n"))[0]
    listed = json.loads(seeded("chat", "--list", "--json").stdout)
    assert [s["session_id"] for s in listed] == [first["session_id"]]
    resumed = _turns(seeded("chat", "--resume", first["session_id"][:15], "--json",
                            input=CARTESIAN + "\n"))[0]
    assert resumed["session_id"] == first["session_id"]
    assert _titles(resumed) and _titles(resumed) <= _titles(first)
    latest = _turns(seeded("chat", "--resume", "--json", input=ORDERS + "\n"))[0]
    assert latest["session_id"] == first["session_id"] and "CEITNet" in _titles(latest)
    missing = seeded("chat", "--resume", "nope", input="x\n")
    assert missing.exit_code == 2 and "no session 'nope'" in missing.stderr


def test_commands_and_saved_transcript(seeded, tmp_path):
    transcript = tmp_path / "chat.md"
    script = [MOLECULES, "/sources", "/show 1", CARTESIAN, "/mode", "/help", "/bogus",
              f"/save {transcript}", "/quit", "never asked"]
    result = seeded("chat", input="\n".join(script) + "\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "extractive" in out and "/sources" in out and "Unknown command /bogus" in result.stderr
    assert "never asked" not in out and "Which of the papers" in out
    text = transcript.read_text(encoding="utf-8")
    sections = text.split("\n## ")[1:]
    assert len(sections) == 2
    for section in sections:
        body, _, references = section.partition("References:")
        cited = {int(n) for n in re.findall(r"\[(\d+)\]", body)}
        listed = {int(n) for n in re.findall(r"^- \[(\d+)\] ", references, re.M)}
        assert cited and cited == listed


@pytest.mark.server
def test_follow_ups_are_condensed_by_the_llm(seeded, llm_server):
    def script(body: dict) -> Reply:
        prompt = prompt_of(body)
        if "Standalone question:" in prompt:
            return Reply("Which of the molecule and materials papers use Cartesian tensors?")
        numbers = dict(re.findall(r'<source n="(\d+)" title="([^"]*)"', prompt))
        return Reply(" ".join(f"{title} is relevant [{n}]." for n, title in numbers.items()))

    llm_server.reply = script
    env = {"OPENAI_BASE_URL": llm_server.url, "RAGQA_LLM_RETRIES": "0"}
    first, second = _turns(seeded("chat", "--json", input=f"{MOLECULES}\n{CARTESIAN}\n", **env))
    assert first["mode"] == "llm" and first["citations"]
    condense_prompt = next(p for p in llm_server.prompts if "Standalone question:" in p)
    assert f"Follow-up question: {CARTESIAN}" in condense_prompt
    assert f"User: {MOLECULES}" in condense_prompt and first["answer"] in condense_prompt
    assert second["standalone_question"] == (
        "Which of the molecule and materials papers use Cartesian tensors?")
    assert "Question: Which of the molecule and materials papers" in llm_server.prompts[-1]
    assert second["citations"] and second["dropped_citations"] == 0


def test_a_selection_none_of_the_earlier_papers_fits_says_so(seeded):
    """"Which of them uses diffusion?" picks among the speech papers: none does, and the answer
    says so rather than listing diffusion papers from elsewhere (issue 31)."""
    first, second = _turns(seeded("chat", "--json", input="Which papers do full-duplex speech?\n"
                                  "Which of them uses diffusion?\n"))
    assert {"Moshi-RAG", "τ-Voice"} <= _titles(first)
    assert not second["citations"] and "None of the papers" in second["answer"]


def test_a_new_topic_worded_as_a_follow_up_searches_everything(seeded):
    first, second = _turns(seeded("chat", "--json", input="Which papers do full-duplex speech?\n"
                                  "And what about papers on diffusion?\n"))
    assert {"Moshi-RAG", "τ-Voice"} <= _titles(first)
    assert not _titles(second) & {"Moshi-RAG", "τ-Voice"}
    assert _titles(second) & {"DVPD", "STARCaster"}


def test_sources_always_answers(seeded):
    script = ["/sources", "Which papers study autonomous driving?", "/sources"]
    result = seeded("chat", input="\n".join(script) + "\n")
    assert result.exit_code == 0, result.output
    assert "No answer yet: ask a question first." in result.stdout
    assert "The last answer cited no papers." in result.stdout


def test_offline_follow_ups_read_the_papers_they_refer_to(seeded):
    script = ["Which papers work on molecules?", "Which papers study protein folding?",
              "How do they represent tensors?", "What does the first one propose?"]
    turns = _turns(seeded("chat", "--json", input="\n".join(script) + "\n"))
    molecules, protein, tensors, proposal = turns
    assert {"TACE-v1-OAM-M", "CEITNet"} <= _titles(molecules)
    assert not protein["citations"]
    # "they" skips the turn that found nothing and means the molecule papers.
    assert _titles(tensors) <= _titles(molecules) and "CEITNet" in _titles(tensors)
    assert all("tensor" in c["quote"].lower() for c in tensors["citations"])
    assert any("Cartesian tensor" in c["quote"] for c in tensors["citations"])
    first = tensors["citations"][0]
    assert [c["paper_id"] for c in proposal["citations"]] == [first["paper_id"]]
    # Its contribution sentence.
    assert re.search(r"\b[Ww]e (?:propose|develop|introduce|present)\b",
                     proposal["citations"][0]["quote"])
