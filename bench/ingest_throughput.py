"""Ingest throughput of ragqa as a ratio to the raw embedder on the same abstracts.

Takes the first N abstracts (default 1000) of `../shared/data/mlconf/corpus.jsonl.gz` next to
the repository (or `--data DIR`; skips cleanly where it is absent) and measures, side by side in
one process and on the same machine state:

  raw   `LocalMiniLM().embed(title + ". " + text)`: one vector per abstract, nothing else;
  ours  `ragqa.ingest.ingest_paths` of the same records (written to a temporary JSONL) into a
        fresh temporary RAGQA_HOME: parse, diff, chunk, embed, upsert into Chroma, BM25 rebuild.

Both models are loaded once, before any timing, and warmed up; the loads are reported apart.
Each (raw, ours) pair is repeated `--repeats` times (default 3) in alternating order; the
medians give papers/s and the ratio ours/raw (target >= 0.9). A breakdown of where ingest time
goes (chunking, embedding, Chroma upsert, the final rescan and BM25 rebuild, the rest) and the
tokens each side feeds the model come with it.

The figures are only as good as the machine is quiet: run it with nothing else busy.

Run it:

    /tmp/venv/bin/python bench/ingest_throughput.py
    /tmp/venv/bin/python bench/ingest_throughput.py --n 500 --repeats 5 --json

`--batch-sizes 1,8,32` instead times the raw embedder alone at each batch size (texts per
onnxruntime run), alternating, `--repeats` times: why ragqa embeds one text per run by default.

RAGQA_* settings in the environment are ignored: settings come from `load_settings` with only
RAGQA_HOME set, so that the figures describe the defaults.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TARGET_RATIO = 0.9
MAX_TOKENS = 256  # MiniLM's window: what the embedder actually reads of a text


# ---------------------------------------------------------------- data

def read_records(path: Path, n: int) -> list[dict[str, Any]]:
    """The first n records with a non-empty abstract."""
    records: list[dict[str, Any]] = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            record = json.loads(line)
            if str(record.get("text") or "").strip():
                records.append(record)
                if len(records) == n:
                    break
    return records


def raw_input(record: dict[str, Any]) -> str:
    return f"{record.get('title') or ''}. {record['text']}"


# ---------------------------------------------------------------- instrumentation

class TimedEncoder:
    """Wraps an Encoder, adding up the time spent in embed() and count_tokens() (the latter is
    what the chunker calls to size chunks) and keeping the texts embedded."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.embedder_id: str = inner.embedder_id
        self.reset()

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    def reset(self) -> None:
        self.embed_s = 0.0
        self.count_s = 0.0
        self.count_calls = 0
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.embed_s += time.perf_counter() - started
            self.embedded.extend(texts)

    def count_tokens(self, text: str) -> int:
        started = time.perf_counter()
        try:
            return int(self.inner.count_tokens(text))
        finally:
            self.count_s += time.perf_counter() - started
            self.count_calls += 1


@dataclass
class StageClock:
    """ragqa's Progress callbacks, turned into timestamps of the ingest stages."""

    marks: list[tuple[str, float]] = field(default_factory=list)

    def start(self, total: int) -> None:
        self.marks.append(("embed-loop", time.perf_counter()))

    def advance(self, papers: int) -> None:
        pass

    def stage(self, message: str) -> None:
        self.marks.append((message, time.perf_counter()))

    def finish(self) -> None:
        self.marks.append(("after-embed-loop", time.perf_counter()))

    def durations(self, end: float) -> dict[str, float]:
        """Seconds from each mark to the next (the last one to `end`)."""
        stamps = [*self.marks, ("end", end)]
        return {name: later - at for (name, at), (_, later) in pairwise(stamps)}


def token_counts(count: Callable[[str], int], texts: Sequence[str]) -> tuple[int, int]:
    """(tokens the embedder reads, i.e. truncated to its window, tokens it drops)."""
    read = dropped = 0
    for text in texts:
        n = count(text) + 2  # [CLS] and [SEP]
        read += min(n, MAX_TOKENS)
        dropped += max(0, n - MAX_TOKENS)
    return read, dropped


# ---------------------------------------------------------------- the two measurements

def time_raw(embedder: Any, texts: list[str]) -> float:
    started = time.perf_counter()
    vectors = embedder.embed(texts)
    seconds = time.perf_counter() - started
    assert vectors.shape[0] == len(texts)
    return seconds


def time_ours(encoder: TimedEncoder, source: Path) -> dict[str, Any]:
    """One full ingest_paths of `source` into a fresh RAGQA_HOME."""
    from ragqa.config import load_settings
    from ragqa.ingest import ingest_paths
    from ragqa.store import Store

    with tempfile.TemporaryDirectory(prefix="ragqa-throughput-") as home:
        settings = load_settings({"RAGQA_HOME": home, "RAGQA_ENV_FILE": "/nonexistent"})
        opened = time.perf_counter()
        store = Store(settings, "throughput", encoder)  # type: ignore[arg-type]
        open_s = time.perf_counter() - opened
        upsert_s = 0.0
        plain_upsert = store.upsert

        def timed_upsert(*args: Any, **kwargs: Any) -> None:
            nonlocal upsert_s
            started = time.perf_counter()
            try:
                plain_upsert(*args, **kwargs)
            finally:
                upsert_s += time.perf_counter() - started

        store.upsert = timed_upsert  # type: ignore[method-assign]
        encoder.reset()
        clock = StageClock()
        started = time.perf_counter()
        report = ingest_paths(store, [source], progress=clock)  # type: ignore[arg-type]
        ended = time.perf_counter()
        seconds = ended - started
        stages = clock.durations(ended)
        del store
    loop_s = stages.get("embed-loop", 0.0)
    # count_tokens is timed both inside the embed loop (chunking) and, rarely, elsewhere.
    breakdown = {
        "read+diff": seconds - loop_s - stages.get("Updating the BM25 index", 0.0)
        - stages.get("after-embed-loop", 0.0),
        "chunking": encoder.count_s,
        "embedding": encoder.embed_s,
        "chroma upsert": upsert_s,
        "other in loop": loop_s - encoder.count_s - encoder.embed_s - upsert_s,
        "rescan+bm25": stages.get("Updating the BM25 index", 0.0)
        + stages.get("after-embed-loop", 0.0),
    }
    return {"seconds": seconds, "store_open_s": open_s, "chunks": report.chunks,
            "papers": report.added, "breakdown": breakdown, "texts": list(encoder.embedded),
            "count_calls": encoder.count_calls}


# ---------------------------------------------------------------- running

def run_benchmark(data: Path, n: int, repeats: int) -> dict[str, Any]:
    from ragqa.config import load_settings
    from ragqa.embeddings import LocalMiniLM, make_encoder

    records = read_records(data, n)
    texts = [raw_input(r) for r in records]
    log(f"{len(records)} abstracts from {data}")

    loaded = time.perf_counter()
    raw = LocalMiniLM()
    raw_load_s = time.perf_counter() - loaded
    loaded = time.perf_counter()
    with tempfile.TemporaryDirectory() as home:
        ours = TimedEncoder(make_encoder(load_settings({"RAGQA_HOME": home,
                                                        "RAGQA_ENV_FILE": "/nonexistent"})))
    ours_load_s = time.perf_counter() - loaded
    raw.embed(texts[:64])  # warm-up: first ONNX runs allocate
    ours.embed(texts[:64])

    raw_s: list[float] = []
    our_runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ragqa-throughput-src-") as tmp:
        source = Path(tmp) / "papers.jsonl"
        source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                          encoding="utf-8")
        for i in range(repeats):
            order = ("raw", "ours") if i % 2 == 0 else ("ours", "raw")
            for which in order:
                if which == "raw":
                    raw_s.append(time_raw(raw, texts))
                    log(f"  repeat {i + 1}: raw  {raw_s[-1]:6.1f} s "
                        f"({len(texts) / raw_s[-1]:.1f} papers/s)")
                else:
                    our_runs.append(time_ours(ours, source))
                    s = our_runs[-1]["seconds"]
                    log(f"  repeat {i + 1}: ours {s:6.1f} s ({len(texts) / s:.1f} papers/s)")

    raw_median = statistics.median(raw_s)
    our_median = statistics.median(r["seconds"] for r in our_runs)
    chunks = our_runs[0]["chunks"]
    raw_tokens, raw_dropped = token_counts(raw.count_tokens, texts)
    our_tokens, our_dropped = token_counts(raw.count_tokens, our_runs[0]["texts"])
    breakdown = {name: statistics.median(r["breakdown"][name] for r in our_runs)
                 for name in our_runs[0]["breakdown"]}
    return {
        "data": str(data), "papers": len(records), "repeats": repeats,
        "raw": {"seconds": [round(s, 2) for s in raw_s],
                "papers_per_s": round(len(records) / raw_median, 2),
                "texts": len(texts), "tokens_read": raw_tokens, "tokens_truncated": raw_dropped},
        "ours": {"seconds": [round(r["seconds"], 2) for r in our_runs],
                 "papers_per_s": round(len(records) / our_median, 2),
                 "chunks": chunks, "chunks_per_paper": round(chunks / len(records), 3),
                 "tokens_read": our_tokens, "tokens_truncated": our_dropped,
                 "count_tokens_calls": our_runs[0]["count_calls"],
                 "breakdown_s": {k: round(v, 2) for k, v in breakdown.items()},
                 "store_open_s": round(statistics.median(r["store_open_s"] for r in our_runs),
                                       3)},
        "ratio": round(raw_median / our_median, 3),
        # Each pair ran back to back, so its ratio is less exposed to load that drifts between
        # repeats than the ratio of the medians.
        "pair_ratios": [round(r / o["seconds"], 3) for r, o in zip(raw_s, our_runs, strict=True)],
        "target": TARGET_RATIO,
        "model_load_s": {"raw": round(raw_load_s, 2), "ours": round(ours_load_s, 2)},
    }


def compare_batch_sizes(data: Path, n: int, repeats: int, sizes: list[int]) -> dict[str, Any]:
    from ragqa.embeddings import LocalMiniLM

    texts = [raw_input(r) for r in read_records(data, n)]
    embedder = LocalMiniLM()
    embedder.embed(texts[:64])
    seconds: dict[int, list[float]] = {size: [] for size in sizes}
    for i in range(repeats):
        for size in sizes if i % 2 == 0 else sizes[::-1]:
            embedder.batch_size = size
            seconds[size].append(time_raw(embedder, texts))
            log(f"  repeat {i + 1}: batch {size:>3} {seconds[size][-1]:6.1f} s")
    medians = {size: statistics.median(runs) for size, runs in seconds.items()}
    fastest = min(medians.values())
    return {"papers": len(texts), "repeats": repeats,
            "batch_sizes": {str(size): {"seconds": [round(s, 2) for s in seconds[size]],
                                        "papers_per_s": round(len(texts) / medians[size], 2),
                                        "time_vs_fastest": round(medians[size] / fastest, 3)}
                            for size in sizes}}


# ---------------------------------------------------------------- output

def log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def print_table(result: dict[str, Any]) -> None:
    raw, ours = result["raw"], result["ours"]
    print(f"Ingest throughput: {result['papers']} abstracts, median of {result['repeats']} "
          f"alternating repeats")
    print(f"  {'':<28}{'raw embedder':>14}{'ragqa ingest':>14}")
    print(f"  {'papers/s':<28}{raw['papers_per_s']:>14.2f}{ours['papers_per_s']:>14.2f}")
    print(f"  {'texts embedded':<28}{raw['texts']:>14}{ours['chunks']:>14}")
    print(f"  {'tokens read by the model':<28}{raw['tokens_read']:>14}{ours['tokens_read']:>14}")
    print(f"  {'tokens cut by truncation':<28}{raw['tokens_truncated']:>14}"
          f"{ours['tokens_truncated']:>14}")
    verdict = "meets" if result["ratio"] >= result["target"] else "below"
    pairs = ", ".join(f"{r:.3f}" for r in result["pair_ratios"])
    print(f"  ratio ours/raw: {result['ratio']:.3f} ({verdict} the target {result['target']}; "
          f"per pair {pairs}); {ours['chunks_per_paper']:.2f} chunks per paper")
    total = statistics.fsum(ours["breakdown_s"].values())
    print("  where ragqa ingest time goes (median seconds):")
    for name, seconds in ours["breakdown_s"].items():
        print(f"    {name:<16}{seconds:>8.2f}  {100 * seconds / total:5.1f} %")
    print(f"  not counted: Store() open {ours['store_open_s']:.2f} s, model load "
          f"{result['model_load_s']['ours']:.2f} s (once per process)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="mlconf corpus.jsonl.gz (default: ../shared/data/mlconf/...)")
    parser.add_argument("--n", type=int, default=1000, help="abstracts to ingest (default 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="(raw, ours) pairs (default 3)")
    parser.add_argument("--batch-sizes", default="", metavar="1,8,32",
                        help="instead: time the raw embedder at each of these batch sizes")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    args = parser.parse_args(argv)
    if args.n < 1 or args.repeats < 1:
        parser.error("--n and --repeats must be at least 1")
    try:
        sizes = [int(size) for size in args.batch_sizes.split(",") if size.strip()]
    except ValueError:
        parser.error("--batch-sizes takes whole numbers separated by commas")
    if any(size < 1 for size in sizes):
        parser.error("--batch-sizes must be at least 1")

    data = args.data or DEFAULT_DATA / "mlconf" / "corpus.jsonl.gz"
    if not data.is_file():
        print(f"mlconf data not found at {data}: skipping")
        return 0
    if sizes:
        result = compare_batch_sizes(data, args.n, args.repeats, sizes)
        if not args.json:
            print(f"Raw embedder, {result['papers']} abstracts, median of {args.repeats}:")
            for size, row in result["batch_sizes"].items():
                print(f"  batch {size:>4}: {row['papers_per_s']:6.2f} papers/s, "
                      f"time {row['time_vs_fastest']:.2f} x the fastest")
            return 0
    else:
        result = run_benchmark(data, args.n, args.repeats)
        if not args.json:
            print_table(result)
            return 0
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
