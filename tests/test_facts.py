"""Fact questions offline: the quoted sentence is the one that holds the asked figure, with
LaTeX and Markdown read as text ("$2.13\\times$" is quoted "2.13×")."""

from __future__ import annotations

import json

import pytest

from ragqa.sources.paper import strip_marks


@pytest.mark.parametrize(("question", "title", "figure"), [
    ("What is the speedup of the GPU kernel generation method?", "EGG", "2.13×"),
    ("What speedup does EGG achieve over PyTorch?", "EGG", "2.13×"),
    ("How many tasks does τ-Voice evaluate?", "τ-Voice", "278 tasks"),
])
def test_a_fact_question_quotes_the_sentence_with_the_figure(seeded, question, title, figure):
    result = seeded("ask", question, "--json")
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    first = answer["citations"][0]
    assert first["title"] == title and figure in first["quote"], first
    assert figure in answer["answer"].split("\n\n")[0].replace("**", "")  # marked in bold
    assert "\\times" not in answer["answer"] and "$" not in answer["answer"]


@pytest.mark.parametrize(("latex", "text"), [
    ("a $2.13\\times$ average speedup", "a 2.13× average speedup"),
    ("up to $\\approx 70$\\% fewer parameters", "up to ≈ 70% fewer parameters"),
    ("error $\\leq 5$ and $\\tau$-Voice", "error ≤ 5 and τ-Voice"),
    ("**bold** and $\\textbf{EGG}$", "bold and EGG"),
    ("\\textsc{Lumen} keeps \\times-free words like \\timestamp", "Lumen keeps ×-free words like "
     "timestamp"),
])
def test_latex_and_markdown_read_as_text(latex, text):
    assert strip_marks(latex) == text


def test_the_cross_encoder_checks_its_files(tmp_path):
    from ragqa.errors import RerankError
    from ragqa.models.rerank import CrossEncoder, model_dir

    (tmp_path / "model.onnx").write_bytes(b"not the model")
    (tmp_path / "tokenizer.json").write_bytes((model_dir() / "tokenizer.json").read_bytes())
    with pytest.raises(RerankError, match="not the pinned one"):
        CrossEncoder(tmp_path)


def test_the_cross_encoder_reads_the_answering_sentence_first():
    from ragqa.models.rerank import cross_encoder

    scores = cross_encoder().score("What speedup does EGG achieve over PyTorch?", [
        "High-performance GPU kernels are critical for reducing computational costs.",
        "EGG achieves a 2.13× average speedup over PyTorch on KernelBench.",
    ])
    assert scores[1] > scores[0]


def test_search_and_list_questions_never_load_the_cross_encoder(seeded, home):
    import os
    import subprocess
    import sys

    code = ("import sys\nfrom ragqa.faces.cli import main\nsys.argv = ['ragqa', 'ask', "
            "'Which papers study spiking neural networks?']\ntry:\n    main()\nexcept SystemExit:\n"
            "    pass\nfrom ragqa.models.rerank import cross_encoder\n"
            "print('LOADED' if cross_encoder.cache_info().misses else 'NOT LOADED')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "RAGQA_HOME": str(home)}, timeout=120)
    assert "A²SG" in result.stdout and "NOT LOADED" in result.stdout, result.stderr


@pytest.mark.parametrize(("question", "title", "phrase"), [
    # Few words in common with the abstract beyond the name: the name alone finds the paper.
    ("What does CEITNet propose?", "CEITNet",
     "Cartesian Environment Interaction Tensor Network"),
    ("What does DVPD introduce?", "DVPD", "Dual-View Predictive Diffusion"),
    ("How much faster than PyTorch are the kernels EGG generates?", "EGG", "2.13×"),
])
def test_a_question_naming_a_system_answers_from_its_paper(seeded, question, title, phrase):
    answer = json.loads(seeded("ask", question, "--json").stdout)
    assert answer["citations"], answer["answer"]
    first = answer["citations"][0]
    assert first["title"] == title and phrase in first["quote"], first


def test_a_name_no_paper_holds_keeps_nothing_by_itself(seeded):
    answer = json.loads(seeded("ask", "What does ZorbaNet-7 propose?", "--json").stdout)
    assert not answer["citations"], answer["answer"]


def test_a_common_name_is_no_name(seeded, home):
    """A name-like word that many papers use ("LLM" in the seeds) says nothing about which
    paper is meant: only rare ones count."""
    from ragqa.config import load_settings
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.retrieval.retriever import Retriever
    from ragqa.retrieval.signals import named_terms

    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    index = Retriever(Store(settings, "default", make_encoder(settings))).lexical
    assert index.document_frequency("llm") > 2
    assert named_terms("Which LLM agents does CEITNet beat?", index) == [["ceitnet"]]
    # A name is its words as the collection has them ("τ-Voice": "voic"), one the papers lack none.
    assert named_terms("How many tasks does τ-Voice evaluate?", index) == [["voic"]]
    assert named_terms("What does ZorbaNet-7 propose?", index) == []


def test_a_share_is_answered_by_a_percentage(seeded):
    answer = json.loads(seeded("ask", "What share of the failures of voice agents stem from "
                               "agent behavior?", "--json").stdout)
    assert answer["citations"][0]["title"] == "τ-Voice"
    assert "79–90%" in answer["citations"][0]["quote"]


@pytest.mark.parametrize(("question", "topic"), [
    ("What does the paper on the training dynamics of infinitely wide networks introduce?",
     "the training dynamics of infinitely wide networks"),
    ("What does the DiffPool paper propose?", None),
])
def test_a_question_about_one_paper_is_a_fact_question(question, topic):
    from ragqa.retrieval.question import is_list_question, topic_of

    assert not is_list_question(question)
    if topic:
        assert topic_of(question) == topic


def test_a_paper_that_builds_on_another_proposes_what_it_names_after():
    """One detector for what the authors propose (sources.paper.PROPOSES): "we build on X"
    names prior work, so the contribution sentence and the quoted method are the proposal's."""
    from ragqa.answering.facts import answer_span
    from ragqa.sources.paper import contribution_sentence

    abstract = "We build on LoRA, a method for fine-tuning. We propose DoRA-X, which decomposes."
    assert contribution_sentence(abstract) == "We propose DoRA-X, which decomposes."
    sentence = "We build on LoRA, and we introduce DoRA-X, which decomposes weights."
    start, end = answer_span("What does the paper introduce?", sentence)
    assert sentence[start:end] == "DoRA-X"


def test_a_quoted_condition_starts_at_the_condition_not_at_only():
    """The condition a sentence states and the span quoted for it are one detector
    (facts._CONDITION): "only" alone ("with only 5% of the labels") is no condition."""
    from ragqa.answering.facts import answer_span

    question = "Under what condition does it converge?"
    for sentence in ("With only 5% of the labels, it converges when the step size is small, as "
                     "shown.", "It converges when the step size is small (Theorem 2)."):
        start, end = answer_span(question, sentence)
        assert sentence[start:end] == "when the step size is small"  # bold: no space inside
