"""The fitted models ship as files of named features with their provenance: the fact answer's
sentence model (ragqa/models/linear.py), whose features are exactly the ones the code computes
and whose names may not drift from the code's, and the follow-up kind model
(retrieval/kinds.py ChoiceModel), which reads a chat turn from its named features."""

import json

import pytest

from ragqa.answering.facts import FACT_SENTENCE_MODEL, SIGNALS, fact_scores, sentence_signals
from ragqa.answering.followups import FOLLOWUP_KIND_MODEL, followup_kind, kind_features
from ragqa.models.linear import NamedLinearModel, shipped_model, write_model
from ragqa.resources import DATA_DIR


def test_the_fact_model_names_the_code_features_and_its_script():
    names = (*SIGNALS, "cross_encoder")
    record = json.loads((DATA_DIR / FACT_SENTENCE_MODEL).read_text(encoding="utf-8"))
    assert set(record["weights"]) == set(names)
    assert record["provenance"]["script"] == "bench/reading/fit_facts.py"
    assert shipped_model(FACT_SENTENCE_MODEL).vector(list(names)).shape == (len(names),)


def test_a_model_whose_names_drift_from_the_code_is_refused():
    model = NamedLinearModel({"refers": 1.0, "selects": 2.0})
    with pytest.raises(ValueError, match="missing \\['ordinal'\\].*unknown \\[\\]"):
        model.vector(["refers", "selects", "ordinal"])
    with pytest.raises(ValueError, match="unknown \\['selects'\\]"):
        model.vector(["refers"])


def test_weights_follow_the_names_not_their_order():
    model = NamedLinearModel({"a": 1.0, "b": -2.0}, bias=0.5)
    assert model.score({"b": 1.0, "a": 3.0}) == pytest.approx(0.5 + 3.0 - 2.0)
    assert list(model.vector(["b", "a"])) == [-2.0, 1.0]


def test_write_model_round_trips_with_its_provenance(tmp_path):
    path = tmp_path / "m.json"
    write_model(path, NamedLinearModel({"x": 0.123456}, -1.0, {"script": "s.py"}))
    again = NamedLinearModel.from_json(json.loads(path.read_text(encoding="utf-8")))
    assert again.weights == {"x": 0.1235} and again.bias == -1.0
    assert again.provenance == {"script": "s.py"}
    assert not list(tmp_path.glob("*.tmp"))


def test_the_follow_up_kind_model_names_its_features_and_its_data():
    record = json.loads((DATA_DIR / FOLLOWUP_KIND_MODEL).read_text(encoding="utf-8"))
    assert record["kinds"] == ["leave", "select", "position", "about"]
    assert record["provenance"]["script"] == "bench/understanding/fit_followup_kind.py"
    # its cues are features the chat computes, by name (in_last and lift only against the last
    # papers of an index: tests/test_follow_ups.py runs them)
    cues = {name for name in record["weights"] if name.startswith("cue:")}
    assert cues - {"cue:in_last", "cue:lift"} <= set(kind_features("which of them use RL?", [],
                                                                   None))
    assert {"cue:refers", "cue:selects", "cue:place", "cue:in_last"} <= cues


@pytest.mark.parametrize(("turn", "kind"), [
    ("what dataset do they use?", "about"),
    ("which of those evaluate on speech?", "select"),
    ("the second one", "position"),
    ("ok, different question: papers on protein folding?", "leave"),
])
def test_the_follow_up_kind_model_reads_a_turn(turn, kind):
    assert followup_kind(turn, [], None) == kind


def test_fact_sentence_scores_weigh_the_figure_a_question_asks_for():
    """Asked "how much", the sentence with the figure outranks one with the same words."""
    question = "How much faster is the sampler?"
    sentences = ["The sampler is faster than prior work.", "The sampler is 3.5 times faster."]
    signals = sentence_signals(question, sentences, " ".join(sentences), "")
    assert signals[:, SIGNALS.index("figure")].tolist() == [0.0, 1.0]
    scores = fact_scores(signals, [0.0, 0.0])
    assert scores[1] > scores[0]


@pytest.mark.parametrize(("turn", "place"), [("3rd pls", 2), ("the middle one", 1),
                                             ("the one at the top", 0)])
def test_a_place_list_place_cannot_read_is_read_when_the_model_sees_one(turn, place):
    """The model reads these as a place; list_place's ordinal wording does not."""
    from ragqa.answering.followups import list_place, resolve

    shown = ["p1", "p2", "p3", "p4"]
    assert list_place(turn) is None
    resolution = resolve(turn, shown, None)
    assert (resolution.kind, resolution.papers) == ("about", (shown[place],))


def test_a_choice_model_file_that_drifts_from_the_code_is_refused_naming_the_file(tmp_path,
                                                                                  monkeypatch):
    from ragqa.errors import ServiceError
    from ragqa.retrieval import kinds

    record = json.loads((DATA_DIR / FOLLOWUP_KIND_MODEL).read_text(encoding="utf-8"))
    record["weights"]["cue:renamed"] = [0.0, 0.0, 0.0, 0.0]
    (tmp_path / "drifted.json").write_text(json.dumps(record), encoding="utf-8")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    # sense weights fitted on vectors ragqa does not make (SENSE_VECTORS: MiniLM, e5)
    record = json.loads((DATA_DIR / FOLLOWUP_KIND_MODEL).read_text(encoding="utf-8"))
    record["sense"]["embedder"] = "openai:text-embedding-3-small"
    (tmp_path / "other_vectors.json").write_text(json.dumps(record), encoding="utf-8")
    monkeypatch.setattr(kinds, "DATA_DIR", tmp_path)
    for name in ("drifted.json", "broken.json", "missing.json", "other_vectors.json"):
        with pytest.raises(ServiceError, match=name):
            kinds.choice_model(name, ("leave", "select", "position", "about"),
                               frozenset({"cue:refers"}))
