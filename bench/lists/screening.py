"""Lists screened by a judge: the depth rule fitted on held-out folds, then the product's
whole path against a judge on loopback (issue 26, 7a).

1. Candidates: each dev question's ranking as `ragqa ask` screens it (the top 400, no cut).
2. Folds (five, by question, the two slices pooled, as eval.py): on four folds the grid of
   the depth rule (first wave, waves without an accepted paper that stop it, the rescue
   similarity) is searched for the best recall at precision >= MIN_PRECISION, abstention >=
   MIN_ABSTENTION and at most MAX_READ candidates read per question; the fifth fold is
   screened with it. Every figure reported under `held_out` comes from questions the rule was
   not fitted on. `--profile yes-sayer` runs a weak judge instead.
3. `--served`: the shipped rule (ragqa/screening/screen.py) through `App.ask` and the real
   openai client against the scripted judge on loopback, every question: recall, precision,
   abstention, candidates read, calls and seconds per question, from the answers' citations.

4. `--blind`: the shipped rule (fitted on the dev slices) on the blind list set of issue 45
   (naacl2021, ijcai2021: slices it never saw), per half (eval.blind_half), beside the
   offline list and its core (issue 45, item 4).

    python bench/lists/screening.py --home DIR [--profile strong] [--served] [--json]
    python bench/lists/screening.py --home DIR --blind [--json]

DIR is a RAGQA_HOME as eval.py keeps it (the slices' collections are made once).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import eval as lists  # noqa: E402
from scripted_judge import ScriptedJudge, Served, titles_of  # noqa: E402

MIN_PRECISION, MIN_ABSTENTION, MAX_READ = 0.92, 0.95, 200
GRID = {"min_depth": (40, 60, 80, 100), "stop_after_empty": (1, 2, 3),
        "rescue_similarity": (0.75, 0.775, 0.8, 0.825, 0.85, 2.0)}  # 2.0: no rescue
LIMIT = 200  # RAGQA_SCREEN_MAX as shipped


def screener(judge, retriever, question: str, **rule):  # noqa: ANN001, ANN201
    """The Screener as screen.screener_for builds it, with `judge` and no verdict cache."""
    from ragqa.screening.screen import Screener, random_papers

    # words for tokens: the scripted judge reads no text, and tokenizing it cost the grid hours
    return Screener(judge, LIMIT, 20, 1, lambda text: len(text.split()), 200,
                    lambda hits: retriever.paper_vectors([h.index for h in hits]), None,
                    decoys_of=lambda n, avoid: random_papers(retriever.lexical, n, avoid),
                    offline=lambda: retriever.search(question).hits, **rule)


def screen_all(runs, judge, retrievers, rule):  # noqa: ANN001, ANN201
    """Each question's list and what it cost under `rule`."""
    rows = []
    for q, hits in runs:
        before = judge.calls
        screened = screener(judge, retrievers[q.slice], q.text, **rule).screen(q.text, hits)
        row = {**lists.question_scores([h.paper.paper_id for h in screened.hits], q),
               "read": screened.screening.candidates, "calls": judge.calls - before}
        found = q.relevant & {h.paper.paper_id for h in hits}
        if q.kind == "list" and found:  # of the relevant papers the candidates hold, read
            row["pool_recall"] = len(found & set(screened.read)) / len(found)
        rows.append(row)
    return rows


def summary(rows) -> dict:  # noqa: ANN001
    out = lists.summarise(rows)
    out["read_per_question"] = round(float(np.mean([r["read"] for r in rows])), 1)
    out["calls_per_question"] = round(float(np.mean([r["calls"] for r in rows])), 1)
    pooled = [r["pool_recall"] for r in rows if "pool_recall" in r]
    if pooled:
        out["read_holds"] = round(float(np.mean(pooled)), 3)
    return out


def fit(runs, judge, retrievers) -> dict:  # noqa: ANN001
    """The rule with the best recall on its worse slice where every slice keeps precision
    >= MIN_PRECISION and abstention >= MIN_ABSTENTION within MAX_READ candidates; where none
    does, the best F1 on the worse slice. Ties: fewer candidates read."""
    best, best_key = None, None
    for values in itertools.product(*GRID.values()):
        rule = dict(zip(GRID, values, strict=True))
        rows = screen_all(runs, judge, retrievers, rule)
        per_slice = [summary([r for r, (q, _) in zip(rows, runs, strict=True) if q.slice == name])
                     for name in lists.SLICES]
        ok = all(s.get("precision", 0) >= MIN_PRECISION and s.get("abstention", 1) >=
                 MIN_ABSTENTION and s["read_per_question"] <= MAX_READ for s in per_slice)
        worst = min((s.get("recall", 0) if ok else lists.f1(s)) for s in per_slice)
        key = (ok, worst, -float(np.mean([s["read_per_question"] for s in per_slice])))
        if best_key is None or key > best_key:
            best, best_key = rule, key
    return best


def served_run(home: Path, retrievers, questions, profile: str) -> dict:  # noqa: ANN001
    """The product's path: App.ask with the LLM at the scripted judge on loopback."""
    from ragqa.app import App
    from ragqa.config import load_settings
    from ragqa.requests import AskRequest

    judge = ScriptedJudge(questions, profile)
    server = Served(judge, titles_of(retrievers.values())).start()
    out = {}
    try:
        settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent",
                                  "OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "none",
                                  "RAGQA_LLM_MODEL": judge.name})
        # no verdict cache between runs: every run pays for its own verdicts
        cache = home / "screening" / "verdicts.sqlite"
        cache.unlink(missing_ok=True)
        for name in lists.SLICES:
            app = App(settings, name, retrievers[name].store.encoder)
            rows = []
            for q in (q for q in questions if q.slice == name):
                before, started = server.requests, time.monotonic()
                answer = app.ask(AskRequest(question=q.text))
                cited = [c["paper_id"] for c in answer["citations"]]
                screening = answer["screening"] or {}
                rows.append({**lists.question_scores(cited, q),
                             "read": screening.get("candidates", 0),
                             "calls": server.requests - before,
                             "seconds": time.monotonic() - started})
            out[name] = {**summary(rows), "seconds_per_question": round(float(np.median(
                [r["seconds"] for r in rows])), 2)}
    finally:
        server.stop()
    return out


def real_model_run(args, retrievers, runs) -> dict:  # noqa: ANN001
    """The product's screening (screen.screener_for: LLMJudge, the real openai client) against
    a real model at --llm-url, on the first --per-slice questions of each slice (list and
    absent ones in their file's order, absent ones included), beside the offline list."""
    from ragqa.config import load_settings
    from ragqa.models.llm import make_llm
    from ragqa.screening.screen import screener_for

    env = {"RAGQA_HOME": str(args.home), "RAGQA_ENV_FILE": "/nonexistent",
           "OPENAI_BASE_URL": args.llm_url, "OPENAI_API_KEY": "none",
           "RAGQA_LLM_MODEL": args.llm_model, "RAGQA_LLM_CONCURRENCY": "1",
           "RAGQA_SCREEN_MAX": str(args.llm_max), "RAGQA_SCREEN_BATCH": "10",
           "RAGQA_SCREEN_TOKENS": "60"}
    settings = load_settings(env)
    llm = make_llm(settings)
    out: dict = {"settings": {k: v for k, v in env.items() if k.startswith("RAGQA_SCREEN")}}
    for name in lists.SLICES:
        retriever = retrievers[name]
        retriever.store.settings = settings
        mine = [r for r in runs if r[0].slice == name]
        chosen = [r for r in mine if r[0].kind == "list"][:args.per_slice - 2] + \
            [r for r in mine if r[0].kind == "absent"][:2]
        screened_rows, offline_rows, judged_rows, seconds = [], [], [], []
        for q, hits in chosen:
            screener = screener_for(retriever, llm, "auto",
                                    offline=lambda q=q, r=retriever: r.search(q.text).hits)
            screener.cache = None
            result = screener.screen(q.text, hits)
            s = result.screening
            seconds.append(s.seconds)
            listed = [h.paper.paper_id for h in result.hits]
            screened_rows.append({**lists.question_scores(listed, q), "read": s.candidates,
                                  "calls": s.batches, "mode": s.mode,
                                  "decoys_accepted": s.decoys_accepted})
            judged_rows.append(lists.question_scores(
                [h.paper.paper_id for h in result.judged], q))
            offline_rows.append(lists.question_scores(
                [h.paper.paper_id for h in retriever.search(q.text).hits], q))
            print(f"{q.qid}: {s.mode} read {s.candidates} accepted {s.accepted} "
                  f"({s.seconds:.0f} s) {screened_rows[-1]}", file=sys.stderr, flush=True)
        out[name] = {"screened": {**summary(screened_rows), "combined": sum(
            r["mode"] == "combined" for r in screened_rows),
            "seconds_per_question": round(float(np.median(seconds)), 1)},
            "offline": lists.summarise(offline_rows),
            "verdicts_obeyed": lists.summarise(judged_rows)}
        for label in ("screened", "offline", "verdicts_obeyed"):
            out[name][label]["f1"] = lists.f1(out[name][label])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=lists.DEFAULT_DATA)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--profile", choices=("strong", "yes-sayer"), default="strong")
    parser.add_argument("--served", action="store_true", help="also the product's path")
    parser.add_argument("--no-folds", action="store_true",
                        help="only the shipped rule (in-process, and served with --served)")
    parser.add_argument("--llm-url", help="a real model's endpoint (bench/local_llm.sh)")
    parser.add_argument("--llm-model", default="local")
    parser.add_argument("--llm-max", type=int, default=60, help="RAGQA_SCREEN_MAX for it")
    parser.add_argument("--per-slice", type=int, default=10)
    parser.add_argument("--blind", action="store_true",
                        help="the shipped rule on the blind list set (issue 45), per half")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not lists.has_data(args):
        return 0
    if args.blind:
        report = blind_run(args)
        print(json.dumps(report, indent=2) if args.json else _blind_text(report))
        return 0
    retrievers, runs, questions = {}, [], []
    for name in lists.SLICES:
        retrievers[name] = lists.retriever_for(args.home, name,
                                               lists.sources_of(args.home, args.data, name))
        for q in (q for q in lists.load_questions(name) if q.grades):
            questions.append(q)
            runs.append((q, retrievers[name].search(q.text, k=2 * LIMIT, cut=False).hits))
    if args.llm_url:
        print(json.dumps(real_model_run(args, retrievers, runs), indent=2))
        return 0
    judge = ScriptedJudge(questions, args.profile)
    rng = np.random.default_rng(0)
    fold_of = {q.qid: f for (q, _), f in zip(
        runs, rng.permutation(np.arange(len(runs)) % args.folds), strict=True)}
    held_out: dict[str, list] = {name: [] for name in lists.SLICES}
    rules = []
    for fold in range(0 if args.no_folds else args.folds):
        rule = fit([r for r in runs if fold_of[r[0].qid] != fold], judge, retrievers)
        rules.append(rule)
        for row, (q, _) in zip(screen_all([r for r in runs if fold_of[r[0].qid] == fold],
                                          judge, retrievers, rule),
                               [r for r in runs if fold_of[r[0].qid] == fold], strict=True):
            held_out[q.slice].append(row)
    report: dict = {"profile": args.profile, "fold_rules": rules,
                    "held_out": {name: summary(rows) for name, rows in held_out.items() if rows},
                    "fitted_on_all": None if args.no_folds else fit(runs, judge, retrievers)}

    shipped = shipped_rule()
    report["shipped_rule"] = shipped
    report["offline"] = {name: lists.summarise([lists.question_scores(
        [h.paper.paper_id for h in retrievers[name].search(q.text).hits], q)
        for q, _ in runs if q.slice == name]) for name in lists.SLICES}
    report["shipped_in_process"] = {name: summary(screen_all(
        [r for r in runs if r[0].slice == name], judge, retrievers, shipped))
        for name in lists.SLICES}
    if args.served:
        report["served"] = served_run(args.home, retrievers, questions, args.profile)
    print(json.dumps(report, indent=2) if args.json else _text(report))
    return 0


def shipped_rule() -> dict:
    """The depth rule screen.py ships."""
    from ragqa.screening.screen import Screener

    return {"min_depth": Screener.min_depth, "stop_after_empty": Screener.stop_after_empty,
            "rescue_similarity": Screener.rescue_similarity}


def blind_run(args) -> dict:  # noqa: ANN001
    """The shipped rule and the offline list (whole and core) on the blind set, per half."""

    shipped = shipped_rule()
    retrievers, runs = {}, []
    later = [name for slices in lists.LATER_BLIND.values() for name in slices
             if (lists.HERE / f"{name}.qrels.tsv").is_file()]
    for name in [*lists.BLIND_SLICES, *later]:
        retrievers[name] = lists.retriever_for(args.home, name,
                                               lists.sources_of(args.home, args.data, name))
        runs += [(q, retrievers[name].search(q.text, k=2 * LIMIT, cut=False).hits)
                 for q in lists.load_questions(name) if q.grades]
    judge = ScriptedJudge([q for q, _ in runs], args.profile)
    report: dict = {"profile": args.profile, "shipped_rule": shipped}
    for half in ("calibrate", "report", *lists.LATER_BLIND):
        mine = [r for r in runs if _part(r[0]) == half]
        if not mine:
            continue
        offline = [retrievers[q.slice].search(q.text).hits for q, _ in mine]
        report[half] = {
            "questions": len(mine),
            "screened": summary(screen_all(mine, judge, retrievers, shipped)),
            "offline": lists.summarise([lists.question_scores(
                [h.paper.paper_id for h in hits], q) for (q, _), hits in zip(mine, offline,
                                                                            strict=True)]),
            "offline_core": lists.summarise([lists.question_scores(
                [h.paper.paper_id for h in hits if h.tier == "core"], q)
                for (q, _), hits in zip(mine, offline, strict=True)])}
    return report


def _part(q) -> str:  # noqa: ANN001
    """The blind set's half of a question, or the later blind set's name ("blind2", …)."""
    return lists.later_blind_part(q.slice) or lists.blind_half(q.qid)


def _blind_text(report: dict) -> str:
    lines = [f"judge: {report['profile']}  rule: {report['shipped_rule']}"]
    for half in (h for h in ("calibrate", "report", *lists.LATER_BLIND) if h in report):
        lines.append(f"{half} half ({report[half]['questions']} questions)")
        for label in ("screened", "offline", "offline_core"):
            s = report[half][label]
            lines.append(f"  {label:13} recall {s.get('recall', float('nan')):.3f}  precision "
                         f"{s.get('precision', float('nan')):.3f}  abstention "
                         f"{s.get('abstention', float('nan')):.2f}"
                         + (f"  read {s['read_per_question']:5.1f}" if "read_per_question" in s
                            else ""))
    return "\n".join(lines)


def _text(report: dict) -> str:
    lines = [f"judge: {report['profile']}"]
    for label in ("held_out", "shipped_in_process", "served"):
        for name, s in report.get(label, {}).items():
            lines.append(f"  {label:19} {name:9} recall {s.get('recall', float('nan')):.3f}  "
                         f"precision {s.get('precision', float('nan')):.3f}  abstention "
                         f"{s.get('abstention', float('nan')):.2f}  read "
                         f"{s['read_per_question']:5.1f}  calls {s['calls_per_question']:4.1f}"
                         + (f"  {s['seconds_per_question']} s" if "seconds_per_question" in s
                            else ""))
    lines += [f"fold {i}: {r}" for i, r in enumerate(report["fold_rules"])]
    lines += [f"fitted on all: {report['fitted_on_all']}", f"shipped: {report['shipped_rule']}"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
