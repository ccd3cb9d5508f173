"""Ingest at scale: the 32,749 mlconf abstracts, then SciFact's 5,183, into one collection.

    python bench/scale_ingest.py --home DIR [--server] [--data ../shared/data] [--json]
    python bench/scale_ingest.py --server-sample 2000 [--repeats 2]

The first form ingests, as a user would (`ragqa ingest FILE --collection scale`), mlconf and
then SciFact into the `scale` collection of RAGQA_HOME=DIR, each in a fresh process, and reports
for each step and in all: wall time, papers/s, chunks, the child's peak RSS, and the size of
the index on disk (Chroma + the BM25 snapshot). DIR is kept: `bench/query_latency.py`,
`bench/summarize_scale.py --skip-ingest --collection scale` and `bench/scifact.py --home SF
--distractors DIR` (SciFact among the 32,749 mlconf abstracts) read it. Ingest is incremental,
so a second run over the same DIR embeds nothing and says so. Budget 40-60 minutes on 2 cores.
With `--server`, the same ingest goes into a Chroma server (`chroma run` on 127.0.0.1, started
here, its data in DIR/chroma-server); compare its papers/s with an embedded run's.

The second form compares the embedded store with a Chroma server (`chroma run` on 127.0.0.1,
started here): the first N mlconf abstracts ingested into each, alternating, `--repeats`
times; the medians give the ratio server / embedded. Embedding dominates both, so the ratio
shows what the HTTP hops cost.

Where ../shared/data is absent the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from measured import disk_mb, run_ragqa

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
COLLECTION = "scale"


def ingest_step(name: str, corpus: Path, env: dict[str, str], collection: str) -> dict:
    wall, rss, out = run_ragqa(["ingest", str(corpus), "--collection", collection,
                                "--quiet", "--json"], env)
    report = json.loads(out)
    return {"step": name, "wall_s": round(wall, 1), "peak_rss_mb": rss,
            "added": report["added"], "chunks": report["chunks"],
            "papers_total": report["papers_total"],
            "papers_per_s": round(report["added"] / wall, 2) if report["added"] else None}


def scale_run(data: Path, home: Path, server: bool) -> dict:
    env = {**os.environ, "RAGQA_HOME": str(home), "RAGQA_LLM": "none"}
    chroma_data = home / ("chroma-server" if server else "chroma")
    server_rss: dict[str, int] = {}
    with chroma_server(chroma_data, server_rss) if server else nullcontext(0) as port:
        if server:
            env |= {"RAGQA_CHROMA_HOST": "127.0.0.1", "RAGQA_CHROMA_PORT": str(port)}
        steps = [ingest_step("mlconf", data / "mlconf" / "corpus.jsonl.gz", env, COLLECTION),
                 ingest_step("scifact", data / "scifact" / "corpus.jsonl.gz", env, COLLECTION)]
    added = sum(s["added"] for s in steps)
    wall = sum(s["wall_s"] for s in steps)
    return {"home": str(home), "collection": COLLECTION,
            "store": "chroma run on 127.0.0.1" if server else "embedded", "steps": steps,
            "wall_s": round(wall, 1), "papers_per_s": round(added / wall, 2) if added else None,
            "peak_rss_mb": max(s["peak_rss_mb"] for s in steps),
            "server_peak_rss_mb": server_rss.get("server"),
            "papers_total": steps[-1]["papers_total"],
            "chunks": sum(s["chunks"] for s in steps),
            "disk_mb": {"chroma": disk_mb(chroma_data),
                        "bm25_snapshot": disk_mb(home / "indexes")}}


# ---------------------------------------------------------------- server vs embedded

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def chroma_server(path: Path, peak_rss: dict[str, int] | None = None) -> Iterator[int]:
    """`chroma run` on 127.0.0.1 with its data in `path`; yields the port. The server's peak
    RSS in MB goes to `peak_rss["server"]` when it stops."""
    beside_python = Path(sys.executable).parent / "chroma"
    command = str(beside_python) if beside_python.exists() else shutil.which("chroma")
    if not command:
        raise SystemExit("the `chroma` command (from the chromadb package) is not installed")
    port = _free_port()
    process = subprocess.Popen([command, "run", "--path", str(path), "--host", "127.0.0.1",
                                "--port", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit("chroma run did not start") from None
                time.sleep(0.3)
        yield port
    finally:
        if peak_rss is not None:
            peak_rss["server"] = _peak_rss_mb(process.pid)
        process.terminate()
        process.wait(timeout=30)


def _peak_rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return 0


def first_records(corpus: Path, n: int, out: Path) -> None:
    with gzip.open(corpus, "rt", encoding="utf-8") as source, out.open("w") as sink:
        for i, line in enumerate(source):
            if i == n:
                break
            sink.write(line)


def server_comparison(data: Path, n: int, repeats: int) -> dict:
    embedded, served = [], []
    with tempfile.TemporaryDirectory(prefix="ragqa-scale-") as tmp:
        sample = Path(tmp) / "sample.jsonl"
        first_records(data / "mlconf" / "corpus.jsonl.gz", n, sample)
        for repeat in range(repeats):
            for kind in (("embedded", "server") if repeat % 2 == 0 else ("server", "embedded")):
                home = Path(tmp) / f"{kind}-{repeat}"
                env = {**os.environ, "RAGQA_HOME": str(home), "RAGQA_LLM": "none"}
                if kind == "embedded":
                    embedded.append(ingest_step(kind, sample, env, COLLECTION))
                    continue
                with chroma_server(Path(tmp) / f"server-data-{repeat}") as port:
                    env |= {"RAGQA_CHROMA_HOST": "127.0.0.1", "RAGQA_CHROMA_PORT": str(port)}
                    served.append(ingest_step(kind, sample, env, COLLECTION))
    median = {name: statistics.median(r["papers_per_s"] for r in runs)
              for name, runs in (("embedded", embedded), ("server", served))}
    return {"papers": n, "repeats": repeats, "runs": embedded + served,
            "median_papers_per_s": median,
            "ratio_server_over_embedded": round(median["server"] / median["embedded"], 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--home", type=Path, help="RAGQA_HOME to fill (kept)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--server", action="store_true",
                        help="with --home: ingest into a Chroma server, not the embedded store")
    parser.add_argument("--server-sample", type=int, default=0, metavar="N",
                        help="instead: compare a Chroma server with the embedded store on N")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not (args.data / "mlconf" / "corpus.jsonl.gz").is_file():
        print(f"skipped: no mlconf data under {args.data}")
        return 0
    if args.server_sample:
        report = server_comparison(args.data, args.server_sample, args.repeats)
    elif args.home:
        report = scale_run(args.data, args.home, args.server)
    else:
        parser.error("give --home DIR (the scale ingest) or --server-sample N")
    print(json.dumps(report, indent=None if args.json else 2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
