"""`ragqa summarize`: themed summaries of a topic or the whole collection, offline and through
the loopback LLM, with citations that resolve to the references."""

from __future__ import annotations

import json
import re

import pytest

from .helpers.llm_server import Reply, prompt_of

RL_TOPIC = "reinforcement learning and preference optimization"
CRYSTALS_OR_SPIKING = {"TACE-v1-OAM-M", "CEITNet", "A²SG", "DiceFormer"}


def _summary(ragqa, *args: str, **env: str) -> dict:
    result = ragqa("summarize", *args, "--json", **env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _assert_citations_resolve(text: str, references: list) -> None:
    cited = {int(n) for group in re.findall(r"\[([\d,\s]+)\]", text)
             for n in group.split(",")}
    assert cited == set(range(1, len(references) + 1))


def test_topic_summary_offline_cites_the_right_papers(seeded):
    summary = _summary(seeded, RL_TOPIC)
    titles = {r["title"] for r in summary["references"]}
    assert "CPO" in titles
    assert any(t.startswith("Reinforcement fine-tuning (RFT)") for t in titles)
    assert not titles & CRYSTALS_OR_SPIKING
    assert summary["mode"] == "extractive" and summary["themes"]
    text = " ".join(t["text"] for t in summary["themes"])
    _assert_citations_resolve(text, summary["references"])


def test_whole_collection_covers_every_paper(seeded, tmp_path):
    out = tmp_path / "summary.md"
    summary = _summary(seeded, "--all", "--out", str(out))
    assert len(summary["references"]) == 29 and summary["papers_considered"] == 29
    assert 2 <= len(summary["themes"]) <= 10
    assert sum(t["size"] for t in summary["themes"]) == 29
    assert all(t["name"] for t in summary["themes"])
    markdown = out.read_text(encoding="utf-8")
    assert markdown.startswith("# Summary of the collection")
    body, _, references = markdown.partition("## References")
    assert body.count("\n## ") == len(summary["themes"])
    listed = [int(n) for n in re.findall(r"^- \[(\d+)\] ", references, re.M)]
    assert listed == list(range(1, 30))
    _assert_citations_resolve(body, listed)


def test_topic_nothing_covers(seeded):
    summary = _summary(seeded, "autonomous driving")
    assert summary["themes"] == [] and summary["references"] == []
    assert summary["overview"].startswith("None of the 29 papers")


def test_topic_and_all_together_is_a_usage_error(seeded):
    result = seeded("summarize", "x", "--all")
    assert result.exit_code == 2 and "TOPIC or --all" in result.stderr


@pytest.mark.server
def test_llm_theme_paragraphs_carry_checked_citations(seeded, llm_server):
    def script(body: dict) -> Reply:
        prompt = prompt_of(body)
        if "Theme name:" in prompt:
            return Reply("Speech and language agents")
        if "Overview:" in prompt:
            return Reply("The collection spans agents and physics [3].")
        count = len(re.findall(r'<source n="\d+"', prompt))
        return Reply(" ".join(f"Finding {n} [{n}]." for n in range(1, count + 1))
                     + " An invented claim [99].")

    llm_server.reply = script
    summary = _summary(seeded, "--all", OPENAI_BASE_URL=llm_server.url, RAGQA_LLM_RETRIES="0")
    assert summary["mode"] == "llm"
    themes = len(summary["themes"])
    assert summary["llm_calls"] == 2 * themes + 1 and summary["tokens"] > 0
    assert summary["dropped_citations"] == themes
    assert all(t["name"] == "Speech and language agents" for t in summary["themes"])
    text = " ".join(t["text"] for t in summary["themes"])
    assert "[99]" not in text and "[3]" not in summary["overview"]
    _assert_citations_resolve(text, summary["references"])
    assert len(summary["references"]) == 29


def test_offline_theme_names_are_phrases_and_sentences_are_contributions(seeded):
    summary = _summary(seeded, "--all")
    audio = _summary(seeded, "audio and speech")
    for themes in (summary["themes"], audio["themes"]):
        names = [t["name"] for t in themes]
        # Phrases, never a bag of words ("Audio, layers, acoustic"), even where no phrase is
        # shared by two papers of a theme; and no theme of one paper in a summary of many.
        assert all(", " not in name and len(name.split()) >= 2 for name in names), names
        assert all(t["size"] >= 2 for t in themes), [(t["name"], t["size"]) for t in themes]
    text = " ".join(t["text"] for t in audio["themes"])
    assert text.count("we propose") + text.count("We propose") + text.count("We introduce") >= 4
    assert "We provide examples, model weights" not in text  # Hibiki-Zero's background line


def paper(text: str):
    """A paper of just this text (for the namer)."""
    from ragqa.sources.paper import Paper

    return Paper(paper_id=str(abs(hash(text))), title="", text=text, source="x#1")


def test_theme_names_at_conference_scale_are_noun_phrases():
    from ragqa.answering.summarize import theme_names

    speech = [paper(f"We study speech enhancement with diffusion, case {i}. Speech enhancement "
                    "removes noise.") for i in range(3)]
    graphs = [paper(f"Graph neural networks for molecules, variant {i}. We train graph neural "
                    "networks.") for i in range(3)]
    names = theme_names([speech, graphs])
    assert names[0].lower().startswith("speech enhancement")
    assert names[1].lower().startswith("graph neural networks")


def test_theme_names_keep_their_head_noun_and_drop_stray_capitals():
    """"Deep reinforcement" was a name (the generic "learning" cut it off), and "REPresentation
    Alignment" or "MAIN OUTCOME" kept the capitals of an acronym's spelling or a section
    label; "Machine learning" names no theme of an ML collection."""
    from ragqa.answering.summarize import theme_names

    control = [paper(f"Deep reinforcement learning for robot control, case {i}. Our deep "
                     "reinforcement learning agent uses machine learning.") for i in range(3)]
    aligned = [paper(f"We add REPresentation Alignment (REPA) to diffusion, case {i}. "
                     "REPresentation Alignment speeds training.") for i in range(3)]
    trials = [paper(f"MAIN OUTCOME MEASURES: blood pressure in trial {i}. MAIN OUTCOME "
                    "MEASURES were taken.") for i in range(3)]
    names = theme_names([control, aligned, trials])
    assert names[0].lower().startswith("deep reinforcement learning"), names
    assert "machine learning" not in names[0].lower()
    assert names[1].startswith("Representation alignment"), names
    assert names[2].startswith("Main outcome"), names
