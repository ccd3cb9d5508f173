"""Which questions ask for papers: the fitted wording model (retrieval/kinds.py) as shipped."""

from __future__ import annotations

import json

import pytest

from ragqa.resources import DATA_DIR
from ragqa.retrieval.kinds import list_question_model, wording_features
from ragqa.retrieval.question import is_list_question

FEATURE_KINDS = ("w:", "b:", "first:", "first2:", "last:", "len:", "end:")


def test_the_shipped_model_says_how_it_was_fitted_and_names_its_features():
    record = json.loads((DATA_DIR / "list_question_model.json").read_text(encoding="utf-8"))
    provenance = record["provenance"]
    assert provenance["script"] == "bench/understanding/fit_list_question.py"
    assert provenance["figures"]["blind_report"]["questions"] >= 30
    assert provenance["figures"]["wordings_report"]["questions"] >= 200
    assert record["weights"] and all(name.startswith(FEATURE_KINDS) for name in record["weights"])
    assert 0 < record["threshold"] < 1


def test_a_features_name_says_what_it_is():
    features = wording_features("Which papers compress the KV cache?")
    assert {"first:which", "first2:which papers", "w:papers", "b:kv cache", "last:?"} <= features


@pytest.mark.parametrize(("text", "expected"), [
    # a miss of the model's (its held-out accuracy is 0.83 on new wordings): kept, strictly
    pytest.param("What is known about reward hacking when models are tuned from human "
                 "feedback?", True, marks=pytest.mark.xfail(strict=True, reason="a known miss")),
    ("Looking for work on keeping robot grasps stable under slip", True),
    ("any work on pruning vision transformers?", True),
    ("Has anyone tried diffusion models for tabular data?", True),
    ("graph neural networks for traffic forecasting", True),
    ("what's its accuracy?", False),
    ("the third one", False),
    ("does it release code?", False),
    ("Dropout reduces overfitting in small networks.", False),
    ("What does the DiffPool paper propose?", False),
])
def test_questions_that_ask_for_papers_are_told_from_the_rest(text, expected):
    assert is_list_question(text) is expected


def test_the_decision_is_the_models_probability_against_its_threshold():
    model = list_question_model()
    text = "Looking for work on keeping robot grasps stable under slip"
    assert model.decides(text) is (model.probability(text) >= model.threshold)
