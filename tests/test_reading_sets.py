"""The NeurIPS 2018 reading dev set (bench/reading/nips2018.json) holds what it claims.

Its shape is checked always; its labels against the slice of ../shared/data/mlconf when that
data is there (a fact's phrase is in its paper's abstract, a near miss's terms in none).
"""

from __future__ import annotations

import copy
import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

READING = Path(__file__).resolve().parents[1] / "bench" / "reading"


def _checker():
    spec = importlib.util.spec_from_file_location("check_nips2018",
                                                  READING / "check_nips2018.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECK = _checker()
DATA = json.loads((READING / "nips2018.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def papers() -> dict[str, dict]:
    if not (CHECK.DEFAULT_DATA / "corpus.jsonl.gz").is_file():
        pytest.skip(f"no mlconf data at {CHECK.DEFAULT_DATA}")
    return CHECK.load_slice(CHECK.DEFAULT_DATA)


def _all_ids(data: dict) -> list[str]:
    ids = [f["paper_id"] for f in data["facts"]]
    ids += [pid for hit in data["near_hits"] for pid in hit["paper_ids"]]
    ids += [pid for chat in data["chats"] for turn in chat for pid in turn["cites_any"]]
    ids += [pid for s in data["summaries"] for pid in s["paper_ids"]]
    return ids


def test_the_set_has_the_cases_and_mix_it_promises():
    kinds = Counter(f["kind"] for f in DATA["facts"])
    assert len(DATA["facts"]) >= 25
    assert kinds["quantity"] >= 10 and min(kinds[k] for k in ("comparison", "propose",
                                                                "other")) >= 5
    assert len(DATA["near_misses"]) >= 15
    assert all(m["absent_terms"] for m in DATA["near_misses"])
    assert len(DATA["near_hits"]) >= 15
    assert all(1 <= len(h["paper_ids"]) <= 5 for h in DATA["near_hits"])
    assert len(DATA["chats"]) >= 6 and all(len(c) == 3 for c in DATA["chats"])
    assert len(DATA["summaries"]) == 4 and all(s["paper_ids"] for s in DATA["summaries"])
    # Only NeurIPS 2018 papers: ICML 2019 is held out for independent evaluation.
    assert all(pid.startswith("nips2018-") for pid in _all_ids(DATA))


def test_every_label_holds_on_the_slice(papers):
    assert len(papers) == 1001
    assert CHECK.check(DATA, papers) == []


def test_the_checker_catches_a_wrong_phrase_and_a_present_term(papers):
    broken = copy.deepcopy(DATA)
    broken["facts"][0]["phrase"] = "12345.6%"
    broken["near_misses"][0]["absent_terms"].append("convolutional")
    broken["near_hits"][0]["paper_ids"].append("acl2022-1")
    problems = CHECK.check(broken, papers)
    assert len(problems) == 3
    assert "'12345.6%' is not in the abstract" in problems[0]
    assert "'convolutional' occurs in" in problems[1]
    assert "acl2022-1 is not a paper of the slice" in problems[2]
