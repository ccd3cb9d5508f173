"""Which questions ask for papers: the fitted model (retrieval/kinds.py) as shipped, read by the
product's own code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ragqa.resources import DATA_DIR
from ragqa.retrieval.kinds import WordingModel, list_question_model, wording_features
from ragqa.retrieval.question import is_list_question

FEATURE_KINDS = ("w:", "b:", "first:", "first2:", "last:", "len:", "end:")
RECORD = json.loads((DATA_DIR / "list_question_model.json").read_text(encoding="utf-8"))
BENCH = Path(__file__).resolve().parents[1] / "bench" / "understanding"


def test_the_shipped_model_names_its_features_and_its_embedder():
    assert RECORD["provenance"]["script"] == "bench/understanding/fit_list_question.py"
    assert RECORD["weights"] and all(name.startswith(FEATURE_KINDS) for name in RECORD["weights"])
    assert RECORD["sense"]["embedder"] == "local:all-MiniLM-L6-v2-int8"
    assert len(RECORD["sense"]["weights"]) == 384


def test_a_model_fitted_on_other_vectors_is_refused():
    other = {**RECORD, "sense": {**RECORD["sense"], "embedder": "openai:text-embedding-3-small"}}
    with pytest.raises(ValueError, match="refit it"):
        WordingModel.from_json(other)


def test_a_features_name_says_what_it_is():
    features = wording_features("Which papers compress the KV cache？")
    assert {"first:which", "first2:which papers", "w:papers", "b:kv cache", "last:?"} <= features
    assert "w:réduit" in wording_features("Le dropout réduit le surapprentissage.")


def test_the_shipped_model_reads_its_fresh_blind_set_as_the_fit_reported():
    """The product's reading (kinds.WordingModel) of the set no fit saw gives the figure the
    fit script wrote into the model file: the features are computed alike on both sides."""
    data = Path(__file__).resolve().parents[2] / "shared" / "data"
    if not (data / "scifact" / "queries.jsonl").is_file():
        pytest.skip("no SciFact claims at ../shared/data (the fit's other sources)")
    sys.path.insert(0, str(BENCH))
    import fit_list_question as fit

    rows = [r for r in fit.labelled(data) if r[0] == "fresh-report"]
    expected = RECORD["provenance"]["figures"]["reports"]["fresh-report"]
    assert len(rows) == expected["questions"] >= 150
    assert fit.accuracy(RECORD, rows) == pytest.approx(expected["model"], abs=0.01)


@pytest.mark.parametrize(("text", "expected"), [
    ("Looking for work on keeping robot grasps stable under slip", True),
    ("any work on pruning vision transformers?", True),
    ("Has anyone tried diffusion models for tabular data?", True),
    ("graph neural networks for traffic forecasting", True),
    # wordings that do not say "papers" (wordings2.jsonl's calibrate half, session 30)
    ("which methods speed up exact k-means clustering", True),
    ("What are the ways to estimate treatment effects from observational data?", True),
    ("what's its accuracy?", False),
    ("does it release code?", False),
    ("Dropout reduces overfitting in small networks.", False),
    ("Dropout reduces overfitting in small networks", False),
    ("How about those?", False),
    ("Do any of them use RL?", False),
    ("What does the DiffPool paper propose?", False),
    ("?", False),
    ("", False),
])
def test_questions_that_ask_for_papers_are_told_from_the_rest(text, expected):
    assert is_list_question(text) is expected


def test_a_long_paste_is_read_without_holding_its_whole_text():
    text = "Which papers study graph neural networks? " * 3000
    assert list_question_model().decides(text) is True
