"""`ragqa eval`: the metric functions against hand-computed values, the BEIR readers, and the
whole command on a tiny BEIR set built from the seeds (real ingest, real retrieval)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from ragqa.errors import CorpusError
from ragqa.evaluate import (
    dcg,
    mean_metrics,
    mrr_at_k,
    ndcg_at_k,
    read_qrels,
    read_queries,
    recall_at_k,
)
from ragqa.sources import read_sources

from .conftest import SEEDS, Ragqa

LOG2_3 = math.log2(3)

# ---------------------------------------------------------------- metrics, by hand


def test_dcg_discounts_by_log2_of_rank_plus_one():
    assert dcg([]) == 0.0
    assert dcg([3, 2, 1]) == pytest.approx(3 + 2 / LOG2_3 + 1 / 2)  # 5.7619


def test_ndcg_binary():
    # DCG 1/log2(2) + 1/log2(4) = 1.5; ideal 1 + 1/log2(3) = 1.6309
    assert ndcg_at_k(["a", "x", "b"], {"a": 1, "b": 1}) == pytest.approx(1.5 / (1 + 1 / LOG2_3))
    assert ndcg_at_k(["a", "x", "b"], {"a": 1, "b": 1}) == pytest.approx(0.919721, abs=1e-6)
    assert ndcg_at_k(["a", "b"], {"a": 1, "b": 1}) == 1.0
    assert ndcg_at_k(["x", "y"], {"a": 1}) == 0.0


def test_ndcg_uses_graded_gains():
    judged = {"a": 2, "b": 1, "c": 0}
    # b (gain 1) before a (gain 2): DCG 1 + 2/log2(3) = 2.2619; ideal 2 + 1/log2(3) = 2.6309
    assert ndcg_at_k(["b", "a", "c"], judged) == pytest.approx(0.859719, abs=1e-6)
    assert ndcg_at_k(["a", "b", "c"], judged) == 1.0
    # With binary gains both orders would score 1.0: the grade matters.
    assert ndcg_at_k(["b", "a"], judged) < ndcg_at_k(["a", "b"], judged)
    # Only the grade-1 document found: 1 / 2.6309
    assert ndcg_at_k(["x", "b"], judged) == pytest.approx((1 / LOG2_3) / (2 + 1 / LOG2_3))


def test_ties_in_grades_make_either_order_ideal():
    judged = {"a": 1, "b": 1, "c": 2}
    assert ndcg_at_k(["c", "a", "b"], judged) == ndcg_at_k(["c", "b", "a"], judged) == 1.0
    # Tied grades in the ideal list: 2, 1, 1 whichever of a, b comes first.
    assert ndcg_at_k(["a", "c"], judged) == pytest.approx(
        (1 + 2 / LOG2_3) / (2 + 1 / LOG2_3 + 1 / 2))


def test_ideal_dcg_is_cut_at_k():
    judged = {"a": 1, "b": 1, "c": 1}
    assert ndcg_at_k(["a", "b"], judged, k=2) == 1.0  # the ideal top 2 holds 2 of the 3
    assert recall_at_k(["a", "b"], judged, k=2) == pytest.approx(2 / 3)


def test_non_positive_grades_are_not_relevant_and_never_subtract():
    judged = {"a": 1, "bad": -1, "zero": 0}
    assert ndcg_at_k(["bad", "zero", "a"], judged) == pytest.approx(0.5)  # 1/log2(4)
    assert recall_at_k(["bad", "zero"], judged, 10) == 0.0
    assert mrr_at_k(["bad", "zero", "a"], judged) == pytest.approx(1 / 3)
    assert ndcg_at_k(["a"], {"zero": 0}) == 0.0 and recall_at_k(["a"], {"zero": 0}, 10) == 0.0


def test_a_document_listed_twice_counts_once():
    judged = {"a": 1, "b": 1}
    assert ndcg_at_k(["a", "a", "b"], judged) == 1.0
    assert mrr_at_k(["x", "x", "a"], judged) == 0.5
    assert recall_at_k(["a", "a"], judged, 2) == 0.5


def test_recall_at_k():
    judged = {"a": 1, "b": 2, "c": 1, "d": 0}
    ranked = ["x", "a", "d", "b", "y", "c"]
    assert recall_at_k(ranked, judged, 1) == 0.0
    assert recall_at_k(ranked, judged, 4) == pytest.approx(2 / 3)
    assert recall_at_k(ranked, judged, 100) == 1.0
    assert recall_at_k([], judged, 10) == 0.0


def test_mrr_at_k():
    judged = {"a": 1}
    assert mrr_at_k(["a", "x"], judged) == 1.0
    assert mrr_at_k(["x", "y", "a"], judged) == pytest.approx(1 / 3)
    assert mrr_at_k(["x", "y", "a"], judged, k=2) == 0.0


def test_mean_metrics_average_over_the_judged_queries():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 1}, "q3": {"d": 1}}
    run = {"q1": ["a"], "q2": ["x", "b"]}  # q3 has no run: it scores 0
    means = mean_metrics(run, qrels, recall_ks=(1, 10))
    assert list(means) == ["ndcg@10", "recall@1", "recall@10", "mrr@10"]
    q2_ndcg = (1 / LOG2_3) / (1 + 1 / LOG2_3)
    assert means["ndcg@10"] == pytest.approx((1 + q2_ndcg + 0) / 3)
    assert means["recall@1"] == pytest.approx(1 / 3)
    assert means["recall@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert means["mrr@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert mean_metrics({}, {}) == {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0,
                                    "mrr@10": 0.0}


# ---------------------------------------------------------------- readers


def test_read_qrels_beir_with_header_and_trec(tmp_path):
    beir = tmp_path / "beir.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\n\nq2\td1\t0\n")
    assert read_qrels(beir) == {"q1": {"d1": 1, "d2": 2}, "q2": {"d1": 0}}
    trec = tmp_path / "trec.txt"
    trec.write_text("q1 0 d1 1\nq1 0 d2 -1\n")
    assert read_qrels(trec) == {"q1": {"d1": 1, "d2": -1}}


def test_read_queries(tmp_path):
    path = tmp_path / "q.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"_id": 1, "text": "a claim", "split": "test"}\n\n'
                                   b'{"_id": "2", "text": "another"}\n'))
    assert read_queries(path) == {"1": "a claim", "2": "another"}


@pytest.mark.parametrize("reader, content, line, words", [
    (read_qrels, "q1\td1\t1\nq1\td2\n", 2, "expected 3 fields"),
    (read_qrels, "q1\td1\t1\nq1\td2\tscore\n", 2, "whole number"),
    (read_qrels, "q1\td1\t1.5\n", 1, "whole number"),
    (read_qrels, "q1\td1\t1\nq1\td1\t2\n", 2, "twice"),
    (read_queries, '{"_id": "1", "text": "x"}\nnot json\n', 2, "malformed JSON"),
    (read_queries, '{"_id": "1"}\n', 1, "'_id' and a 'text'"),
    (read_queries, '{"_id": "1", "text": " "}\n', 1, "empty text"),
    (read_queries, '{"_id": "1", "text": "x"}\n{"_id": "1", "text": "y"}\n', 2,
     "duplicate query id"),
    (read_queries, '[1, 2]\n', 1, "JSON object"),
    (read_queries, "", 0, "no queries"),
    (read_qrels, "query-id\tcorpus-id\tscore\n", 0, "no judgements"),
])
def test_reader_errors_name_the_file_and_line(tmp_path, reader, content, line, words):
    path = tmp_path / "input.txt"
    path.write_text(content)
    with pytest.raises(CorpusError) as caught:
        reader(path)
    where = f"{path}:{line}: " if line else f"{path}: "
    assert str(caught.value).startswith(where) and words in str(caught.value)


# ---------------------------------------------------------------- the command, end to end

# Twelve seed abstracts as a BEIR corpus; BEIR ids that are not the ragqa hash ids, so that the
# test sees the results mapped back to the corpus `_id`s.
DOCS = {"d01": "Moshi-RAG", "d02": "τ-Voice", "d03": "A²SG", "d04": "DiceFormer",
        "d05": "CEITNet", "d06": "TACE-v1-OAM-M", "d07": "EGG", "d08": "ZipRerank",
        "d09": "Hibiki-Zero", "d10": "CPO", "d11": "DVPD", "d12": "TableAgent-Bench"}
QUERIES = {
    "q-duplex": "full-duplex spoken dialogue agents that listen and speak at the same time",
    "q-snn": "training spiking neural networks",
    "q-kernel": "LLM agents that write high-performance GPU kernels",
    "q-table": "benchmark for agentic table question answering over multi-table environments",
    "q-unjudged": "a query nobody judged",
    "q-irrelevant": "a query judged, with nothing relevant",
}
QRELS = [("q-duplex", "d01", 2), ("q-duplex", "d02", 1), ("q-snn", "d03", 1),
         ("q-snn", "d04", 1), ("q-kernel", "d07", 1), ("q-table", "d12", 1),
         ("q-irrelevant", "d10", 0), ("q-not-in-queries", "d05", 1)]
EASY = ("q-kernel", "q-table")  # one relevant abstract each, named in the query


def _write_beir(folder: Path, flat: bool = False) -> dict[str, Path]:
    """The BEIR layout (corpus.jsonl.gz, queries.jsonl, qrels/test.tsv) or SciFact's flat one."""
    folder.mkdir(parents=True, exist_ok=True)
    by_title = {p.title: p for p in read_sources([SEEDS]).papers}
    lines = [json.dumps({"_id": doc, "title": title, "text": by_title[title].text},
                        ensure_ascii=False) for doc, title in DOCS.items()]
    corpus = folder / "corpus.jsonl.gz"
    corpus.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    queries = folder / ("queries_test.jsonl" if flat else "queries.jsonl")
    queries.write_text("".join(json.dumps({"_id": q, "text": t}) + "\n"
                               for q, t in QUERIES.items()), encoding="utf-8")
    qrels = folder / ("qrels_test.tsv" if flat else "qrels/test.tsv")
    qrels.parent.mkdir(exist_ok=True)
    qrels.write_text("query-id\tcorpus-id\tscore\n"
                     + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in QRELS), encoding="utf-8")
    return {"corpus": corpus, "queries": queries, "qrels": qrels}


@pytest.fixture(scope="module")
def beir(tmp_path_factory) -> Path:
    return _write_beir(tmp_path_factory.mktemp("data") / "tinybeir")["corpus"].parent


@pytest.fixture(scope="module")
def eval_home(tmp_path_factory) -> Ragqa:
    """One data folder for the end-to-end tests of this module: ingesting costs seconds."""
    return Ragqa({"RAGQA_HOME": str(tmp_path_factory.mktemp("evalhome") / "home")})


@pytest.fixture(scope="module")
def first_run(eval_home, beir) -> dict:
    result = eval_home("eval", str(beir), "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_eval_json_shape_and_counts(first_run, beir):
    payload = first_run
    assert set(payload) >= {"dataset", "collection", "corpus", "queries", "qrels", "ks",
                            "metrics", "corpus_docs", "collection_papers", "queries_total",
                            "queries_evaluated", "skipped_no_qrels", "skipped_no_relevant",
                            "qrels_without_query", "relevant_not_in_corpus", "ingest",
                            "search_seconds"}
    assert payload["dataset"] == "tinybeir" and payload["collection"] == "eval-tinybeir"
    assert payload["ks"] == [10, 100]
    assert list(payload["metrics"]) == ["ndcg@10", "recall@10", "recall@100", "mrr@10"]
    assert payload["corpus_docs"] == payload["collection_papers"] == 12
    assert payload["queries_total"] == 6 and payload["queries_evaluated"] == 4
    assert payload["skipped_no_qrels"] == 1 and payload["skipped_no_relevant"] == 1
    assert payload["qrels_without_query"] == 1 and payload["relevant_not_in_corpus"] == 0
    assert payload["ingest"]["added"] == 12
    assert payload["qrels"] == str(beir / "qrels" / "test.tsv")


def test_eval_metrics_come_from_the_real_ranking(first_run):
    metrics = first_run["metrics"]
    # Twelve documents, every relevant one named by its query: all are in the top 10.
    assert metrics["recall@10"] == metrics["recall@100"] == 1.0
    assert 0.0 < metrics["ndcg@10"] <= 1.0 and 0.0 < metrics["mrr@10"] <= 1.0
    assert metrics["ndcg@10"] > 0.8 and metrics["mrr@10"] > 0.8


def test_eval_agrees_with_search_no_cut_and_maps_ids_back(eval_home, first_run):
    """The metrics of `eval` are those of the rankings `search --no-cut` shows: the same
    retrieval, with results mapped back to the corpus `_id`s."""
    run = {}
    for qid in ("q-duplex", "q-snn", "q-kernel", "q-table"):
        result = eval_home("search", QUERIES[qid], "--no-cut", "-k", "100", "--json",
                           "-c", "eval-tinybeir")
        assert result.exit_code == 0, result.output
        run[qid] = [r["paper_id"] for r in json.loads(result.stdout)["results"]]
    assert all(set(ranked) == set(DOCS) for ranked in run.values())
    for qid in EASY:
        assert run[qid][0] == next(d for q, d, _ in QRELS if q == qid)
    qrels = {}
    for q, d, s in QRELS:
        if q in run:
            qrels.setdefault(q, {})[d] = s
    expected = mean_metrics(run, qrels, (10, 100))
    assert first_run["metrics"] == {k: round(v, 4) for k, v in expected.items()}


def test_eval_rerun_reuses_the_index_and_k_is_configurable(eval_home, beir, first_run):
    result = eval_home("eval", str(beir), "--json", "--k", "1,5", "--k", "12")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["ingest"]["added"] == 0 and payload["ingest"]["unchanged"] == 12
    assert payload["ks"] == [1, 5, 12]
    assert list(payload["metrics"]) == ["ndcg@10", "recall@1", "recall@5", "recall@12",
                                        "mrr@10"]
    assert payload["metrics"]["ndcg@10"] == first_run["metrics"]["ndcg@10"]
    # q-duplex has two relevant documents: one rank can hold only half of them.
    assert payload["metrics"]["recall@1"] <= (1 + 0.5 + 1 + 1) / 4
    assert payload["metrics"]["recall@12"] == 1.0


def test_eval_text_output_is_a_table(eval_home, beir, first_run):
    result = eval_home("eval", str(beir))
    assert result.exit_code == 0, result.output
    out = result.stdout
    for label in ("nDCG@10", "recall@10", "recall@100", "MRR@10"):
        assert label in out
    assert f"{first_run['metrics']['ndcg@10']:.4f}" in out
    assert "queries skipped (no judgements): 1" in out
    assert "eval-tinybeir" in out and "12 unchanged" in out


def test_eval_with_explicit_paths_and_a_chosen_collection(ragqa, tmp_path):
    files = _write_beir(tmp_path / "scifact-like", flat=True)
    result = ragqa("eval", "--corpus", str(files["corpus"]), "--queries", str(files["queries"]),
                   "--qrels", str(files["qrels"]), "--collection", "mine", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["collection"] == "mine" and payload["dataset"] == "scifact-like"
    assert payload["queries_evaluated"] == 4 and payload["metrics"]["recall@10"] == 1.0
    # The folder with SciFact's flat names works as well, into the same default collection.
    flat = ragqa("eval", str(tmp_path / "scifact-like"), "--json", "-q")
    assert flat.exit_code == 0, flat.output
    assert json.loads(flat.stdout)["collection"] == "eval-scifact-like"


# ---------------------------------------------------------------- bad input: exit 2, one line


def _one_line_error(result, *words: str) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0]
    return lines[0]


def test_usage_errors(ragqa, tmp_path):
    _one_line_error(ragqa("eval"), "--corpus")
    _one_line_error(ragqa("eval", "--corpus", "x.jsonl"), "--queries")
    _one_line_error(ragqa("eval", str(tmp_path / "missing")), "no such folder")
    _one_line_error(ragqa("eval", str(tmp_path)), "no corpus file")
    files = _write_beir(tmp_path / "set")
    _one_line_error(ragqa("eval", str(tmp_path / "set"), "--k", "0"), "--k")
    _one_line_error(ragqa("eval", str(tmp_path / "set"), "--k", "ten"), "--k")
    _one_line_error(ragqa("eval", str(tmp_path / "set"), "--split", "dev"), "dev qrels")
    _one_line_error(ragqa("eval", str(tmp_path / "set"), "--split", "../x"), "--split")
    _one_line_error(ragqa("eval", str(tmp_path / "set"), "--qrels", str(tmp_path / "no.tsv")),
                    f"{tmp_path / 'no.tsv'}: no such file")
    assert files["corpus"].is_file()


@pytest.mark.parametrize("which, content, where", [
    ("queries", '{"_id": "q1", "text": "x"}\n{"_id": "q2",\n', "queries.jsonl:2: malformed JSON"),
    ("qrels", "query-id\tcorpus-id\tscore\nq1\td01\t1\nq1\td02\tyes\n",
     "test.tsv:3: the score must be a whole number"),
    ("corpus", '{"_id": "d1", "title": "t", "text": "an abstract"}\n{"_id": "d2", "title": "t"}\n',
     "corpus.jsonl:2: record has no text"),
    ("corpus", '{"_id": "d1", "text": "an abstract"}\n{"_id": "d1", "text": "another one"}\n',
     "corpus.jsonl:2: duplicate paper id"),
])
def test_bad_files_are_one_line_with_file_and_line(ragqa, home, tmp_path, which, content,
                                                   where):
    files = _write_beir(tmp_path / "set")
    if which == "corpus":
        files["corpus"].unlink()
        files["corpus"] = tmp_path / "set" / "corpus.jsonl"
    files[which].write_text(content, encoding="utf-8")
    result = ragqa("eval", str(tmp_path / "set"), "--json")
    line = _one_line_error(result, where)
    assert line.startswith("ragqa: error: ")
    assert result.stdout == ""
    assert not (home / "chroma").exists()  # found before any store was opened


def test_skip_bad_counts_the_skipped_corpus_records(ragqa, tmp_path):
    files = _write_beir(tmp_path / "set")
    good = gzip.decompress(files["corpus"].read_bytes()).decode()
    files["corpus"].unlink()
    (tmp_path / "set" / "corpus.jsonl").write_text(good + '{"_id": "d99", "title": "no text"}\n',
                                                  encoding="utf-8")
    refused = ragqa("eval", str(tmp_path / "set"), "--json")
    _one_line_error(refused, "corpus.jsonl:13: record has no text")
    result = ragqa("eval", str(tmp_path / "set"), "--json", "--skip-bad")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["skipped_bad"] == 1 and payload["corpus_docs"] == 12
