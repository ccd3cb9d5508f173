"""Issue 46, item 1, tried: a fitted model of the kind of fact a question about one paper asks
for, in place of the phrase rules (ragqa/answering/facts.py ASKS). Not shipped: with the
labelled questions there are, it reads kinds less often right than the rules
(docs/benchmarks.md, "A fitted fact-kind model"); this script keeps the experiment repeatable.

Labelled questions: the blind fact sets (bench/reading/facts*.jsonl), each question's kind as
its writer filed it: quantity (a figure), comparison, condition, dataset (what it was evaluated
or applied on), propose (what the paper proposes), other. Rounds 1-3 are fitted on whole; from
round 4 on (facts4_*), a set's `dev` half (eval.blind_half, fixed before anything was read) is
fitted on and its `heldout` half only reported.

Features, all named: the wording features of the list-question model (retrieval/kinds.py) and
the question's MiniLM embedding (x `--scales`); one L2-penalised multinomial logistic fit
(choice_fit.py). Reported: accuracy with each fitted set left out in turn and on the held-out
halves; with `--before CHECKOUT`, the rules of that checkout (facts.asked), a kind read right
when the rules name it (lenient: they may name several), "other" when they name none of the
five.

    python bench/understanding/fit_fact_kind.py [--before CHECKOUT] [--scales 3,0] [--json]
"""

from __future__ import annotations

import argparse
import glob
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from choice_fit import Fit, show  # noqa: E402  (bench/understanding/choice_fit.py)

KINDS = ("quantity", "comparison", "condition", "dataset", "propose", "other")
# The rules' name for each kind (facts.ASKS before this model).
RULE_KIND = {"quantity": "quantity", "comparison": "comparison", "condition": "condition",
             "dataset": "evaluation", "propose": "method"}
FIRST_SPLIT_FACT_ROUND = 4
L2 = 1.0
SENSE_SCALE = 3.0


def _round(stem: str) -> int:
    head = stem.split("_")[0].removeprefix("facts")
    return int(head) if head else 1


def labelled() -> list[dict]:
    from ragqa.retrieval.kinds import wording_features

    rows = []
    for path in sorted(glob.glob(str(ROOT / "bench/reading/facts*.jsonl"))):
        stem = Path(path).stem
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            held = _round(stem) >= FIRST_SPLIT_FACT_ROUND and r["split"] == "heldout"
            rows.append({"source": stem, "text": r["question"], "kind": r["kind"],
                         "report": held, "features": dict.fromkeys(
                             wording_features(r["question"]), 1.0)})
    return rows


def rules_right(checkout: Path, rows: list[dict]) -> np.ndarray:
    """Whether facts.asked of another checkout names each question's kind ("other": names
    none of the five), run there."""
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); "
            "from ragqa.answering.facts import asked; "
            "print(json.dumps([sorted(asked(t)) for t in json.load(sys.stdin)]))")
    out = subprocess.run([sys.executable, "-c", code, str(checkout)], capture_output=True,
                         input=json.dumps([r["text"] for r in rows]), text=True, check=True)
    named = [set(k) for k in json.loads(out.stdout)]
    return np.array([RULE_KIND[r["kind"]] in k if r["kind"] in RULE_KIND
                     else not k & set(RULE_KIND.values()) for r, k in zip(rows, named,
                                                                          strict=True)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout whose facts.asked to compare")
    parser.add_argument("--scales", default=str(SENSE_SCALE))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from ragqa.retrieval.kinds import question_vectors

    rows = labelled()
    fit = Fit(rows, question_vectors([r["text"] for r in rows]), KINDS, L2)
    sources = np.array([r["source"] for r in rows])
    report = np.array([r["report"] for r in rows])
    fitted = ~report
    before = rules_right(args.before, rows) if args.before else None
    scales = [float(s) for s in args.scales.split(",")]
    figures: dict = {"left_out": {}, "reports": {}}
    for scale in scales:
        right = 0.0
        for source in sorted(set(sources[fitted])):
            out = (sources == source) & fitted
            acc = fit.accuracy(fit.fit(fitted & ~out, scale), out)
            right += acc * out.sum()
            figures["left_out"].setdefault(source, {"questions": int(out.sum())})[
                f"scale {scale}"] = round(acc, 3)
        figures["left_out"].setdefault("mean", {})[f"scale {scale}"] = \
            round(right / fitted.sum(), 3)
    if before is not None:
        for source in sorted(set(sources[fitted])):
            out = (sources == source) & fitted
            figures["left_out"][source]["before"] = round(float(before[out].mean()), 3)
        figures["left_out"]["mean"]["before"] = round(float(before[fitted].mean()), 3)
    models = {scale: fit.fit(fitted, scale) for scale in scales}
    for source in sorted(set(sources[report])):
        mask = (sources == source) & report
        figures["reports"][source] = {"questions": int(mask.sum()), **{
            f"scale {s}": round(fit.accuracy(m, mask), 3) for s, m in models.items()}}
        if before is not None:
            figures["reports"][source]["before"] = round(float(before[mask].mean()), 3)
    show(figures, as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
