"""Seconds per phase of one ingest process (bench/ingest_throughput.py), and the pauses the
tests kill it at."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path


class Phases:
    """Seconds spent in each phase of one ingest process, for bench/ingest_throughput.py: with
    RAGQA_PROFILE_INGEST=FILE set, `ragqa ingest` writes them to FILE as JSON when it ends. Off
    (the default), `phase()` hands back one shared do-nothing context: no clock is read."""

    _OFF = contextlib.nullcontext()

    def __init__(self, path: str) -> None:
        self.path = path
        self.started = time.time()  # wall clock: the benchmark knows when it started the process
        self.seconds: dict[str, float] = {}
        self._lock = threading.Lock()  # the writer thread adds its phases too

    def phase(self, name: str) -> contextlib.AbstractContextManager[None]:
        return self._timed(name) if self.path else self._OFF

    @contextlib.contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            with self._lock:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - began

    def write(self) -> None:
        if self.path:
            Path(self.path).write_text(json.dumps(
                {"started": self.started, "ended": time.time(), "seconds": self.seconds}),
                encoding="utf-8")


PHASES = Phases(os.environ.get("RAGQA_PROFILE_INGEST", ""))


def pause_for_tests(stage: str) -> None:
    """Test-only hook (tests/test_reliability.py, tests/test_team.py), not a setting: with
    RAGQA_TEST_PAUSE_AT set to this stage ("deleted", "embedding", "upserted",
    "multilingual-upserted", "following"), say so on stderr and wait for a line on stdin, so
    that a test can kill -9 the process, or its Chroma server, at exactly that point."""
    if os.environ.get("RAGQA_TEST_PAUSE_AT") == stage:
        sys.stderr.write(f"ragqa-test-pause: {stage}\n")
        sys.stderr.flush()
        sys.stdin.readline()
