"""How written answers from the model at OPENAI_BASE_URL fare on the seeds' dev questions.

For list questions (bench/lists/seeds.questions.jsonl, gold from seeds.qrels.tsv), fact
questions and a chat and a summary (bench/reading/seeds.json), and a Chinese question, it
reports per question: the papers cited against gold (and the offline list's recall beside the
LLM's), citations of sources that were not retrieved (dropped by the check; after it: 0),
repaired and unsupported sentences, the degenerate answers caught (and what replaced them), the
answer's language, and the time to the first token. It also counts what must never be shown:
an answer that is a bare citation or a bare number, and a sentence that states a fact with no
citation and no flag.

    bench/local_llm.sh serve
    OPENAI_BASE_URL=http://127.0.0.1:8088/v1 python bench/llm_quality.py --limit 12

The local model reads prompts at ~20 tokens/s on a loaded 2-core machine: a question takes
one to three minutes; --limit bounds the run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LISTS = REPO / "bench" / "lists"
READING = REPO / "bench" / "reading" / "seeds.json"
CHINESE = [("哪些论文研究脉冲神经网络？", "s-03")]  # "Which papers study spiking neural networks?"


def _questions(limit: int) -> list[dict]:
    """List, absent, fact and Chinese questions, interleaved so a bounded run has each kind."""
    gold: dict[str, set[str]] = {}
    with (LISTS / "seeds.qrels.tsv").open(encoding="utf-8") as handle:
        for qid, pid, grade in csv.reader(handle, delimiter="\t"):
            if int(grade) > 0:
                gold.setdefault(qid, set()).add(pid)
    lists = [json.loads(line) for line in (LISTS / "seeds.questions.jsonl").open(encoding="utf-8")]
    reading = json.loads(READING.read_text(encoding="utf-8"))
    kinds = {
        "list": [{"kind": "list", "question": q["question"], "gold_ids": gold.get(q["id"], set())}
                 for q in lists if q["kind"] == "list"],
        "absent": [{"kind": "absent", "question": q["question"], "gold_ids": set()}
                   for q in lists if q["kind"] == "absent"],
        "fact": [{"kind": "fact", "question": f["question"], "gold_titles": {f["title"]},
                  "phrase": f["phrase"]} for f in reading["facts"]],
        "chinese": [{"kind": "list", "question": q, "gold_ids": gold.get(qid, set()),
                     "chinese": True} for q, qid in CHINESE],
    }
    order = ["list", "fact", "list", "absent", "fact", "chinese", "list", "fact", "list",
             "absent", "fact", "list", "fact", "list", "fact"]
    out, used = [], {k: 0 for k in kinds}
    for kind in order:
        if len(out) >= limit:
            break
        if used[kind] < len(kinds[kind]):
            out.append(kinds[kind][used[kind]])
            used[kind] += 1
    return out


def _checks(answer) -> dict:
    """What the shown answer must never be: bare, or holding an uncited, unflagged claim."""
    from ragqa.answering.answer import answer_sentences, cited_numbers
    from ragqa.answering.citations import degenerate_reason, states_fact
    from ragqa.models.language import detect_language

    flagged = {u["sentence"] for u in answer.unsupported}
    unflagged = [s for s in answer_sentences(answer.text)
                 if states_fact(s) and not cited_numbers(s) and s not in flagged
                 and not s.startswith(("None of the", "The model's answer"))]
    retrieved = {h.paper.paper_id for h in answer.hits}
    return {"bare": degenerate_reason(answer.text, "English", lambda t: "English")
            in ("it was only citations", "it was only a number"),
            "unflagged_uncited": len(unflagged),
            "invented_after_check": sum(c.paper_id not in retrieved for c in answer.citations),
            "language": detect_language(answer.text)}


def _seconds(ms: int | None) -> float | None:
    """None when the model was not asked (nothing retrieved: no prompt to send)."""
    return None if ms is None else round(ms / 1000, 1)


def _ask(retriever, llm, item: dict) -> dict:
    from ragqa.answering.answer import answer_question

    offline = answer_question(retriever, item["question"]) if not item.get("chinese") else None
    answer = answer_question(retriever, item["question"], llm=llm, on_token=lambda t: None)
    cited_ids = {c.paper_id for c in answer.citations}
    cited_titles = [c.title for c in answer.citations]
    row = {"kind": item["kind"], "question": item["question"], "cited": cited_titles,
           "fallback": answer.fallback, "dropped": answer.dropped_citations,
           "repaired": len(answer.repaired), "unsupported": len(answer.unsupported),
           "first_token_s": _seconds(answer.timings.get("first_token_ms")),
           "total_s": _seconds(answer.timings.get("total_ms")),
           "prompt_tokens": answer.timings.get("prompt_tokens"),
           "notice": answer.notice, "answer": answer.text, **_checks(answer)}
    if "gold_ids" in item:
        gold = item["gold_ids"]
        row["gold"] = len(gold)
        row["recall"] = round(len(cited_ids & gold) / len(gold), 2) if gold else None
        row["precision"] = round(len(cited_ids & gold) / len(cited_ids), 2) if cited_ids else None
        if offline is not None and gold:
            row["offline_recall"] = round(len({c.paper_id for c in offline.citations} & gold)
                                          / len(gold), 2)
        if not gold:
            row["abstained"] = not answer.citations
    else:
        row["gold_cited"] = bool(item["gold_titles"] & set(cited_titles))
        row["phrase_quoted"] = item["phrase"] in answer.text
    return row


def _chat(retriever, llm, turns: list[dict]) -> list[dict]:
    from ragqa.answering.chat import ask_in_session, new_session

    session = new_session("default")
    rows = []
    for turn in turns:
        answer, record = ask_in_session(session, turn["say"], retriever, llm)
        cited = [c.title for c in answer.citations]
        rows.append({"kind": "chat", "question": turn["say"], "standalone": record.standalone,
                     "cited": cited, "gold_cited": bool(set(turn["cites_any"]) & set(cited)),
                     "fallback": answer.fallback, "repaired": len(answer.repaired),
                     "unsupported": len(answer.unsupported), "dropped": answer.dropped_citations,
                     "first_token_s": _seconds(answer.timings.get("first_token_ms")),
                     **_checks(answer)})
    return rows


def _summary(retriever, llm, topic: str, gold: list[str]) -> dict:
    from ragqa.answering.summarize import summarize

    started = time.monotonic()
    summary = summarize(retriever, topic, llm=llm)
    cited = [p.title for p in summary.references] if hasattr(summary, "references") else []
    return {"kind": "summary", "question": topic, "themes": [t.name for t in summary.themes],
            "cited": cited, "gold": len(gold),
            "recall": round(len(set(cited) & set(gold)) / len(gold), 2) if gold else None,
            "dropped": getattr(summary, "dropped_citations", 0), "llm_calls": summary.llm_calls,
            "repaired": sum(t.repaired for t in summary.themes),
            "unsupported": sum(len(t.unsupported) for t in summary.themes),
            "total_s": round(time.monotonic() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=12, help="ask questions (default 12)")
    parser.add_argument("--no-ask", action="store_true")
    parser.add_argument("--no-chat", action="store_true")
    parser.add_argument("--no-summary", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" /
                        "llm_quality.json")
    args = parser.parse_args()
    if not os.environ.get("OPENAI_BASE_URL"):
        sys.exit("llm_quality: set OPENAI_BASE_URL to the model's endpoint")
    home = Path(tempfile.mkdtemp(prefix="ragqa-llm-quality-"))
    os.environ.update({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": str(home / "no.env"),
                       "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "none")})
    from typer.testing import CliRunner

    from ragqa.config import load_settings
    from ragqa.faces.cli import app
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.models.llm import make_llm
    from ragqa.retrieval.retriever import Retriever

    assert CliRunner().invoke(app, ["ingest", "--seeds", "--quiet"]).exit_code == 0
    settings = load_settings()
    retriever = Retriever(Store(settings, "default", make_encoder(settings)))
    llm = make_llm(settings)
    reading = json.loads(READING.read_text(encoding="utf-8"))
    rows: list[dict] = []

    def keep(row: dict) -> None:
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("answer", "notice")},
                         ensure_ascii=False), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"model": llm.description, "rows": rows},
                                       ensure_ascii=False, indent=1), encoding="utf-8")

    for item in [] if args.no_ask else _questions(args.limit):
        keep(_ask(retriever, llm, item))
    if not args.no_chat:
        for row in _chat(retriever, llm, reading["chats"][1][:2]):
            keep(row)
    if not args.no_summary:
        keep(_summary(retriever, llm, "spiking neural networks",
                      reading["summaries"]["spiking neural networks"]))
    _report(rows)


def _report(rows: list[dict]) -> None:
    asks = [r for r in rows if r["kind"] in ("list", "fact", "absent", "chat")]
    lists = [r for r in asks if r.get("recall") is not None]
    facts = [r for r in asks if "gold_cited" in r and r["kind"] == "fact"]

    def mean(values):
        values = [v for v in values if v is not None]
        return round(sum(values) / len(values), 2) if values else None

    print(json.dumps({
        "questions": len(asks),
        "list_recall_llm": mean(r["recall"] for r in lists),
        "list_recall_offline": mean(r.get("offline_recall") for r in lists),
        "list_precision_llm": mean(r["precision"] for r in lists),
        "fact_gold_cited": f"{sum(r['gold_cited'] for r in facts)}/{len(facts)}",
        "absent_abstained": f"{sum(r.get('abstained', False) for r in asks)}/"
                            f"{sum(r['kind'] == 'absent' for r in asks)}",
        "degenerate_caught": sum(bool(r.get("fallback")) for r in asks),
        "dropped_citations": sum(r.get("dropped", 0) for r in asks),
        "invented_after_check": sum(r.get("invented_after_check", 0) for r in asks),
        "repaired": sum(r.get("repaired", 0) for r in asks),
        "unsupported": sum(r.get("unsupported", 0) for r in asks),
        "bare_answers_shown": sum(r.get("bare", False) for r in asks),
        "unflagged_uncited_claims": sum(r.get("unflagged_uncited", 0) for r in asks),
        "median_first_token_s": _median([r["first_token_s"] for r in asks]),
        "max_first_token_s": max((r["first_token_s"] for r in asks
                                  if r.get("first_token_s") is not None), default=None),
    }, ensure_ascii=False, indent=1))


def _median(values: list) -> float | None:
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else None


if __name__ == "__main__":
    main()
