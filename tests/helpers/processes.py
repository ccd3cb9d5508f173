"""Processes the tests start: `chroma run` on a free loopback port, and an ingest paused at a
named stage by the test-only hook (RAGQA_TEST_PAUSE_AT) so that a test can kill it there."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _chroma_binary() -> str:
    beside_python = Path(sys.executable).parent / "chroma"
    found = str(beside_python) if beside_python.exists() else shutil.which("chroma")
    if not found:
        pytest.fail("the `chroma` command (from the chromadb package) is not installed")
    return found


def _wait_until_up(port: int, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chroma run exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError("chroma run did not start")


class PausedIngest:
    """`python -m ragqa ingest ARGS --quiet` in its own process, stopped by the test-only hook at
    `stage` (it holds the collection lock meanwhile): kill it there, or let it go on.
    `command`: another ragqa command that passes that stage (a search "following")."""

    def __init__(self, env: dict[str, str], stage: str, *args: str,
                 command: tuple[str, ...] = ("ingest",)) -> None:
        quiet = ["--quiet"] if command == ("ingest",) else []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragqa", *command, *args, *quiet],
            env={**os.environ, **env, "RAGQA_TEST_PAUSE_AT": stage}, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        marker, seen = f"ragqa-test-pause: {stage}", []
        while (line := self._next_line(timeout=180)) is not None:
            if line.strip() == marker:
                return
            seen.append(line)
        self.process.kill()
        pytest.fail(f"ingest ended before reaching {stage!r}: {''.join(seen)}")

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._lines.put(line)
        self._lines.put(None)

    def _next_line(self, timeout: float) -> str | None:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            self.process.kill()
            pytest.fail("ingest neither paused nor ended in time")

    def release(self) -> None:
        """Let the ingest go on (without waiting for it)."""
        assert self.process.stdin is not None
        self.process.stdin.write("\n")
        self.process.stdin.close()

    def finish(self) -> tuple[int, str]:
        """Let it go on to its end: (exit code, what it wrote on stderr after the pause)."""
        self.release()
        code = self.process.wait(timeout=300)
        self._reader.join(timeout=10)
        lines = []
        while (line := self._lines.get_nowait()) is not None:
            lines.append(line)
        return code, "".join(lines)

    def kill_9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        assert self.process.stdin is not None
        self.process.stdin.close()


def _one_error_line(stderr: str) -> str:
    """The contract for failures: exactly one line on stderr, no traceback."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ragqa: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


class ChromaServer:
    """`chroma run` on 127.0.0.1 that a test can kill -9 and start again on the same data."""

    def __init__(self, path: Path, log: Path) -> None:
        self.path, self.port, self.log = path, _free_port(), log.open("a")
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [_chroma_binary(), "run", "--path", str(self.path), "--host", "127.0.0.1", "--port",
             str(self.port)], stdout=self.log, stderr=subprocess.STDOUT)
        _wait_until_up(self.port, self.process)

    def kill_9(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


def run_ragqa(home: Path, *args: str, timeout: float = 600, **env: str
              ) -> subprocess.CompletedProcess:
    """`python -m ragqa ARGS` in a process of its own over the data folder `home`: what a user
    runs, with nothing of the test process (its Chroma clients, open files) in the way."""
    return subprocess.run(
        [sys.executable, "-m", "ragqa", *args], capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent", **env})
