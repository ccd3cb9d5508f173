"""The translate prompt against a real model (issue 14 item 9): the Chinese, Japanese and German
dev questions of bench/multilingual/ translated by the model as `ragqa ask` translates them,
recorded, then checked.

    bench/local_llm.sh serve     # or any OpenAI-compatible server
    OPENAI_BASE_URL=http://127.0.0.1:8088/v1 OPENAI_API_KEY=none \
        python bench/llm_translation.py record [--limit N]  # bench/multilingual/translations.json
    python bench/llm_translation.py check --home DIR             # no model needed

`record` sends each question through the product's own call (prompts/translate.txt,
ragqa.models.llm)
and keeps the replies with the model's name, so `check` can be re-run without the model.

`check` measures, per question, what the translation kept of the question's topic:
- `terms_kept`: the share of the English original's content words (its BM25 terms) that the
  translation holds: the key-term loss the issue names ("脉冲神经网络" -> "pulse neural networks"
  keeps "neural" and "network" but loses "spiking");
- `similarity`: the multilingual embedder's cosine between the question and its translation;
- on the list questions of the NeurIPS 2018 / ACL 2022 / seeds dev sets (collections of DIR, as
  bench/lists/eval.py builds them): list recall of the translation alone, of the multilingual
  vector alone, and of both merged (what `ask` does with an LLM), next to the English original's.
It then reports whether a similarity floor would tell the lossy translations apart: the floor
chosen on half of the questions (by id hash) and its effect reported on the other half.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MULTI = HERE / "multilingual"
QUESTIONS = Path(os.environ.get("RAGQA_TRANSLATED_QUESTIONS") or MULTI)
RECORDED = MULTI / "translations.json"
SETS = {"seeds": "seeds", "nips2018": "nips2018", "acl2022": "acl2022"}
LANGUAGES = ("zh", "ja", "de")


def questions() -> list[dict]:
    """Every translated list question, with its English original."""
    out = []
    for name in SETS:
        english = {q["id"]: q for q in map(json.loads, (HERE / "lists" / f"{name}.questions.jsonl")
                                           .read_text(encoding="utf-8").splitlines())}
        for language in LANGUAGES:
            path = QUESTIONS / f"{name}.{language}.jsonl"
            if not path.is_file():
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                q = json.loads(line)
                if q["id"] in english:
                    out.append({"set": name, "language": language, "id": q["id"],
                                "kind": english[q["id"]].get("kind", "list"),
                                "question": q["question"],
                                "english": english[q["id"]]["question"]})
    return out


def record(limit: int, model_name: str) -> int:
    from ragqa.config import load_settings
    from ragqa.models.llm import make_llm
    from ragqa.prompts import load_prompt

    settings = load_settings()
    llm = make_llm(settings)
    if llm is None:
        print("no LLM configured: set OPENAI_BASE_URL (bench/local_llm.sh serve)", file=sys.stderr)
        return 2
    done = json.loads(RECORDED.read_text(encoding="utf-8")) if RECORDED.is_file() else {}
    replies = done.setdefault("translations", {})
    done["model"] = model_name or llm.description
    todo = [q for q in questions() if f"{q['set']}/{q['language']}/{q['id']}" not in replies]
    for i, q in enumerate(todo[:limit or None]):
        started = time.monotonic()
        text = llm.complete(load_prompt("translate", settings).fill(question=q["question"])).text
        replies[f"{q['set']}/{q['language']}/{q['id']}"] = text.strip()
        print(f"[{i + 1}/{len(todo)}] {time.monotonic() - started:.1f}s {q['question'][:40]} -> "
              f"{text.strip()[:80]}", file=sys.stderr)
        RECORDED.parent.mkdir(exist_ok=True)
        RECORDED.write_text(json.dumps(done, ensure_ascii=False, indent=1) + "\n",
                            encoding="utf-8")
    return 0


def terms_kept(english: str, translation: str) -> float:
    from ragqa.index.lexical import terms
    from ragqa.retrieval.question import understand

    wanted = set(terms(understand(english).topic, query=True))
    have = set(terms(translation, query=True))
    return len(wanted & have) / len(wanted) if wanted else 1.0


def half(key: str) -> int:
    return hashlib.sha256(key.encode()).digest()[0] % 2


def check(home: Path, as_json: bool) -> int:
    if not RECORDED.is_file():
        print(f"nothing recorded yet: {RECORDED} (run `record` first)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE / "lists"))
    import eval as lists  # bench/lists/eval.py

    from ragqa.config import load_settings
    from ragqa.models.encoders import make_multilingual_encoder

    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    replies = recorded["translations"]
    encoder = make_multilingual_encoder(load_settings({"RAGQA_HOME": str(home),
                                                       "RAGQA_ENV_FILE": "/nonexistent"}))
    rows = []
    retrievers = {}
    graded = {name: {q.qid: q for q in lists.load_questions(name)} for name in SETS}
    for q in questions():
        key = f"{q['set']}/{q['language']}/{q['id']}"
        if key not in replies:
            continue
        translation = replies[key]
        vectors = encoder.embed_queries([q["question"], translation])
        row = {**q, "translation": translation,
               "terms_kept": round(terms_kept(q["english"], translation), 3),
               "similarity": round(float(vectors[0] @ vectors[1]), 4)}
        judged = graded[q["set"]].get(q["id"])
        if judged is not None and judged.kind == "list" and judged.relevant:
            if q["set"] not in retrievers:
                retrievers[q["set"]] = lists.retriever_for(
                    home, q["set"], lists.sources_of(home, lists.DEFAULT_DATA, q["set"]))
            retriever = retrievers[q["set"]]
            for label, text in (("english", q["english"]), ("translation", translation)):
                listed = [h.paper.paper_id for h in retriever.search(text, sentences=False).hits]
                row[f"recall_{label}"] = lists.question_scores(listed, judged)["recall"]
            both = retriever.search_foreign(q["question"], translation=translation,
                                            sentences=False).hits
            row["recall_both"] = lists.question_scores(
                [h.paper.paper_id for h in both], judged)["recall"]
        rows.append(row)
    report = {"model": recorded.get("model"), "questions": len(rows),
              "by_language": summary(rows), "floor": floor(rows), "rows": rows}
    if as_json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
        return 0
    print(f"model: {report['model']}; {len(rows)} translated questions")
    for language, s in report["by_language"].items():
        print(f"  {language}: " + ", ".join(f"{k} {v}" for k, v in s.items()))
    print("similarity floor: " + json.dumps(report["floor"]))
    for row in sorted(rows, key=lambda r: r["terms_kept"])[:8]:
        print(f"  kept {row['terms_kept']:.2f} sim {row['similarity']:.3f}  {row['question'][:30]}"
              f" -> {row['translation'][:70]}")
    return 0


def summary(rows: list[dict]) -> dict:
    out = {}
    for language in LANGUAGES:
        mine = [r for r in rows if r["language"] == language]
        if not mine:
            continue
        s = {"questions": len(mine),
             "terms_kept": round(float(np.mean([r["terms_kept"] for r in mine])), 3),
             "similarity": round(float(np.mean([r["similarity"] for r in mine])), 3)}
        for label in ("english", "translation", "both"):
            values = [r[f"recall_{label}"] for r in mine if f"recall_{label}" in r]
            if values:
                s[f"recall_{label}"] = round(float(np.mean(values)), 3)
        out[language] = s
    return out


def floor(rows: list[dict]) -> dict:
    """Does a similarity floor find the translations that lost the topic (terms_kept < 0.5)?
    Chosen on one half of the questions (best F1 at finding them), reported on the other."""
    def f1(part: list[dict], value: float) -> tuple[float, int, int]:
        flagged = {id(r) for r in part if r["similarity"] < value}
        lossy = {id(r) for r in part if r["terms_kept"] < 0.5}
        hit = len(flagged & lossy)
        p = hit / len(flagged) if flagged else 0.0
        r = hit / len(lossy) if lossy else 0.0
        return (2 * p * r / (p + r) if p + r else 0.0), len(flagged), len(lossy)

    fit = [r for r in rows if half(r["id"] + r["language"]) == 0]
    test = [r for r in rows if half(r["id"] + r["language"]) == 1]
    candidates = sorted({r["similarity"] for r in fit}) or [0.0]
    best = max(candidates, key=lambda v: f1(fit, v + 1e-6)[0]) + 1e-6
    score, flagged, lossy = f1(test, best)
    return {"floor": round(best, 4), "held_out_f1": round(score, 3),
            "held_out_flagged": flagged, "held_out_lossy": lossy,
            "held_out_questions": len(test)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--limit", type=int, default=0)
    rec.add_argument("--model-name", default="",
                     help="what to record as the model (default: the configured name)")
    chk = sub.add_parser("check")
    chk.add_argument("--home", type=Path, required=True)
    chk.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.command == "record":
        return record(args.limit, args.model_name)
    return check(args.home, args.json)


if __name__ == "__main__":
    sys.exit(main())
