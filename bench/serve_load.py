"""Load on `ragqa serve`: N concurrent HTTP clients against /api/search and /api/ask
(`"llm": "none"`), on loopback only, bounded in clients and in time.

    python bench/serve_load.py --home DIR --collection NAME [--clients 1,4,16] [--seconds 20]
                               [--ingest FILE] [--serve-args '--max-concurrent 2'] [--code DIR]
                               [--json]

A 503 with Retry-After (the server shedding load) is counted apart ("503"): the client waits as
asked and goes on, as a well-behaved client does; p50/p95 are those of the requests answered.

It starts `python -m ragqa serve` on a free 127.0.0.1 port over DIR (a RAGQA_HOME holding the
collection), takes its queries from the collection itself (the titles of `--queries` papers
spread evenly over it, asked as "Which papers study <title>?" for ask and as plain text for
search), and for each client count runs each route for `--seconds` (every client its own
keep-alive connection, one request at a time). The runs go on through the queries where the
last one stopped, so a query comes back only once all of them were asked (the report says how
many were asked twice): the server keeps no answer by question, and the load test does not
let one look good either. It reports requests/s, p50 and p95 latency, errors, and the
server's CPU seconds per request (all its threads: what one request costs, robust to what else
the machine runs) per route and client count; the server's peak resident memory (VmHWM); and
the load average before and after (a quiet machine: below 0.3 at the start).

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


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else 0.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    def __init__(self, home: Path, collection: str, serve_args: tuple[str, ...] = (),
                 code: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGQA_"))}
        env.update(RAGQA_HOME=str(home), RAGQA_LLM="none")
        if code:  # measure another checkout's ragqa (e.g. a `git worktree` of the code before)
            env["PYTHONPATH"] = str(code.resolve())
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - open while the server runs
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragqa", "serve", "--host", "127.0.0.1", "--port",
             str(self.port), "--collection", collection, *serve_args],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            # `python -m` puts the working folder first on sys.path: run from the checkout
            cwd=str(code.resolve()) if code else None)
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
    """The titles of n papers spread evenly over the collection (every conference and topic of
    it, not the first file's), distinct."""
    total = httpx.get(f"{url}/api/papers", params={"limit": 1}, timeout=60).json()["total"]
    step = max(1, total // max(n, 1))
    titles: list[str] = []
    for offset in range(0, total, 500):
        page = httpx.get(f"{url}/api/papers", params={"offset": offset, "limit": 500},
                         timeout=120).json()["papers"]
        titles += [p["title"] for i, p in enumerate(page, start=offset)
                   if i % step == 0 and p["title"]]
    return list(dict.fromkeys(titles))[:n]


class Queries:
    """The bodies of one route, handed out in turn across all runs (none twice until all were
    asked once)."""

    def __init__(self, bodies: list[dict]) -> None:
        self.bodies, self.next, self.asked = bodies, 0, 0
        self.lock = threading.Lock()

    def take(self) -> dict:
        with self.lock:
            body = self.bodies[self.next % len(self.bodies)]
            self.next += 1
            return body

    def repeated(self) -> int:
        """How many requests so far asked a query asked before."""
        return max(0, self.next - len(self.bodies))


def drive(url: str, route: str, queries: Queries, clients: int, seconds: float,
          stop: threading.Event | None = None, pid: int | None = None) -> dict:
    """`clients` threads, each posting the next query until the time is up (or `stop`); `pid`:
    the server's, whose CPU time per request is measured."""
    latencies: list[float] = []
    errors: list[str] = []
    shed = [0]  # 503s with Retry-After: the client waits as asked, then goes on
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(number: int) -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            while time.monotonic() < deadline and not (stop and stop.is_set()):
                body = queries.take()
                started = time.perf_counter()
                try:
                    response = http.post(route, json=body)
                    ok = response.status_code == 200
                    problem = f"{response.status_code}: {response.text[:200]}"
                except httpx.HTTPError as exc:
                    ok, problem, response = False, repr(exc), None
                elapsed = (time.perf_counter() - started) * 1000
                if response is not None and response.status_code == 503 and \
                        "retry-after" in response.headers:
                    with lock:
                        shed[0] += 1
                    pause = float(response.headers["retry-after"])
                    time.sleep(max(0.0, min(pause, deadline - time.monotonic())))
                    continue
                with lock:
                    (latencies.append(elapsed) if ok else errors.append(problem))

    started = time.monotonic()
    cpu = cpu_seconds(pid) if pid else 0.0
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    served = len(latencies) + len(errors)
    cpu_ms = (cpu_seconds(pid) - cpu) * 1000 / served if pid and served else None
    return {"route": route, "clients": clients, "requests": len(latencies),
            "errors": len(errors), "first_errors": errors[:3], "shed_503": shed[0],
            "rps": round(len(latencies) / wall, 2) if wall else 0.0,
            "p50_ms": round(percentile(latencies, 50), 1),
            "p95_ms": round(percentile(latencies, 95), 1),
            "mean_ms": round(statistics.fmean(latencies), 1) if latencies else 0.0,
            "server_cpu_ms_per_request": round(cpu_ms, 1) if cpu_ms is not None else None}


def search_during_ingest(server: Server, collection: str, source: Path, queries: Queries,
                         clients: int) -> dict:
    before = httpx.get(f"{server.url}/api/health", timeout=30).json()["papers"]
    stop = threading.Event()
    ingest = subprocess.Popen([sys.executable, "-m", "ragqa", "ingest", str(source), "--quiet",
                               "--collection", collection], env=server.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    result: dict = {}
    runner = threading.Thread(target=lambda: result.update(
        drive(server.url, "/api/search", queries, clients, MAX_SECONDS * 5, stop)))
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
    parser.add_argument("--queries", type=int, default=1000, help="distinct queries")
    parser.add_argument("--ingest", type=Path, help="ingest this file while 4 clients search")
    parser.add_argument("--serve-args", default="", help="more `ragqa serve` options, e.g. "
                        "'--max-concurrent 2'")
    parser.add_argument("--code", type=Path, help="serve this checkout's ragqa (PYTHONPATH)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    if not all(1 <= c <= MAX_CLIENTS for c in counts) or not 0 < args.seconds <= MAX_SECONDS:
        sys.exit(f"serve_load: 1..{MAX_CLIENTS} clients and 0..{MAX_SECONDS} s, please")
    load_before = os.getloadavg()[0]
    server = Server(args.home, args.collection, tuple(args.serve_args.split()), args.code)
    try:
        health = server.wait()
        titles = queries_of(server.url, args.queries)
        if len(titles) < 8:
            sys.exit(f"serve_load: {len(titles)} titles in the collection: too few to load it")
        warm, titles = titles[:4], titles[4:]
        routes = {"/api/search": lambda t: {"question": t},
                  "/api/ask": lambda t: {"question": f"Which papers study {t}?", "llm": "none"}}
        for route, body in routes.items():  # warm-up: first-call costs are not load
            drive(server.url, route, Queries([body(t) for t in warm]), 1, 3)
        queries = {route: Queries([body(t) for t in titles]) for route, body in routes.items()}
        runs = [drive(server.url, route, queries[route], clients, args.seconds,
                      pid=server.process.pid)
                for clients in counts for route in routes]
        during = (search_during_ingest(server, args.collection, args.ingest,
                                       queries["/api/search"], 4) if args.ingest else None)
        report = {"collection": args.collection, "papers": health["papers"], "runs": runs,
                  "distinct_queries": len(titles),
                  "repeated_queries": {r: q.repeated() for r, q in queries.items()},
                  "during_ingest": during, "peak_rss_mb": round(server.peak_rss_mb(), 1),
                  "cpus": os.cpu_count(),
                  "load_average": {"before": round(load_before, 2),
                                   "after": round(os.getloadavg()[0], 2)}}
    finally:
        server.stop()
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"collection {report['collection']}: {report['papers']} papers, "
          f"{report['cpus']} CPUs, peak server RSS {report['peak_rss_mb']} MB; load average "
          f"{report['load_average']['before']} before, {report['load_average']['after']} after; "
          f"{report['distinct_queries']} distinct queries, asked again: "
          + ", ".join(f"{r} {n}" for r, n in report["repeated_queries"].items()))
    print(f"{'route':<12} {'clients':>7} {'req':>6} {'err':>4} {'503':>5} {'req/s':>7} "
          f"{'p50 ms':>8} {'p95 ms':>8} {'CPU ms/req':>10}")
    for run in runs:
        print(f"{run['route']:<12} {run['clients']:>7} {run['requests']:>6} {run['errors']:>4} "
              f"{run['shed_503']:>5} "
              f"{run['rps']:>7} {run['p50_ms']:>8} {run['p95_ms']:>8} "
              f"{run['server_cpu_ms_per_request']:>10}")
    if during:
        print(f"search during ingest (4 clients): {during['requests']} ok, {during['errors']} "
              f"errors, p95 {during['p95_ms']} ms; papers {during['papers_before']} -> "
              f"{during['papers_after']} (ingest exit {during['ingest_exit']})")
        for problem in during["first_errors"]:
            print(f"  error: {problem}")


if __name__ == "__main__":
    main()
