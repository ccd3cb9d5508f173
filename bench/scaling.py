"""How far one Chroma server and ragqa's client-side BM25 snapshot go (docs/scaling.md).

    python bench/scaling.py follow --chroma-path DIR [--collection scale] [--before OLD]
    python bench/scaling.py snapshot --sizes 37932,150000,300000
    python bench/scaling.py stub-ingest --papers 20000 [--chroma-path DIR]

`follow`: a reader on another data folder than the writer's, against `chroma run --path DIR`
(started here on a copy-on-use folder you give; DIR is written to: use a copy). Times, side by
side in one run: the full rebuild a new client does (every paper read from the server), the
check every command and `ragqa serve` make (one read of the journal's head), and a reader
following one and then 1,000 new papers written by another client (medians of --repeats).

`snapshot`: the client's BM25 snapshot alone (no Chroma) for collections of the given sizes:
the mlconf abstracts (never ICML 2019's), then papers made by recombining their sentences.
Writing it, its size on disk, opening it, the memory it takes, a BM25 search, and taking in one
new paper (lexical.update_snapshot).

`stub-ingest`: `ragqa ingest` of N recombined papers into a Chroma server with an
OpenAI-compatible embedding server on loopback that answers at once (384-d vectors from a
hash): ragqa's own ingest ceiling (chunking, terms, upserts, journal), then the server's disk
and memory, and a nearest-neighbour query's latency.

Where ../shared/data is absent the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = REPO.parent / "shared" / "data"


def log(message: str) -> None:
    sys.stderr.write(f"[scaling] {message}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------- papers

def mlconf_records(data: Path) -> list[dict]:
    """The mlconf abstracts, less ICML 2019's (held out for independent evaluation)."""
    out = []
    with gzip.open(data / "mlconf" / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if str(record.get("venue", "")).upper().startswith("ICML") and \
                    str(record.get("year")) == "2019":
                continue
            out.append(record)
    return out


def recombined(records: list[dict], n: int, seed: int, prefix: str) -> list[dict]:
    """n papers whose titles and abstracts are made of real sentences drawn at random: text with
    the vocabulary and lengths of real abstracts, and new ids."""
    from ragqa.text import split_sentences

    rng = random.Random(seed)
    sentences = [s for r in records[:5000] for s in split_sentences(r.get("text", ""))]
    titles = [r["title"] for r in records if r.get("title")]
    lengths = [max(1, len(split_sentences(r.get("text", "")))) for r in records[:5000]]
    return [{"id": f"{prefix}-{i}", "title": rng.choice(titles),
             "abstract": " ".join(rng.choice(sentences) for _ in range(rng.choice(lengths))),
             "year": 2000 + i % 25}
            for i in range(n)]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------- processes

def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_chroma(path: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    chroma = Path(sys.executable).parent / "chroma"
    process = subprocess.Popen([str(chroma), "run", "--path", str(path), "--host", "127.0.0.1",
                                "--port", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1)
            return process, port
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise SystemExit("chroma run did not start")


def rss_mb(pid: int) -> float:
    """Resident memory of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def settings_for(home: Path, port: int, **extra: str):
    from ragqa.config import load_settings

    return load_settings({"RAGQA_HOME": str(home), "RAGQA_CHROMA_HOST": "127.0.0.1",
                          "RAGQA_CHROMA_PORT": str(port), "RAGQA_ENV_FILE": "/nonexistent",
                          **extra})


def ingest_cli(home: Path, port: int, path: Path, collection: str, **extra: str) -> float:
    """`ragqa ingest` in its own process, as a writer on another machine would; seconds."""
    env = {**os.environ, "RAGQA_HOME": str(home), "RAGQA_CHROMA_HOST": "127.0.0.1",
           "RAGQA_CHROMA_PORT": str(port), "RAGQA_ENV_FILE": "/nonexistent", **extra}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ragqa", "ingest", str(path), "-c", collection,
                    "--quiet"], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


# ---------------------------------------------------------------- follow

def bench_follow(args: argparse.Namespace) -> dict[str, Any]:
    from ragqa.index import lexical
    from ragqa.index.follow import follow, is_current
    from ragqa.index.store import Store, local_dir
    from ragqa.models.encoders import make_encoder

    records = mlconf_records(args.data)
    process, port = start_chroma(args.chroma_path)
    work = Path(tempfile.mkdtemp(prefix="ragqa-scaling-"))
    try:
        reader = settings_for(work / "reader", port)
        store = Store(reader, args.collection, make_encoder(reader))
        papers = store.count()
        log(f"collection {args.collection!r}: {papers} chunks on the server")

        # A collection written by an older ragqa has no journal yet: the first ingest starts it,
        # and every reader then reads everything once (timed apart, as `upgrade_s`).
        upgrade = None
        follow(store)
        path = write_jsonl(work / "warmup.jsonl", recombined(records, 1, 0, "warmup"))
        ingest_cli(work / "writer", port, path, args.collection)
        started = time.perf_counter()
        if follow(store) == "rebuilt":
            upgrade = time.perf_counter() - started
            log(f"first follow of a collection older than the journal: {upgrade:.1f} s")

        def fresh_reader() -> float:
            shutil.rmtree(work / "reader", ignore_errors=True)
            started = time.perf_counter()
            assert follow(store) == "rebuilt"
            return time.perf_counter() - started

        # Alternating with the checkout before the journal, when given: side by side, so that
        # the server's caches favour neither.
        full, before = [], []
        for _ in range(args.full_repeats):
            full.append(fresh_reader())
            if args.before:
                before.append(full_rebuild_before(args.before, work / "before", port,
                                                  args.collection))
        index = lexical.open_current(local_dir(reader, args.collection))
        size = index.size
        index.close()
        log(f"full rebuild: {statistics.median(full):.1f} s for {size} papers")
        checks = []
        for _ in range(50):
            started = time.perf_counter()
            assert is_current(store)
            checks.append((time.perf_counter() - started) * 1000)
        log(f"check: median {statistics.median(checks):.2f} ms")

        def seen_after(batch: list[dict], tag: str) -> dict[str, Any]:
            path = write_jsonl(work / f"{tag}.jsonl", batch)
            written = ingest_cli(work / "writer", port, path, args.collection)
            started = time.perf_counter()
            result = follow(store, wait=False)
            followed = time.perf_counter() - started
            started = time.perf_counter()
            index = lexical.open_current(local_dir(reader, args.collection))
            opened = time.perf_counter() - started
            present = all(index.index_of(r["id"]) is not None for r in batch)
            index.close()
            return {"ingest_s": written, "follow_s": followed, "open_s": opened,
                    "result": result, "all_present": present}

        ones, thousands = [], []
        batch_no = 0
        for repeat in range(args.repeats):
            batch_no += 1
            ones.append(seen_after(recombined(records, 1, batch_no, f"one{batch_no}"),
                                   f"one{batch_no}"))
            log(f"one new paper, repeat {repeat + 1}: follow {ones[-1]['follow_s']:.2f} s")
        for repeat in range(args.thousand_repeats):
            batch_no += 1
            thousands.append(seen_after(recombined(records, 1000, batch_no, f"k{batch_no}"),
                                        f"k{batch_no}"))
            log(f"1,000 new papers, repeat {repeat + 1}: follow "
                f"{thousands[-1]['follow_s']:.2f} s")

        def med(rows: list[dict], key: str) -> float:
            return statistics.median(r[key] for r in rows) if rows else float("nan")

        return {"papers": size, "full_rebuild_s": statistics.median(full), "upgrade_s": upgrade,
                "full_rebuild_before_s": statistics.median(before) if before else None,
                "full_rebuild_runs": full, "check_ms": statistics.median(checks),
                "check_ms_p90": sorted(checks)[int(0.9 * len(checks))],
                "one_follow_s": med(ones, "follow_s"), "one_open_s": med(ones, "open_s"),
                "thousand_follow_s": med(thousands, "follow_s"),
                "thousand_open_s": med(thousands, "open_s"),
                "all_present": all(r["all_present"] for r in ones + thousands),
                "results": sorted({r["result"] for r in ones + thousands}),
                "one_runs": ones, "thousand_runs": thousands}
    finally:
        process.terminate()
        process.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


BEFORE = """
import sys, time
sys.path.insert(0, {code!r})
from ragqa.config import load_settings
from ragqa.index.ingest import sync_lexical
from ragqa.index.store import Store
from ragqa.models.encoders import make_encoder
settings = load_settings({{"RAGQA_HOME": {home!r}, "RAGQA_CHROMA_HOST": "127.0.0.1",
                          "RAGQA_CHROMA_PORT": "{port}", "RAGQA_ENV_FILE": "/nonexistent"}})
store = Store(settings, {collection!r}, make_encoder(settings))
started = time.perf_counter()
assert sync_lexical(store)
print(time.perf_counter() - started)
"""


def full_rebuild_before(code: Path, home: Path, port: int, collection: str) -> float:
    """The full rebuild of ragqa as it was before the journal (a checkout at `code`): what every
    new reader did, and what a reader had to do by hand (delete its data folder) to see
    another machine's papers."""
    shutil.rmtree(home, ignore_errors=True)
    result = subprocess.run([sys.executable, "-c", BEFORE.format(
        code=str(code), home=str(home), port=port, collection=collection)],
        capture_output=True, text=True, check=True, cwd=code)
    seconds = float(result.stdout.strip().splitlines()[-1])
    log(f"full rebuild before the journal: {seconds:.1f} s")
    return seconds


# ---------------------------------------------------------------- snapshot

def _measured_in_own_process(code: str) -> dict[str, Any]:
    """Run `code` in a fresh interpreter (so that memory is its own); it prints JSON."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=REPO)
    return json.loads(result.stdout.strip().splitlines()[-1])


OPEN_AND_SEARCH = """
import json, statistics, sys, time
sys.path.insert(0, '.')
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
from ragqa.index import lexical
import bm25s, numpy  # imports are not the snapshot's memory
before = rss()
started = time.perf_counter()
index = lexical.open_current(__import__('pathlib').Path({folder!r}))
opened = time.perf_counter() - started
queries = {queries!r}
times = []
for q in queries * 3:
    started = time.perf_counter(); index.search(q, 100); times.append(time.perf_counter() - started)
print(json.dumps({{"open_s": opened, "rss_mb": rss() - before,
                  "search_ms": statistics.median(times) * 1000}}))
"""

QUERIES = ["full-duplex speech dialogue", "graph neural networks for molecules",
           "variational inference with normalizing flows", "reinforcement learning exploration",
           "machine translation for low-resource languages", "adversarial robustness",
           "protein structure prediction", "federated learning privacy"]


def bench_snapshot(args: argparse.Namespace) -> dict[str, Any]:
    from ragqa.index import lexical
    from ragqa.sources.plain import paper_from_record

    records = mlconf_records(args.data)
    rows = []
    for size in args.sizes:
        real = records[:size]
        extra = recombined(records, max(0, size - len(real)), size, f"syn{size}")
        papers = [paper_from_record({"id": r.get("_id") or r["id"], "title": r.get("title", ""),
                                     "abstract": r.get("text") or r.get("abstract", ""),
                                     "year": r.get("year")}, "bench.jsonl", i)
                  for i, r in enumerate(real + extra)]
        papers = [p for p in papers if p.text]
        folder = Path(tempfile.mkdtemp(prefix="ragqa-snapshot-"))
        try:
            started = time.perf_counter()
            lexical.write_snapshot(folder, papers, lexical.fingerprint([]), None)
            written = time.perf_counter() - started
            current = lexical.read_current(folder)
            on_disk = disk_mb(folder / current["dir"])
            measured = _measured_in_own_process(OPEN_AND_SEARCH.format(folder=str(folder),
                                                              queries=QUERIES))
            base = lexical.open_current(folder)
            new = paper_from_record(recombined(records, 1, 7, f"new{size}")[0], "new.jsonl", 1)
            started = time.perf_counter()
            lexical.update_snapshot(base, set(), [new], lexical.fingerprint([]))
            updated = time.perf_counter() - started
            base.close()
            row = {"papers": len(papers), "write_s": written, "disk_mb": on_disk,
                   "update_one_s": updated, **measured}
            log(json.dumps(row))
            rows.append(row)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return {"rows": rows}


# ---------------------------------------------------------------- stub-ingest

class StubEmbeddings(ThreadingHTTPServer):
    """An OpenAI-compatible /v1/embeddings on loopback that answers at once: 384-d unit vectors
    seeded by a hash of each text (equal texts, equal vectors)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _StubHandler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}/v1"
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _StubHandler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(str(text).encode(), digest_size=8).digest(),
                                  "big")
            vector = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
            vector /= np.linalg.norm(vector)
            data.append({"object": "embedding", "index": i, "embedding": vector.tolist()})
        payload = json.dumps({"object": "list", "data": data, "model": body.get("model"),
                              "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def bench_stub_ingest(args: argparse.Namespace) -> dict[str, Any]:
    records = mlconf_records(args.data)
    stub = StubEmbeddings()
    chroma_path = args.chroma_path or Path(tempfile.mkdtemp(prefix="ragqa-stub-chroma-"))
    process, port = start_chroma(chroma_path)
    work = Path(tempfile.mkdtemp(prefix="ragqa-stub-"))
    env = {"RAGQA_EMBED_PROVIDER": "openai", "RAGQA_EMBED_BASE_URL": stub.url,
           "RAGQA_EMBED_MODEL": "stub-384", "RAGQA_EMBED_API_KEY": "stub",
           "RAGQA_EMBED_CONCURRENCY": "4"}
    try:
        rows = []
        done = 0
        for step in args.steps:
            batch = recombined(records, step - done, step, f"stub{step}")
            path = write_jsonl(work / f"step{step}.jsonl", batch)
            started_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
            seconds = ingest_cli(work / "writer", port, path, "stub", **env)
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            done = step
            row = {"papers": done, "added": len(batch), "ingest_s": seconds,
                   "papers_per_s": len(batch) / seconds,
                   "client_cpu_s": (used.ru_utime + used.ru_stime)
                   - (started_cpu.ru_utime + started_cpu.ru_stime),
                   "chroma_rss_mb": rss_mb(process.pid), "chroma_disk_mb": disk_mb(chroma_path),
                   "query_ms": _query_ms(port)}
            log(json.dumps(row))
            rows.append(row)
        return {"rows": rows}
    finally:
        process.terminate()
        process.wait(timeout=60)
        stub.shutdown()
        shutil.rmtree(work, ignore_errors=True)
        if not args.chroma_path:
            shutil.rmtree(chroma_path, ignore_errors=True)


def _query_ms(port: int) -> float:
    import chromadb

    client = chromadb.HttpClient(host="127.0.0.1", port=port,
                                 settings=chromadb.config.Settings(anonymized_telemetry=False))
    collection = client.get_collection("ragqa_stub", embedding_function=None)
    rng = np.random.default_rng(0)
    times = []
    for _ in range(20):
        vector = rng.standard_normal(384).astype(np.float32)
        started = time.perf_counter()
        collection.query(query_embeddings=[(vector / np.linalg.norm(vector)).tolist()],
                         n_results=200, include=["distances"])
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


# ---------------------------------------------------------------- main

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    sub = parser.add_subparsers(dest="what", required=True)
    follow = sub.add_parser("follow")
    follow.add_argument("--chroma-path", type=Path, required=True)
    follow.add_argument("--collection", default="scale")
    follow.add_argument("--repeats", type=int, default=5)
    follow.add_argument("--thousand-repeats", type=int, default=2)
    follow.add_argument("--full-repeats", type=int, default=2)
    follow.add_argument("--before", type=Path, default=None, metavar="DIR",
                        help="a checkout of ragqa before the journal (git worktree add DIR "
                        "49161fa): its full rebuild is timed beside this one's")
    snapshot = sub.add_parser("snapshot")
    snapshot.add_argument("--sizes", default="37932,150000,300000",
                          type=lambda s: [int(x) for x in s.split(",")])
    stub = sub.add_parser("stub-ingest")
    stub.add_argument("--steps", default="20000,50000",
                      type=lambda s: [int(x) for x in s.split(",")])
    stub.add_argument("--chroma-path", type=Path, default=None)
    args = parser.parse_args()
    if not (args.data / "mlconf" / "corpus.jsonl.gz").is_file():
        print(f"no {args.data / 'mlconf'}: nothing to measure")
        return 0
    run = {"follow": bench_follow, "snapshot": bench_snapshot,
           "stub-ingest": bench_stub_ingest}[args.what]
    result = {"what": args.what, "date": time.strftime("%Y-%m-%d"),
              "load_before": os.getloadavg()[0], **run(args)}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
