"""Compare 2-D layout libraries for the paper map: PCA (numpy SVD), umap-learn, openTSNE and PaCMAP,
on the paper vectors that `bench/maps/dump_vectors.py` writes (L2-normalised, 384-d).

Run it in a venv of its own, so that the project's environment gains none of these libraries:

    python3 -m venv /tmp/mapbench-venv
    /tmp/mapbench-venv/bin/pip install numpy scikit-learn umap-learn openTSNE pacmap
    /tmp/mapbench-venv/bin/python bench/maps/layouts.py --vectors /tmp/v38k.npz \\
        --sizes 1000,37932 --methods pca,umap,opentsne,pacmap \\
        --out /tmp/mapbench/results.json --clear-numba-cache

Each method runs in subprocesses of its own (fresh imports, isolated peak RSS):

- small (the first size, 1,000): the library's import time, the first fit in the process (with
  --clear-numba-cache the numba on-disk caches of umap, pynndescent and pacmap are deleted first,
  so it is the first map after an install), then the median of 3 further fits;
- full (each further size): one fit after warm-up fits on the small sample and on 5,000 points,
  so that numba's compilation is not counted, and the process's peak RSS (ru_maxrss) and its
  RSS before fitting;
- transform: a fit on all but 200 points (default_rng(2)) and the time to place those 200 with the
  library's transform, then a second transform of the same 200, timed apart, as the first call
  may build an index lazily; at the largest size where the method's full fit took under
  5 minutes, else at 5,000. Warm-up fits and transforms at the small size and 5,000 run first;
- umap only, at the largest size: random_state=None, n_jobs=2, fitted twice (time, and whether
  the two layouts are identical).

Neighbourhood preservation (kNN@10): for up to 2,000 query points (default_rng(1)), the share of
each point's 10 exact nearest neighbours by cosine in the original space (itself excluded) that
are among its 10 exact nearest neighbours by Euclidean distance in 2-D; the mean over queries.
Samples of n < all points: default_rng(0).choice(all, n, replace=False).

A method whose full fit runs past --timeout seconds (default 900) is stopped and reported so.
Every timed block also records the CPU time of the process (all threads) and the CPU time the
rest of the machine spent meanwhile (from /proc/stat), so that a timing disturbed by another
process on the 2 cores shows as such; before each phase it waits (--wait-quiet) for a quiet
machine.

Writes the JSON to --out and a markdown table beside it (same name, .md).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

K = 10
N_QUERIES = 2000
N_HELDOUT = 200
TRANSFORM_FALLBACK_SIZE = 5000
TRANSFORM_FULL_LIMIT_S = 300.0
WARMUP_SIZE = 5000
PACKAGES = ["numpy", "scipy", "scikit-learn", "umap-learn", "pynndescent", "numba", "llvmlite",
            "openTSNE", "pacmap", "faiss-cpu", "annoy"]
NUMBA_CACHED = {"umap": ["umap", "pynndescent"], "pacmap": ["pacmap"]}


# ---------------------------------------------------------------- data and measures

def load_vectors(path: str) -> np.ndarray:
    vectors = np.load(path)["vectors"].astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def sample(total: int, n: int) -> np.ndarray:
    if n >= total:
        return np.arange(total)
    return np.random.default_rng(0).choice(total, n, replace=False)


def queries_for(n: int) -> np.ndarray:
    return np.random.default_rng(1).choice(n, min(N_QUERIES, n), replace=False)


def heldout_for(n: int) -> np.ndarray:
    return np.random.default_rng(2).choice(n, N_HELDOUT, replace=False)


def knn_original(x: np.ndarray, queries: np.ndarray, block: int = 250) -> np.ndarray:
    """Exact 10 nearest neighbours by cosine (vectors are unit length), the query excluded."""
    x64 = x.astype(np.float64)
    out = np.empty((len(queries), K), dtype=np.int64)
    for start in range(0, len(queries), block):
        q = queries[start:start + block]
        sims = x64[q] @ x64.T
        sims[np.arange(len(q)), q] = -np.inf
        out[start:start + len(q)] = np.argpartition(-sims, K, axis=1)[:, :K]
    return out


def knn_layout(y: np.ndarray, queries: np.ndarray, block: int = 250) -> np.ndarray:
    """Exact 10 nearest neighbours by Euclidean distance in 2-D, the query excluded."""
    y64 = np.asarray(y, dtype=np.float64)
    out = np.empty((len(queries), K), dtype=np.int64)
    for start in range(0, len(queries), block):
        q = queries[start:start + block]
        diff = y64[q][:, None, :] - y64[None, :, :]
        dist = np.einsum("qnd,qnd->qn", diff, diff)
        dist[np.arange(len(q)), q] = np.inf
        out[start:start + len(q)] = np.argpartition(dist, K, axis=1)[:, :K]
    return out


def preservation(x: np.ndarray, y: np.ndarray, queries: np.ndarray) -> float:
    a = knn_original(x, queries)
    b = knn_layout(y, queries)
    shared = [len(np.intersect1d(ra, rb, assume_unique=True)) for ra, rb in zip(a, b, strict=True)]
    return float(np.mean(shared) / K)


# ---------------------------------------------------------------- the methods

def import_method(method: str):
    started = time.perf_counter()
    if method == "pca":
        lib = None
    elif method == "umap":
        import umap as lib
    elif method == "opentsne":
        import openTSNE as lib
    elif method == "pacmap":
        import pacmap as lib
    else:
        raise SystemExit(f"unknown method {method}")
    return lib, time.perf_counter() - started


class Layout:
    """fit(x) -> 2-D array; transform(x_new) -> 2-D array of the new points."""

    def __init__(self, method: str, lib, seeded: bool = True):
        self.method, self.lib, self.seeded = method, lib, seeded
        self.model = None
        self.basis = None

    def fit(self, x: np.ndarray) -> np.ndarray:
        x = np.array(x, dtype=np.float32, copy=True)
        if self.method == "pca":
            mean = x.mean(axis=0)
            _, _, vt = np.linalg.svd(x - mean, full_matrices=False)
            self.model = (mean, vt[:2])
            return (x - mean) @ vt[:2].T
        if self.method == "umap":
            if self.seeded:
                self.model = self.lib.UMAP(n_neighbors=15, min_dist=0.1, metric="cosine",
                                           random_state=0)
            else:
                self.model = self.lib.UMAP(n_neighbors=15, min_dist=0.1, metric="cosine",
                                           random_state=None, n_jobs=2)
            return np.asarray(self.model.fit_transform(x))
        if self.method == "opentsne":
            tsne = self.lib.TSNE(n_components=2, perplexity=30, metric="cosine", n_jobs=2,
                                 random_state=0)
            self.model = tsne.fit(x)
            return np.asarray(self.model)
        if self.method == "pacmap":
            self.model = self.lib.PaCMAP(n_components=2, n_neighbors=10, random_state=0)
            self.basis = x
            return np.asarray(self.model.fit_transform(x))
        raise SystemExit(f"unknown method {self.method}")

    def transform(self, x_new: np.ndarray) -> np.ndarray:
        x_new = np.array(x_new, dtype=np.float32, copy=True)
        if self.method == "pca":
            mean, components = self.model
            return (x_new - mean) @ components.T
        if self.method == "umap":
            return np.asarray(self.model.transform(x_new))
        if self.method == "opentsne":
            return np.asarray(self.model.transform(x_new))
        if self.method == "pacmap":
            return np.asarray(self.model.transform(x_new, basis=self.basis))
        raise SystemExit(f"unknown method {self.method}")


def library_version(method: str) -> str | None:
    name = {"pca": "numpy", "umap": "umap-learn", "opentsne": "openTSNE",
            "pacmap": "pacmap"}[method]
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def clear_numba_cache(method: str) -> int:
    removed = 0
    for package in NUMBA_CACHED.get(method, []):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        for location in spec.submodule_search_locations:
            for path in Path(location).rglob("*"):
                if path.suffix in (".nbi", ".nbc"):
                    path.unlink()
                    removed += 1
    return removed


def _cpu_marks() -> tuple[float, float]:
    """(seconds of CPU the whole machine spent busy, seconds of CPU this process spent)."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    machine = (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return machine, usage.ru_utime + usage.ru_stime


class Clock:
    """Wall time of a block, the CPU time this process spent in it (all its threads) and the CPU
    time the rest of the machine spent meanwhile (other processes competing for the 2 cores)."""

    def __enter__(self):
        self._wall = time.perf_counter()
        self._machine, self._own = _cpu_marks()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self._wall
        machine, own = _cpu_marks()
        self.cpu = own - self._own
        self.others_cpu = max(0.0, (machine - self._machine) - self.cpu)
        return False

    def record(self, out: dict, name: str) -> float:
        out[f"{name}_s"] = self.wall
        out[f"{name}_cpu_s"] = round(self.cpu, 2)
        out[f"{name}_others_cpu_s"] = round(self.others_cpu, 2)
        return self.wall


def rss_now_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------- worker phases

def warm_up(args, x_all: np.ndarray, method: str, lib, out: dict, seeded: bool = True) -> None:
    """Fit on the small sample, then on 5,000 points (umap takes exact neighbours below 4,096
    points and NN-descent above, so only the second compiles the code a large fit runs)."""
    with Clock() as clock:
        Layout(method, lib, seeded).fit(x_all[sample(len(x_all), args.small)])
    clock.record(out, "warmup_fit_small")
    if args.size > WARMUP_SIZE:
        with Clock() as clock:
            Layout(method, lib, seeded).fit(x_all[sample(len(x_all), WARMUP_SIZE)])
        clock.record(out, f"warmup_fit_{WARMUP_SIZE}")


def phase_small(args, x_all: np.ndarray) -> dict:
    out: dict = {}
    if args.clear_numba_cache:
        out["numba_cache_files_removed"] = clear_numba_cache(args.method)
    with Clock() as clock:
        lib, _ = import_method(args.method)
    clock.record(out, "import")
    out["version"] = library_version(args.method)
    x = x_all[sample(len(x_all), args.size)]
    out["n"] = len(x)
    with Clock() as clock:
        first = Layout(args.method, lib).fit(x)
    clock.record(out, "first_fit")
    repeats, cpu, others, layouts = [], [], [], []
    for _ in range(3):
        with Clock() as clock:
            layouts.append(Layout(args.method, lib).fit(x))
        repeats.append(clock.wall)
        cpu.append(round(clock.cpu, 2))
        others.append(round(clock.others_cpu, 2))
    out["repeat_fit_s"] = repeats
    out["repeat_fit_cpu_s"] = cpu
    out["repeat_fit_others_cpu_s"] = others
    out["median_fit_s"] = statistics.median(repeats)
    out["repeats_identical_to_first"] = all(np.array_equal(first, other) for other in layouts)
    out["knn10"] = preservation(x, first, queries_for(len(x)))
    out["knn10_heldout200"] = preservation(x, first, heldout_for(len(x)))
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def phase_full(args, x_all: np.ndarray) -> dict:
    out: dict = {}
    with Clock() as clock:
        lib, _ = import_method(args.method)
    clock.record(out, "import")
    out["version"] = library_version(args.method)
    warm_up(args, x_all, args.method, lib, out)
    x = x_all[sample(len(x_all), args.size)]
    out["n"] = len(x)
    out["rss_before_fit_mib"] = rss_now_mib()
    with Clock() as clock:
        y = Layout(args.method, lib).fit(x)
    clock.record(out, "fit")
    out["peak_rss_mib"] = peak_rss_mib()
    out["knn10"] = preservation(x, y, queries_for(len(x)))
    out["knn10_heldout200"] = preservation(x, y, heldout_for(len(x)))
    return out


def phase_transform(args, x_all: np.ndarray) -> dict:
    out: dict = {}
    with Clock() as clock:
        lib, _ = import_method(args.method)
    clock.record(out, "import")
    warm_up(args, x_all, args.method, lib, out)
    for size in sorted({args.small, min(WARMUP_SIZE, args.size)}):
        warm_x = x_all[sample(len(x_all), size)]
        warm = Layout(args.method, lib)
        warm.fit(warm_x[:-50])
        with Clock() as clock:
            warm.transform(warm_x[-50:])
        clock.record(out, f"warmup_first_transform_50_at_{size}")
    x = x_all[sample(len(x_all), args.size)]
    out["n"] = len(x)
    held = heldout_for(len(x))
    keep = np.setdiff1d(np.arange(len(x)), held)
    layout = Layout(args.method, lib)
    with Clock() as clock:
        y_fit = layout.fit(x[keep])
    clock.record(out, "fit")
    with Clock() as clock:
        y_new = layout.transform(x[held])
    clock.record(out, "transform_200")
    # a second call on the same model: what is left once one-off work (an index built lazily on
    # the first transform, as umap's pynndescent search graph) has been done
    with Clock() as clock:
        y_again = layout.transform(x[held])
    clock.record(out, "transform_200_again")
    out["transform_again_identical"] = bool(np.array_equal(y_new, y_again))
    out["peak_rss_mib"] = peak_rss_mib()
    # the combined layout: fitted points first, then the placed ones
    x_comb = np.concatenate([x[keep], x[held]])
    y_comb = np.concatenate([y_fit, y_new])
    placed = np.arange(len(keep), len(x_comb))
    out["knn10_placed200"] = preservation(x_comb, y_comb, placed)
    fitted_ref = np.random.default_rng(3).choice(len(keep), N_HELDOUT, replace=False)
    out["knn10_fitted200_same_layout"] = preservation(x_comb, y_comb, fitted_ref)
    return out


def phase_umap_unseeded(args, x_all: np.ndarray) -> dict:
    out: dict = {}
    with Clock() as clock:
        lib, _ = import_method("umap")
    clock.record(out, "import")
    warm_up(args, x_all, "umap", lib, out, seeded=False)
    x = x_all[sample(len(x_all), args.size)]
    out["n"] = len(x)
    layouts, times, cpu, others = [], [], [], []
    for _ in range(2):
        with Clock() as clock:
            layouts.append(Layout("umap", lib, seeded=False).fit(x))
        times.append(clock.wall)
        cpu.append(round(clock.cpu, 2))
        others.append(round(clock.others_cpu, 2))
    out["fit_s"] = times
    out["fit_cpu_s"] = cpu
    out["fit_others_cpu_s"] = others
    out["identical"] = bool(np.array_equal(layouts[0], layouts[1]))
    out["max_abs_diff"] = float(np.max(np.abs(layouts[0] - layouts[1])))
    out["knn10"] = [preservation(x, y, queries_for(len(x))) for y in layouts]
    out["peak_rss_mib"] = peak_rss_mib()
    return out


PHASES = {"small": phase_small, "full": phase_full, "transform": phase_transform,
          "umap_unseeded": phase_umap_unseeded}


def worker(args) -> None:
    import logging
    import warnings
    logging.basicConfig(level=logging.WARNING)
    x_all = load_vectors(args.vectors)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = PHASES[args.worker](args, x_all)
    result["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    Path(args.result).write_text(json.dumps(result))


# ---------------------------------------------------------------- orchestration

def wait_quiet(limit: float) -> float:
    """Wait (at most `limit` s) until the machine is nearly idle for 3 s; the seconds waited."""
    started = time.perf_counter()
    while time.perf_counter() - started < limit:
        machine, _ = _cpu_marks()
        time.sleep(3)
        busy = (_cpu_marks()[0] - machine) / 3
        if busy < 0.25:
            break
    return time.perf_counter() - started


def run_phase(args, phase: str, method: str, size: int, timeout: float) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        result_path = handle.name
    command = [sys.executable, os.path.abspath(__file__), "--worker", phase, "--method", method,
               "--size", str(size), "--small", str(args.small_size), "--vectors", args.vectors,
               "--result", result_path]
    if args.clear_numba_cache:
        command.append("--clear-numba-cache")
    waited = wait_quiet(args.wait_quiet)
    print(f"[{time.strftime('%H:%M:%S')}] {method} {phase} n={size} (waited {waited:.0f} s "
          f"for a quiet machine)", flush=True)
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        stderr = expired.stderr.decode() if isinstance(expired.stderr, bytes) \
            else (expired.stderr or "")
        print(f"    stopped after {timeout:.0f} s", flush=True)
        return {"timed_out_after_s": timeout, "stderr_tail": stderr[-2000:]}
    wall = time.perf_counter() - started
    stderr_lines = [line for line in proc.stderr.splitlines() if line.strip()]
    if proc.returncode != 0:
        print(proc.stderr[-3000:], flush=True)
        return {"error": f"exit {proc.returncode}", "stderr_tail": proc.stderr[-3000:]}
    result = json.loads(Path(result_path).read_text())
    os.unlink(result_path)
    result["process_wall_s"] = wall
    result["waited_for_quiet_s"] = round(waited, 1)
    result["stderr_lines"] = sorted(set(line[:300] for line in stderr_lines))[:40]
    brief = {k: v for k, v in result.items()
             if k not in ("warnings", "stderr_lines") and not isinstance(v, list)}
    print("    " + json.dumps(brief, default=str), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", default="/tmp/v38k.npz")
    parser.add_argument("--sizes", default="1000,37932",
                        help="comma-separated; the first is the small size "
                        "(first call + 3 repeats)")
    parser.add_argument("--methods", default="pca,umap,opentsne,pacmap")
    parser.add_argument("--out", default="bench/results/map_layouts.json")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds allowed to one full fit before the method is stopped")
    parser.add_argument("--clear-numba-cache", action="store_true",
                        help="delete numba's on-disk caches of umap/pynndescent/pacmap before "
                             "the first call, so that it is the first map after an install")
    parser.add_argument("--wait-quiet", type=float, default=120.0,
                        help="before each phase, wait up to this many seconds for the machine "
                             "to be nearly idle (other processes distort the timings)")
    parser.add_argument("--phases", default="small,full,transform,umap_unseeded",
                        help="which of small,full,transform,umap_unseeded to run")
    # worker mode (internal)
    parser.add_argument("--worker", choices=sorted(PHASES), help=argparse.SUPPRESS)
    parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--small", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    total = len(np.load(args.vectors)["vectors"])
    sizes = [min(int(s), total) for s in args.sizes.split(",")]
    args.small_size = sizes[0]
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    phases = {p.strip() for p in args.phases.split(",") if p.strip()}
    versions = {}
    for package in PACKAGES:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[package] = importlib.metadata.version(package)
    report = {"meta": {"vectors": args.vectors, "total": total, "sizes": sizes, "methods": methods,
                       "python": platform.python_version(), "cpus": os.cpu_count(),
                       "versions": versions, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                       "command": " ".join([sys.executable] + sys.argv)},
              "results": {}}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    slack = 240.0
    for method in methods:
        res: dict = {"full": {}}
        if "small" in phases:
            res["small"] = run_phase(args, "small", method, sizes[0], args.timeout + slack)
        for size in sizes[1:] if "full" in phases else []:
            res["full"][str(size)] = run_phase(args, "full", method, size, args.timeout + slack)
        if "transform" in phases:
            largest = sizes[-1]
            full = res["full"].get(str(largest), {})
            fit_s = full.get("fit_s")
            if len(sizes) == 1 or "full" not in phases or \
                    fit_s is not None and fit_s < TRANSFORM_FULL_LIMIT_S:
                t_size = largest
            else:
                t_size = min(TRANSFORM_FALLBACK_SIZE, total)
            res["transform"] = run_phase(args, "transform", method, t_size,
                                         args.timeout + slack)
        if method == "umap" and "umap_unseeded" in phases and len(sizes) > 1:
            res["umap_unseeded"] = run_phase(args, "umap_unseeded", method, sizes[-1],
                                             2 * args.timeout + slack)
        report["results"][method] = res
        out.write_text(json.dumps(report, indent=2))
    report["meta"]["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    out.write_text(json.dumps(report, indent=2))
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


def _fmt(value, digits=2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def markdown(report: dict) -> str:
    meta = report["meta"]
    sizes = meta["sizes"]
    big = str(sizes[-1]) if len(sizes) > 1 else None
    lines = [f"# 2-D layouts of {meta['total']} paper vectors ({meta['cpus']} cores)", "",
             "versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()), "",
             f"| method | import s | first fit s @{sizes[0]} | median fit s @{sizes[0]} "
             f"| fit s @{big} | kNN@10 @{sizes[0]} | kNN@10 @{big} | transform n "
             f"| transform 200 s (2nd call) | placed kNN@10 | fitted kNN@10 (same layout) "
             f"| peak RSS MiB @{big} | others' CPU s during fit @{big} |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for method, res in report["results"].items():
        small = res.get("small", {})
        full = res.get("full", {}).get(big, {}) if big else {}
        tr = res.get("transform", {})
        fit_big = full.get("fit_s")
        if "timed_out_after_s" in full:
            fit_big = f"stopped > {full['timed_out_after_s']:.0f}"
        elif "error" in full:
            fit_big = full["error"]
        lines.append("| " + " | ".join([
            method, _fmt(small.get("import_s")), _fmt(small.get("first_fit_s")),
            _fmt(small.get("median_fit_s")), _fmt(fit_big, 1), _fmt(small.get("knn10"), 3),
            _fmt(full.get("knn10"), 3), _fmt(tr.get("n")),
            (f"{tr['transform_200_s']:.2f} ({tr['transform_200_again_s']:.2f})"
             if "transform_200_again_s" in tr else "–"),
            _fmt(tr.get("knn10_placed200"), 3), _fmt(tr.get("knn10_fitted200_same_layout"), 3),
            _fmt(full.get("peak_rss_mib"), 0), _fmt(full.get("fit_others_cpu_s"), 1)]) + " |")
    un = report["results"].get("umap", {}).get("umap_unseeded")
    if un and "fit_s" in un:
        lines += ["", f"umap random_state=None, n_jobs=2 @{un['n']}: fits "
                  + ", ".join(f"{t:.1f} s" for t in un["fit_s"])
                  + "; kNN@10 " + ", ".join(f"{v:.3f}" for v in un["knn10"])
                  + f"; the two layouts identical: {un['identical']}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
