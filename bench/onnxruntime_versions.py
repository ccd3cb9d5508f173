"""Two onnxruntime versions side by side: the embedder's vectors and speed in each.

    python bench/onnxruntime_versions.py --python A/bin/python --python B/bin/python \\
        [--n 300] [--repeats 3] [--json]

Each `--python` is a venv with ragqa installed (e.g. two `bench/install_size.py` venvs, one
with `onnxruntime<1.29`). Runs alternate between them, `--repeats` times: each embeds the first
N mlconf abstracts with ragqa's offline embedder (MiniLM int8, one text per call, model load
excluded) and the cross-encoder scores 50 question-sentence pairs. Reported per venv: the
onnxruntime version, the median papers per second, and the largest difference of any vector
component and any cross-encoder score from the first venv's. Where ../shared/data is absent it
says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mlconf" / "corpus.jsonl.gz"

CHILD = r"""
import gzip, json, sys, time
import numpy as np, onnxruntime
from ragqa.config import load_settings
from ragqa.models.encoders import make_encoder
from ragqa.models.rerank import cross_encoder
n, out = int(sys.argv[1]), sys.argv[2]
texts = []
with gzip.open(sys.argv[3], "rt", encoding="utf-8") as lines:
    for line in lines:
        texts.append(json.loads(line)["text"])
        if len(texts) == n:
            break
encoder = make_encoder(load_settings())
encoder.embed(texts[:3])  # the model loaded, its first call paid
started = time.perf_counter()
vectors = np.asarray(encoder.embed(texts))
seconds = time.perf_counter() - started
sentences = [t.split(". ")[0] for t in texts[:50]]
scores = np.asarray(cross_encoder().score("Which papers study speech recognition?", sentences),
                    dtype=np.float64)
np.savez(out, vectors=vectors, scores=scores)
print(json.dumps({"onnxruntime": onnxruntime.__version__, "papers_per_s": n / seconds}))
"""


def run(python: str, n: int, out: Path) -> dict:
    done = subprocess.run([python, "-c", CHILD, str(n), str(out), str(DATA)],
                          capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", required=True)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not DATA.is_file():
        print(f"no mlconf data at {DATA}: nothing to measure")
        return 0
    import numpy as np

    speeds: dict[str, list[float]] = {p: [] for p in args.python}
    versions: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.repeats):
            for k, python in enumerate(args.python):
                row = run(python, args.n, Path(folder) / f"{k}.npz")
                speeds[python].append(row["papers_per_s"])
                versions[python] = row["onnxruntime"]
        first = np.load(Path(folder) / "0.npz")
        result = []
        for k, python in enumerate(args.python):
            mine = np.load(Path(folder) / f"{k}.npz")
            result.append({
                "python": python, "onnxruntime": versions[python],
                "papers_per_s": [round(s, 1) for s in speeds[python]],
                "median_papers_per_s": round(statistics.median(speeds[python]), 1),
                "max_vector_difference": float(np.abs(mine["vectors"] - first["vectors"]).max()),
                "max_score_difference": float(np.abs(mine["scores"] - first["scores"]).max())})
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for row in result:
        print(f"onnxruntime {row['onnxruntime']}: {row['median_papers_per_s']} papers/s (median "
              f"of {row['papers_per_s']}); vectors within {row['max_vector_difference']:.1e}, "
              f"cross-encoder scores within {row['max_score_difference']:.1e} of the first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
