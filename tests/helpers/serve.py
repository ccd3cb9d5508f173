"""Starts the real `ragqa serve` (python -m ragqa serve) on a free loopback port, over a data
folder of its own, and waits until /api/health answers: the tests then talk HTTP to it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a server process: no developer's keys, its own data folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGQA_"))}
    # Unscreened, as the tests' own processes (conftest._isolated_env): a test of screening
    # passes RAGQA_SCREEN=auto.
    return {**env, "RAGQA_HOME": str(home), "RAGQA_ENV_FILE": str(home / "no.env"),
            "PYTHONUNBUFFERED": "1", "RAGQA_SCREEN": "off", **extra}


class RagqaServer:
    def __init__(self, home: Path, *args: str, **env: str) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = server_env(home, **env)
        # Output goes to files, not pipes: a full pipe would block the server.
        self._logs = Path(tempfile.mkdtemp(prefix="ragqa-serve-logs-"))
        self._out = (self._logs / "stdout").open("wb")
        self._err = (self._logs / "stderr").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragqa", "serve", "--port", str(self.port), *args],
            env=self.env, stdout=self._out, stderr=self._err, stdin=subprocess.DEVNULL)

    def wait_ready(self, timeout: float = 90.0) -> RagqaServer:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ragqa serve exited {self.process.returncode}: "
                                   f"{self.stderr[-2000:]}")
            try:
                if httpx.get(f"{self.url}/api/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        said = self.stderr[-2000:]  # read before stop() removes the logs
        self.stop()
        raise RuntimeError(f"ragqa serve did not answer in {timeout:.0f} s: {said}")

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM, as a service manager stops it; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def stop(self) -> None:
        self.terminate()
        self._out.close()
        self._err.close()
        shutil.rmtree(self._logs, ignore_errors=True)

    @property
    def stdout(self) -> str:
        self._out.flush()
        return (self._logs / "stdout").read_text(encoding="utf-8", errors="replace")

    @property
    def stderr(self) -> str:
        self._err.flush()
        return (self._logs / "stderr").read_text(encoding="utf-8", errors="replace")


@contextlib.contextmanager
def serving_copy(template: Path, home: Path, *args: str, **env: str) -> Iterator[RagqaServer]:
    """`ragqa serve` over a copy of the data folder `template` made at `home`, stopped after."""
    shutil.copytree(template, home)
    server = RagqaServer(home, *args, **env)
    try:
        yield server.wait_ready()
    finally:
        server.stop()


def sse(response: httpx.Response) -> list[tuple[str, str]]:
    """(event, data) pairs of a text/event-stream body."""
    events, event, data = [], "message", []
    for line in response.iter_lines():
        if not line:
            if data:
                events.append((event, "\n".join(data)))
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[len("event:"):].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:"):].strip())
    if data:
        events.append((event, "\n".join(data)))
    return events


def comparable(value):
    """A JSON answer without its `timings` (milliseconds differ from one run to the next)."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k != "timings"}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value
