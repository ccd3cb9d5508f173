"""Load on `ragqa serve`: N concurrent HTTP clients against /api/search and /api/ask
(`"llm": "none"`), on loopback only, bounded in clients and in time.

    python bench/serve_load.py --home DIR --collection NAME [--clients 1,4,16] [--seconds 20]
                               [--ingest FILE] [--json]

It starts `python -m ragqa serve` on a free 127.0.0.1 port over DIR (a RAGQA_HOME holding the
collection), takes its queries from the collection itself (the titles of its first papers,
asked as "Which papers study <title>?" for ask and as plain text for search), and for each
client count runs each route for `--seconds` (every client its own keep-alive connection,
one request at a time). It reports requests/s, p50 and p95 latency and errors per route and
client count, and the server's peak resident memory (VmHWM).

With `--ingest FILE`, a `ragqa ingest FILE` into the same collection runs while 4 clients
search: every search must succeed (the server answers from the last snapshot, then switches
to the new one), and the collection must have grown once the ingest is done.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

MAX_CLIENTS = 64
MAX_SECONDS = 120


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else 0.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, home: Path, collection: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGQA_"))}
        env.update(RAGQA_HOME=str(home), RAGQA_LLM="none")
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - open while the server runs
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragqa", "serve", "--host", "127.0.0.1", "--port",
             str(self.port), "--collection", collection],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.env = env

    def wait(self, timeout: float = 180) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.seek(0)
                sys.exit(f"serve_load: the server exited: {self.log.read().decode()[-500:]}")
            try:
                response = httpx.get(f"{self.url}/api/health", timeout=2)
                if response.status_code == 200:
                    return response.json()
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        sys.exit("serve_load: the server did not start")

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def queries_of(url: str, n: int) -> list[str]:
    papers = httpx.get(f"{url}/api/papers", params={"limit": n}, timeout=60).json()["papers"]
    return [p["title"] for p in papers if p["title"]]


def drive(url: str, route: str, bodies: list[dict], clients: int, seconds: float,
          stop: threading.Event | None = None) -> dict:
    """`clients` threads, each posting bodies in turn until the time is up (or `stop`)."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(number: int) -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            i = number
            while time.monotonic() < deadline and not (stop and stop.is_set()):
                body = bodies[i % len(bodies)]
                i += clients
                started = time.perf_counter()
                try:
                    response = http.post(route, json=body)
                    ok = response.status_code == 200
                    problem = f"{response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as exc:
                    ok, problem = False, repr(exc)
                elapsed = (time.perf_counter() - started) * 1000
                with lock:
                    (latencies.append(elapsed) if ok else errors.append(problem))

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    return {"route": route, "clients": clients, "requests": len(latencies),
            "errors": len(errors), "first_errors": errors[:3],
            "rps": round(len(latencies) / wall, 2) if wall else 0.0,
            "p50_ms": round(percentile(latencies, 50), 1),
            "p95_ms": round(percentile(latencies, 95), 1),
            "mean_ms": round(statistics.fmean(latencies), 1) if latencies else 0.0}


def search_during_ingest(server: Server, collection: str, source: Path, bodies: list[dict],
                         clients: int) -> dict:
    before = httpx.get(f"{server.url}/api/health", timeout=30).json()["papers"]
    stop = threading.Event()
    ingest = subprocess.Popen([sys.executable, "-m", "ragqa", "ingest", str(source), "--quiet",
                               "--collection", collection], env=server.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    result: dict = {}
    runner = threading.Thread(target=lambda: result.update(
        drive(server.url, "/api/search", bodies, clients, MAX_SECONDS * 5, stop)))
    runner.start()
    _, err = ingest.communicate()
    time.sleep(2)  # a few searches on the new snapshot too
    stop.set()
    runner.join()
    after = httpx.get(f"{server.url}/api/health", timeout=30).json()["papers"]
    return {**result, "ingest_exit": ingest.returncode,
            "ingest_stderr": err.decode(errors="replace").strip()[-300:],
            "papers_before": before, "papers_after": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, required=True, help="RAGQA_HOME with the collection")
    parser.add_argument("--collection", default="default")
    parser.add_argument("--clients", default="1,4,16", help="client counts, e.g. 1,4,16")
    parser.add_argument("--seconds", type=float, default=20, help="per route and client count")
    parser.add_argument("--queries", type=int, default=200, help="distinct queries")
    parser.add_argument("--ingest", type=Path, help="ingest this file while 4 clients search")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    if not all(1 <= c <= MAX_CLIENTS for c in counts) or not 0 < args.seconds <= MAX_SECONDS:
        sys.exit(f"serve_load: 1..{MAX_CLIENTS} clients and 0..{MAX_SECONDS} s, please")
    server = Server(args.home, args.collection)
    try:
        health = server.wait()
        titles = queries_of(server.url, args.queries)
        routes = {"/api/search": [{"question": t} for t in titles],
                  "/api/ask": [{"question": f"Which papers study {t}?", "llm": "none"}
                               for t in titles]}
        for route, bodies in routes.items():  # warm-up: first-call costs are not load
            drive(server.url, route, bodies[:4], 1, 3)
        runs = [drive(server.url, route, bodies, clients, args.seconds)
                for clients in counts for route, bodies in routes.items()]
        during = (search_during_ingest(server, args.collection, args.ingest,
                                       routes["/api/search"], 4) if args.ingest else None)
        report = {"collection": args.collection, "papers": health["papers"], "runs": runs,
                  "during_ingest": during, "peak_rss_mb": round(server.peak_rss_mb(), 1),
                  "cpus": os.cpu_count()}
    finally:
        server.stop()
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"collection {report['collection']}: {report['papers']} papers, "
          f"{report['cpus']} CPUs, peak server RSS {report['peak_rss_mb']} MB")
    print(f"{'route':<12} {'clients':>7} {'req':>6} {'err':>4} {'req/s':>7} {'p50 ms':>8} "
          f"{'p95 ms':>8}")
    for run in runs:
        print(f"{run['route']:<12} {run['clients']:>7} {run['requests']:>6} {run['errors']:>4} "
              f"{run['rps']:>7} {run['p50_ms']:>8} {run['p95_ms']:>8}")
    if during:
        print(f"search during ingest (4 clients): {during['requests']} ok, {during['errors']} "
              f"errors, p95 {during['p95_ms']} ms; papers {during['papers_before']} -> "
              f"{during['papers_after']} (ingest exit {during['ingest_exit']})")
        for problem in during["first_errors"]:
            print(f"  error: {problem}")


if __name__ == "__main__":
    main()
