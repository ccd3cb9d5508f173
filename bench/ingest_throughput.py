"""Ingest throughput: `ragqa ingest` as a user runs it, as a ratio to the raw embedder.

Takes the first N abstracts (default 300) of `../shared/data/mlconf/corpus.jsonl.gz` next to the
repository (or `--data FILE`; skips cleanly where it is absent), writes them to a JSONL file,
and times, in alternating pairs on the same machine state:

  raw    the same int8 MiniLM through onnxruntime and `tokenizers` (`LocalMiniLM(workers=1,
         graph_optimization="all")`), in this process: one vector per abstract (`title + ". "
         + text`), one text per run, one run at a time on onnxruntime's default threads and
         its default graph rewrites, 256-token truncation, sorted by length; model loaded once
         and warmed up, load excluded. This is issue 18's fixed reference: ragqa's own embedder
         runs one single-threaded run per core side by side, with onnxruntime's basic rewrites
         only, which is faster than this (`--batch-sizes` and `--graph-optimizations` compare
         the ways, with the vectors' largest difference);
  ragqa  `python -m ragqa ingest FILE --quiet --json` into an empty RAGQA_HOME, from starting
         the process to its exit: start-up, reading, chunking, embedding, Chroma, BM25.

  side   ragqa's own embedder alone (`LocalMiniLM()`: one single-threaded run per core side
         by side), warm, the same texts: the ratio against it is what is left of the gap
         once the embedding is as fast as ragqa makes it.

The ratio is raw seconds / ragqa seconds per pair (1.0: ingest as fast as the bare model); the
median of the pairs (default 3) is the figure. The same ratio of CPU seconds (all threads) comes
with it: less moved by load, but blind to work overlapped on two threads.

`--before DIR` times a second ragqa, another checkout's code (e.g. `git archive main | tar -x -C
DIR`), in the same rotation: before and after side by side. A ragqa older than the
RAGQA_PROFILE_INGEST hook gives its total and ratio only, no phases.

The machine must be quiet: a 1-minute load average of at most 0.5 before the first run, and,
during every run, other processes using at most 0.1 of a core (the machine's busy CPU time from
/proc/stat less the run's own; the benchmark's own runs raise the load average, which says
nothing about anyone else). Otherwise the figures are printed, labelled "LOADED, not a result":
load slows the raw embedder more than ragqa's other work, so a loaded ratio flatters ragqa
(issue 18). The exit code is 0 either way.

Where ragqa's time goes comes from the process itself: with RAGQA_PROFILE_INGEST=FILE, ingest
writes the seconds of each phase as JSON (ragqa/index/ingest.py, `Phases`; off by default, no cost).
The tokens ragqa embeds beyond the raw run (a title on every chunk, overlap between chunks, text
past MiniLM's 256 tokens that the raw run drops) are counted from ragqa's own chunker.

Run it (on a quiet machine):

    python bench/ingest_throughput.py                  # 300 abstracts, 3 pairs
    python bench/ingest_throughput.py --n 3000
    python bench/ingest_throughput.py --before /tmp/ragqa-main --json

`--batch-sizes 1,8,32` instead times the raw embedder alone at each batch size (texts per
onnxruntime run), alternating, each two ways: one run at a time (the reference) and one
single-threaded run per core side by side (ragqa's default), with the CPU seconds they burn.

Both checkouts' ragqa/ are byte-compiled first (`compileall`), as `pip install` leaves an
installed package: PYTHONDONTWRITEBYTECODE would otherwise have every run compile them again.

RAGQA_* settings in the environment are ignored: the ingest runs with only RAGQA_HOME (and the
profile file) set, so that the figures describe the defaults.
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# ../shared/data beside the repository (or beside the folder of worktrees holding it)
DATA_PLACES = [Path(__file__).resolve().parents[i] / "shared" / "data" for i in (2, 3)]
REPO = Path(__file__).resolve().parents[1]
TARGET_RATIO = 0.9
MAX_LOAD = 0.5
# Other processes may use at most this share of a core during a run (busy_cpu_seconds).
MAX_OTHERS = 0.1
MAX_TOKENS = 256  # MiniLM's window: what the embedder actually reads of a text

# Phases of the ingest process, in the order they happen (names as ragqa/index/ingest.py's Phases).
PHASES = ["reading", "opening the store", "comparing with the index", "chunking", "embedding",
          "chroma upserts", "waiting for the writer", "rescan", "bm25: reading chroma",
          "bm25: writing the snapshot"]


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


def load_average() -> float:
    return os.getloadavg()[0]


def busy_cpu_seconds() -> float:
    """CPU seconds the whole machine has been busy (all cores, /proc/stat), 0 where unknown."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return 0.0
    ticks = [int(x) for x in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- the runs

def time_raw(embedder: Any, texts: list[str]) -> float:
    return time_raw_cpu(embedder, texts)[0]


def time_raw_cpu(embedder: Any, texts: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of all this process's threads)."""
    cpu = time.process_time()
    started = time.perf_counter()
    vectors = embedder.embed(texts)
    seconds = time.perf_counter() - started
    assert vectors.shape[0] == len(texts)
    return seconds, time.process_time() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _ingest_env(home: str, profile: str, code: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGQA_")}
    env.update(RAGQA_HOME=home, RAGQA_ENV_FILE="/nonexistent", RAGQA_PROFILE_INGEST=profile)
    if code is not None:  # that checkout's ragqa comes first on the path
        env["PYTHONPATH"] = os.pathsep.join([str(code), *filter(None, [env.get("PYTHONPATH")])])
    return env


def time_ingest(source: Path, code: Path | None) -> dict[str, Any]:
    """One `ragqa ingest` process into a fresh RAGQA_HOME: wall seconds and its phases."""
    with tempfile.TemporaryDirectory(prefix="ragqa-throughput-") as tmp:
        profile = Path(tmp) / "profile.json"
        env = _ingest_env(str(Path(tmp) / "home"), str(profile), code)
        cpu = _children_cpu()
        spawned = time.time()
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "ragqa", "ingest", str(source), "--quiet",
                               "--json"], env=env, capture_output=True, text=True, check=False,
                              cwd=tmp)
        seconds = time.perf_counter() - started
        cpu = _children_cpu() - cpu
        exited = time.time()
        if done.returncode != 0:
            raise SystemExit(f"ragqa ingest failed ({done.returncode}): {done.stderr.strip()}")
        report = json.loads(done.stdout)
        if profile.is_file():
            timed = json.loads(profile.read_text(encoding="utf-8"))
            phases = {"start-up (process, imports)": timed["started"] - spawned,
                      **timed["seconds"], "exit": exited - timed["ended"]}
            phases["other"] = seconds - sum(phases.values())
        else:  # a ragqa without the RAGQA_PROFILE_INGEST hook
            phases = {}
    return {"seconds": seconds, "cpu_s": cpu, "chunks": report["chunks"],
            "papers": report["added"], "phases": phases}


def run_pairs(source: Path, texts: list[str], pairs: int, before: Path | None
              ) -> dict[str, Any]:
    from ragqa.models.encoders import LocalMiniLM

    loads: list[float] = []
    others: list[float] = []
    loaded = time.perf_counter()
    # issue 18's reference: one run at a time, onnxruntime's defaults
    raw = LocalMiniLM(workers=1, graph_optimization="all")
    model_load_s = time.perf_counter() - loaded
    raw.embed(texts[:64])  # warm-up: first ONNX runs allocate
    # ragqa's own embedder (one single-threaded run per core side by side), warm: what is
    # left of the gap once the embedding itself is as fast as ragqa makes it.
    side = LocalMiniLM()
    side.embed(texts[:64])

    kinds = ["raw", "side", "ragqa"] + (["before"] if before else [])
    runs: dict[str, list[Any]] = {kind: [] for kind in kinds}
    raw_cpu: list[float] = []
    side_cpu: list[float] = []
    for i in range(pairs):
        for kind in kinds[i % len(kinds):] + kinds[: i % len(kinds)]:  # rotate the order
            loads.append(load_average())
            busy = busy_cpu_seconds()
            if kind in ("raw", "side"):
                seconds, cpu = time_raw_cpu(raw if kind == "raw" else side, texts)
                runs[kind].append(seconds)
                (raw_cpu if kind == "raw" else side_cpu).append(cpu)
            else:
                runs[kind].append(time_ingest(source, None if kind == "ragqa" else before))
                seconds, cpu = runs[kind][-1]["seconds"], runs[kind][-1]["cpu_s"]
            # What other processes used while this run ran, as cores: the benchmark's own runs
            # raise the load average, which says nothing about anyone else.
            others.append(max(0.0, busy_cpu_seconds() - busy - cpu) / seconds)
            log(f"  pair {i + 1}: {kind:<6} {seconds:6.1f} s ({len(texts) / seconds:5.1f} "
                f"papers/s), load {loads[-1]:.2f}, other processes {others[-1]:.2f} cores")
    result: dict[str, Any] = {
        "raw": {"seconds": [round(s, 2) for s in runs["raw"]],
                "papers_per_s": round(len(texts) / statistics.median(runs["raw"]), 2),
                "cpu_s": [round(s, 2) for s in raw_cpu],
                "model_load_s": round(model_load_s, 2)},
        "side_by_side": {"seconds": [round(s, 2) for s in runs["side"]],
                         "papers_per_s": round(len(texts) / statistics.median(runs["side"]), 2),
                         "cpu_s": [round(s, 2) for s in side_cpu], "workers": side.workers},
        "load_averages": [round(x, 2) for x in loads],
        "other_processes_cores": [round(x, 3) for x in others],
    }
    for kind in kinds[2:]:
        result[kind] = summarise(runs[kind], runs["raw"], raw_cpu, len(texts))
        vs_side = [r / o["seconds"] for r, o in zip(runs["side"], runs[kind], strict=True)]
        result[kind]["pair_ratios_vs_side_by_side"] = [round(r, 3) for r in vs_side]
        result[kind]["ratio_vs_side_by_side"] = round(statistics.median(vs_side), 3)
    result["_embedder"] = raw
    return result


def summarise(ours: list[dict[str, Any]], raw_s: list[float], raw_cpu: list[float],
              papers: int) -> dict[str, Any]:
    ratios = [r / o["seconds"] for r, o in zip(raw_s, ours, strict=True)]
    # CPU seconds move less with load than wall seconds do, but cannot show overlap (work done
    # on two threads at once): a second opinion, not the figure.
    cpu_ratios = [r / o["cpu_s"] for r, o in zip(raw_cpu, ours, strict=True)]
    names = [n for n in ours[0]["phases"] if all(n in o["phases"] for o in ours)]
    return {"seconds": [round(o["seconds"], 2) for o in ours],
            "papers_per_s": round(papers / statistics.median(o["seconds"] for o in ours), 2),
            "chunks": ours[0]["chunks"],
            "pair_ratios": [round(r, 3) for r in ratios],
            "ratio": round(statistics.median(ratios), 3),
            "cpu_s": [round(o["cpu_s"], 2) for o in ours],
            "cpu_pair_ratios": [round(r, 3) for r in cpu_ratios],
            "cpu_ratio": round(statistics.median(cpu_ratios), 3),
            "phases_s": {n: round(statistics.median(o["phases"][n] for o in ours), 3)
                         for n in names}}


# ---------------------------------------------------------------- tokens

def token_budget(embedder: Any, source: Path) -> dict[str, Any]:
    """Tokens the model reads in the raw run and in ragqa's, and where ragqa's extra come from.
    Counts include [CLS] and [SEP]; "read" is what fits the 256-token window."""
    from ragqa.config import load_settings
    from ragqa.index.ingest import embedding_input, make_chunker
    from ragqa.sources import read_sources

    with tempfile.TemporaryDirectory() as home:
        settings = load_settings({"RAGQA_HOME": home, "RAGQA_ENV_FILE": "/nonexistent"})
    chunker = make_chunker(embedder, settings)
    count = embedder.count_tokens
    raw_read = past_window = titles = specials = overlap = ours_read = chunks = 0
    for paper in read_sources([source]).papers:
        whole = count(f"{paper.title}. {paper.text}") + 2
        raw_read += min(whole, MAX_TOKENS)
        pieces = chunker(paper)
        chunks += len(pieces)
        ours_read += sum(min(count(embedding_input(paper, c)) + 2, MAX_TOKENS) for c in pieces)
        if len(pieces) == 1:
            past_window += max(0, whole - MAX_TOKENS)
            continue
        text = count(paper.text)
        title = 0 if paper.title_derived else count(f"{paper.title}.")
        past_window += max(0, min(whole, title + text + 2) - MAX_TOKENS)
        titles += title * (len(pieces) - 1)
        specials += 2 * (len(pieces) - 1)
        overlap += sum(count(c) for c in pieces) - text
    return {"raw_tokens_read": raw_read, "ragqa_tokens_read": ours_read, "ragqa_chunks": chunks,
            "extra": {"text past 256 tokens": past_window, "title on every chunk": titles,
                      "overlap between chunks": overlap, "[CLS]/[SEP] of extra chunks": specials,
                      "other (joins)": ours_read - raw_read - past_window - titles - overlap
                      - specials}}


# ---------------------------------------------------------------- running

def compile_code(code: Path) -> None:
    """Byte-compile a checkout's ragqa/, as `pip install` does: with PYTHONDONTWRITEBYTECODE
    set (as on the team's machines) an editable install would otherwise compile every module
    from source in every run (~0.1 s), which no installed ragqa pays."""
    compileall.compile_dir(str(code / "ragqa"), quiet=1)


def run_benchmark(data: Path, n: int, pairs: int, before: Path | None) -> dict[str, Any]:
    for code in [REPO, *([before] if before else [])]:
        compile_code(code)
    records = read_records(data, n)
    texts = [raw_input(r) for r in records]
    log(f"{len(records)} abstracts from {data}")
    with tempfile.TemporaryDirectory(prefix="ragqa-throughput-src-") as tmp:
        source = Path(tmp) / "papers.jsonl"
        source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                          encoding="utf-8")
        result = run_pairs(source, texts, pairs, before)
        tokens = token_budget(result.pop("_embedder"), source)
    raw_s = statistics.median(result["raw"]["seconds"])
    per_token = raw_s / tokens["raw_tokens_read"]
    tokens["extra_s_estimated"] = {k: round(v * per_token, 2) for k, v in tokens["extra"].items()}
    # Quiet: the machine was idle when the benchmark began, and no other process took more
    # than MAX_OTHERS of a core during any run.
    loaded = result["load_averages"][0] > MAX_LOAD \
        or max(result["other_processes_cores"]) > MAX_OTHERS
    return {"data": str(data), "papers": len(records), "pairs": pairs, "target": TARGET_RATIO,
            "max_load": MAX_LOAD, "loaded": loaded,
            "verdict": "LOADED, not a result" if loaded else "result", **result,
            "tokens": tokens}


def compare_batch_sizes(data: Path, n: int, repeats: int, sizes: list[int]) -> dict[str, Any]:
    """The raw embedder at each batch size, two ways: one run at a time on onnxruntime's
    default threads (issue 18's reference), and ragqa's default, one single-threaded run per
    core side by side ("x N"). CPU seconds too: what the threads burn for the same texts."""
    from ragqa.models.encoders import LocalMiniLM

    texts = [raw_input(r) for r in read_records(data, n)]
    ways = {"": LocalMiniLM(workers=1, graph_optimization="all"), "side by side": LocalMiniLM()}
    names = [f"{size}" + (f" x {embedder.workers}" if way else "")
             for size in sizes for way, embedder in ways.items()]
    for embedder in ways.values():
        embedder.embed(texts[:64])
    seconds: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    loads: list[float] = []
    for i in range(repeats):
        for size in sizes if i % 2 == 0 else sizes[::-1]:
            for way, embedder in ways.items():
                name = f"{size}" + (f" x {embedder.workers}" if way else "")
                embedder.batch_size = size
                loads.append(load_average())
                wall, used = time_raw_cpu(embedder, texts)
                seconds[name].append(wall)
                cpu[name].append(used)
                log(f"  repeat {i + 1}: batch {name:>6} {wall:6.1f} s, CPU {used:6.1f} s, "
                    f"load {loads[-1]:.2f}")
    return _compared(len(texts), repeats, loads, seconds, "batch_sizes",
                     {name: {"cpu_s": [round(s, 2) for s in cpu[name]]} for name in names})


def compare_graph_optimizations(data: Path, n: int, repeats: int, levels: list[str]
                                ) -> dict[str, Any]:
    """ragqa's embedder (side by side) and the one-at-a-time reference at each of
    onnxruntime's graph optimization levels, alternating, with the largest difference between
    the vectors a level gives and those of the first level."""
    from ragqa.models.encoders import LocalMiniLM

    texts = [raw_input(r) for r in read_records(data, n)]
    embedders = {f"{level}{way}": LocalMiniLM(workers=workers, graph_optimization=level)
                 for level in levels for way, workers in (("", 0), (" one at a time", 1))}
    first = embedders[levels[0]].embed(texts)
    difference = {name: float(np.abs(embedder.embed(texts) - first).max())
                  for name, embedder in embedders.items()}
    seconds: dict[str, list[float]] = {name: [] for name in embedders}
    loads: list[float] = []
    for i in range(repeats):
        for name in list(embedders) if i % 2 == 0 else list(embedders)[::-1]:
            loads.append(load_average())
            seconds[name].append(time_raw(embedders[name], texts))
            log(f"  repeat {i + 1}: {name:<22} {seconds[name][-1]:6.2f} s, load {loads[-1]:.2f}")
    return _compared(len(texts), repeats, loads, seconds, "levels",
                     {name: {"largest_difference": difference[name]} for name in embedders})


def _compared(papers: int, repeats: int, loads: list[float], seconds: dict[str, list[float]],
              key: str, extra: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What a comparison of embedder settings returns: per setting its seconds, papers/s and
    time against the fastest (with `extra`), under `key`."""
    medians = {name: statistics.median(runs) for name, runs in seconds.items()}
    fastest = min(medians.values())
    loaded = max(loads) > MAX_LOAD
    return {"papers": papers, "repeats": repeats, "load_averages": loads, "loaded": loaded,
            "verdict": "LOADED, not a result" if loaded else "result",
            key: {name: {"seconds": [round(s, 2) for s in runs],
                         "papers_per_s": round(papers / medians[name], 2),
                         "time_vs_fastest": round(medians[name] / fastest, 3), **extra[name]}
                  for name, runs in seconds.items()}}


# ---------------------------------------------------------------- output

def log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def print_table(result: dict[str, Any]) -> None:
    kinds = [k for k in ("ragqa", "before") if k in result]
    loads = ", ".join(f"{x:.2f}" for x in result["load_averages"])
    print(f"Ingest throughput: {result['papers']} abstracts, median of {result['pairs']} "
          f"alternating pairs -- {result['verdict']}")
    others = ", ".join(f"{x:.2f}" for x in result.get("other_processes_cores", []))
    print(f"  1-minute load average before each run: {loads} (a result needs <= "
          f"{result['max_load']} before the first)")
    if others:
        print(f"  other processes during each run, in cores: {others} (a result needs <= "
              f"{MAX_OTHERS} in every run)")
    print(f"  raw embedder: {result['raw']['papers_per_s']:.2f} papers/s (model load "
          f"{result['raw']['model_load_s']:.2f} s, excluded); ragqa's embedder alone, "
          f"{result['side_by_side']['workers']} runs side by side: "
          f"{result['side_by_side']['papers_per_s']:.2f} papers/s")
    for kind in kinds:
        row = result[kind]
        pairs = ", ".join(f"{r:.3f}" for r in row["pair_ratios"])
        label = "ragqa ingest" if kind == "ragqa" else "ragqa ingest, --before code"
        meets = "meets" if row["ratio"] >= result["target"] else "below"
        cpu_pairs = ", ".join(f"{r:.3f}" for r in row["cpu_pair_ratios"])
        print(f"  {label}: {row['papers_per_s']:.2f} papers/s, ratio {row['ratio']:.3f} "
              f"({meets} {result['target']}; pairs {pairs}), {row['chunks']} chunks; "
              f"CPU-seconds ratio {row['cpu_ratio']:.3f} (pairs {cpu_pairs}); against "
              f"ragqa's embedder alone {row['ratio_vs_side_by_side']:.3f} (pairs "
              + ", ".join(f"{r:.3f}" for r in row["pair_ratios_vs_side_by_side"]) + ")")
    names = list(dict.fromkeys(n for k in kinds for n in result[k]["phases_s"]))
    if names:
        print("  where ragqa's time goes (median seconds):")
        print(f"    {'':<34}" + "".join(f"{k:>10}" for k in kinds))
        for name in names:
            print(f"    {name:<34}" + "".join(
                f"{result[k]['phases_s'][name]:>10.2f}" if name in result[k]["phases_s"]
                else f"{'-':>10}" for k in kinds))
        print(f"    {'total (wall)':<34}" + "".join(
            f"{statistics.median(result[k]['seconds']):>10.2f}" for k in kinds))
    tokens = result["tokens"]
    print(f"  tokens read by the model: raw {tokens['raw_tokens_read']}, ragqa "
          f"{tokens['ragqa_tokens_read']} ({tokens['ragqa_chunks']} chunks); ragqa's extra, "
          "with the embedding seconds they cost at the raw run's rate:")
    for name, extra in tokens["extra"].items():
        print(f"    {name:<34}{extra:>8}  ~{tokens['extra_s_estimated'][name]:.2f} s")


def _print_compared(result: dict[str, Any], title: str, key: str,
                    describe: Callable[[str, dict[str, Any]], str]) -> None:
    """A comparison of embedder settings (`_compared`), a line per setting."""
    print(f"{title}, {result['papers']} abstracts, median of {result['repeats']} -- "
          f"{result['verdict']}:")
    for name, row in result[key].items():
        print(f"  {describe(name, row)}")


def print_levels(result: dict[str, Any]) -> None:
    _print_compared(result, "Embedder", "levels", lambda name, row: (
        f"{name:<22} {row['papers_per_s']:6.2f} papers/s, time {row['time_vs_fastest']:.3f} x "
        f"the fastest, vectors differ by at most {row['largest_difference']:.1e}"))


def print_batch_sizes(result: dict[str, Any]) -> None:
    _print_compared(result, "Raw embedder", "batch_sizes", lambda size, row: (
        f"batch {size:>6}: {row['papers_per_s']:6.2f} papers/s, time "
        f"{row['time_vs_fastest']:.2f} x the fastest, CPU seconds "
        f"{statistics.median(row['cpu_s']):.1f}"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="mlconf corpus.jsonl.gz (default: ../shared/data/mlconf/...)")
    parser.add_argument("--n", type=int, default=300, help="abstracts to ingest (default 300)")
    parser.add_argument("--pairs", "--repeats", type=int, default=3,
                        help="alternating (raw, ragqa) pairs (default 3)")
    parser.add_argument("--before", type=Path, default=None, metavar="DIR",
                        help="also time the ragqa of this checkout, in the same rotation")
    parser.add_argument("--batch-sizes", default="", metavar="1,8,32",
                        help="instead: time the raw embedder at each of these batch sizes")
    parser.add_argument("--graph-optimizations", default="", metavar="basic,all",
                        help="instead: time the embedder at each onnxruntime graph "
                             "optimization level (basic, extended, all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    args = parser.parse_args(argv)
    if args.n < 1 or args.pairs < 1:
        parser.error("--n and --pairs must be at least 1")
    if args.before is not None and not (args.before / "ragqa" / "__init__.py").is_file():
        parser.error(f"--before {args.before}: no ragqa/ package there")
    try:
        sizes = [int(size) for size in args.batch_sizes.split(",") if size.strip()]
    except ValueError:
        parser.error("--batch-sizes takes whole numbers separated by commas")
    if any(size < 1 for size in sizes):
        parser.error("--batch-sizes must be at least 1")
    levels = [level.strip() for level in args.graph_optimizations.split(",") if level.strip()]
    if any(level not in ("basic", "extended", "all") for level in levels):
        parser.error("--graph-optimizations takes basic, extended or all, separated by commas")

    data = args.data or next((place / "mlconf" / "corpus.jsonl.gz" for place in DATA_PLACES
                              if (place / "mlconf" / "corpus.jsonl.gz").is_file()),
                             DATA_PLACES[0] / "mlconf" / "corpus.jsonl.gz")
    if not data.is_file():
        print(f"mlconf data not found at {data}: skipping")
        return 0
    if levels:
        result, show = compare_graph_optimizations(data, args.n, args.pairs, levels), print_levels
    elif sizes:
        result, show = compare_batch_sizes(data, args.n, args.pairs, sizes), print_batch_sizes
    else:
        result, show = run_benchmark(data, args.n, args.pairs, args.before), print_table
    if not args.json:
        show(result)
        return 0
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
