"""A full disk ("Trust, round two", item 7): the user gets one line that says the disk is full,
where, how much is free and what state the collection is in, exit code 1; and that state is
true: once space is freed, the collection answers and the same ingest completes.

Everything is real: a small tmpfs (mounting one needs root; CI runs as root), `python -m ragqa`
processes, embedded Chroma, the local embedder, abstracts generated here. What chromadb 1.5.9
does when its disk fills, and why ingest refuses a batch that may not fit rather than let Chroma
start it, is in ragqa/index/store.py (`room_needed`); test_reliability.py has a disk filled to
the last byte."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers.processes import _one_error_line, run_ragqa

pytestmark = pytest.mark.slow

WORDS = ("model", "learning", "neural", "network", "graph", "speech", "diffusion", "agent",
         "tensor", "robust", "spectral", "kernel", "transformer", "attention", "retrieval",
         "language", "vision", "policy", "reward", "optimization", "gradient", "sparse",
         "benchmark", "dataset", "inference", "latency", "memory", "compression", "quantization",
         "token", "embedding", "contrastive", "generative", "causal", "bayesian", "uncertainty",
         "calibration")
MB = 1 << 20
# "the disk is full (<free> free on the disk holding <path>[, and this write needs about
# <n>]); <state>; free space and run the ingest again"
FULL = re.compile(r"^ragqa: error: the disk is full \((?P<free>[\d.]+ [KMG]?B) free on the disk "
                  r"holding (?P<path>[^,)]+)(?:, and this write needs about [\d.]+ [KMG]?B)?\); "
                  r"(?P<state>.+); free space and run the ingest again$")


def _abstracts(path: Path, n: int, start: int = 0) -> Path:
    """n short generated abstracts (ids g<start>...): short, so that they embed fast."""
    rng = random.Random(start)
    with path.open("w", encoding="utf-8") as handle:
        for i in range(start, start + n):
            sentences = [" ".join(rng.choice(WORDS) for _ in range(14)).capitalize() + "."
                         for _ in range(2)]
            title = f"Generated paper {i} on " + " ".join(rng.choice(WORDS) for _ in range(4))
            handle.write(json.dumps({"id": f"g{i:05d}", "title": title,
                                     "abstract": " ".join(sentences)}) + "\n")
    return path


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


def _used(folder: Path) -> int:
    stat = os.statvfs(folder)
    return (stat.f_blocks - stat.f_bfree) * stat.f_frsize


def _resize(folder: Path, size: int) -> None:
    """The tmpfs on `folder` resized to `size` bytes (pages): smaller fills it, larger frees
    space without touching a file."""
    assert _mount("-o", f"remount,size={size // 4096 * 4096}", str(folder)), "remount failed"


@contextlib.contextmanager
def _tmpfs(folder: Path, keep: bool = False) -> Iterator[Path]:
    """A 256 MB tmpfs on `folder` (`keep`: what the folder held is copied onto it), unmounted
    after, even when the test fails."""
    if os.geteuid() != 0:
        pytest.skip("a full disk needs a small tmpfs, and mounting one needs root")
    folder.mkdir(parents=True, exist_ok=True)
    saved = folder.with_name(folder.name + ".saved")
    if keep:
        shutil.copytree(folder, saved)
    if not _mount("-t", "tmpfs", "-o", "size=256m", "tmpfs", str(folder)):
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        if keep:
            shutil.copytree(saved, folder, dirs_exist_ok=True)
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)  # busy: detach


def _ingest(home: Path, source: Path) -> dict:
    done = run_ragqa(home, "ingest", str(source), "-c", "fill", "--quiet", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _search(home: Path) -> dict:
    done = run_ragqa(home, "search", "speech diffusion agents", "-c", "fill", "--no-cut",
                     "-k", "5", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _full_line(done: subprocess.CompletedProcess) -> re.Match:
    assert done.returncode == 1, done.stderr
    line = _one_error_line(done.stderr)
    match = FULL.match(line)
    assert match, line
    return match


def _stored(state: str) -> int:
    found = re.search(r", with (\d+) papers of this ingest stored whole$", state)
    return int(found.group(1)) if found else 0


def test_an_ingest_that_fills_the_disk_says_so_and_leaves_the_collection_whole(tmp_path):
    with _tmpfs(tmp_path / "disk") as disk:
        home = disk / "home"
        assert _ingest(home, _abstracts(tmp_path / "first.jsonl", 40))["papers_total"] == 40
        # Room for a batch or two of the 1,280 papers (ingest writes 256 a batch), not five.
        _resize(disk, _used(disk) + int(9.5 * MB))
        more = _abstracts(tmp_path / "more.jsonl", 1280, start=1000)
        failed = run_ragqa(home, "ingest", str(more), "-c", "fill", "--quiet")
        line = _full_line(failed)
        assert line["path"] == str(home / "chroma")
        state = line["state"]
        assert state.startswith("the collection 'fill' is intact at its last complete ingest "
                                "(40 papers)"), state
        stored = _stored(state)
        assert 0 < stored < 1280, state

        # The disk filled to the last byte: a search says so too, and writes nothing.
        filler = disk / "filler"
        with filler.open("wb", buffering=0) as handle, contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 65536)
        searched = run_ragqa(home, "search", "speech", "-c", "fill")
        assert searched.returncode == 1, searched.stderr
        assert _one_error_line(searched.stderr).startswith(
            f"ragqa: error: the disk is full (0 B free on the disk holding {home / 'chroma'})")
        filler.unlink()

        # Space freed: the collection answers from its last complete ingest, and the same
        # ingest completes it, embedding only what the failed run did not store whole.
        _resize(disk, 256 * MB)
        assert _search(home)["total_papers"] == 40
        again = _ingest(home, more)
        assert again["unchanged"] == stored and again["added"] == 1280 - stored
        assert again["papers_total"] == 1320
        found = _search(home)
        assert found["total_papers"] == 1320 and found["results"]


def test_a_snapshot_that_cannot_be_written_leaves_the_previous_one_current(tmp_path):
    """Chroma's disk has room, the BM25 snapshot's folder none: the snapshot is written to a
    temporary folder, fsynced and renamed, so the failed one leaves nothing behind and the
    previous snapshot stays in use."""
    home = tmp_path / "home"
    assert _ingest(home, _abstracts(tmp_path / "first.jsonl", 40))["papers_total"] == 40
    folder = home / "indexes" / "local" / "fill"
    with _tmpfs(home / "indexes", keep=True) as indexes:
        current = (folder / "CURRENT").read_text()
        _resize(indexes, _used(indexes) + 64 * 1024)
        more = _abstracts(tmp_path / "more.jsonl", 20, start=1000)
        line = _full_line(run_ragqa(home, "ingest", str(more), "-c", "fill", "--quiet"))
        assert line["path"] == str(folder)
        assert line["state"] == ("the collection 'fill' is intact at its last complete ingest "
                                 "(40 papers), with 20 papers of this ingest stored whole")
        assert (folder / "CURRENT").read_text() == current
        left = [p.name for p in folder.iterdir() if p.name.startswith(".")]
        assert not left, f"a failed snapshot left {left}"
        assert _search(home)["total_papers"] == 40

        _resize(indexes, 256 * MB)
        assert _search(home)["total_papers"] == 40
        again = _ingest(home, more)
        assert again["added"] == 0 and again["unchanged"] == 20
        assert again["papers_total"] == 60 and _search(home)["total_papers"] == 60


def test_a_short_write_is_named_a_full_disk(tmp_path):
    """numpy (np.save, and bm25s's files through it) reports a full disk as "N requested and M
    written", an OSError without errno: the snapshot's writer once passed that on as is."""
    import numpy as np

    from ragqa.errors import disk_full_error

    with _tmpfs(tmp_path / "disk") as disk:
        _resize(disk, 64 * 1024)
        with pytest.raises(OSError) as cut:
            np.save(disk / "vectors.npy", np.zeros(100_000))
        assert cut.value.errno is None  # nothing but the text says why
        full = disk_full_error(cut.value, disk)
        assert full is not None and str(full) == (
            f"the disk is full (0 B free on the disk holding {disk}); free space and try again")
