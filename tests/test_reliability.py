"""Reliability (issue 7): kill -9 at known points of an ingest, two ingests at once, a Chroma
server that is down or restarted mid-ingest, a read-only data folder and a full disk.

Everything is real: `python -m ragqa` processes, embedded Chroma and `chroma run` on 127.0.0.1,
the local embedder. Faults come from the OS (SIGKILL, mounts, a killed server); to kill at an
exact point, ingest has one test-only hook, RAGQA_TEST_PAUSE_AT (`_pause_for_tests` in
ragqa/index/ingest.py): it stops at a named stage until a line arrives on stdin.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from ragqa.config import load_settings
from ragqa.index import lexical
from ragqa.index.store import local_dir
from ragqa.sources import read_sources

from .conftest import SEEDS, Ragqa
from .helpers.corpus import _many_papers
from .helpers.ingest import _consistent_paper_ids, _ingest
from .helpers.processes import PausedIngest, _one_error_line

NEW_QUERY = "graph neural networks for molecular property prediction"


# ---------------------------------------------------------------- helpers


def _chroma_ids_on_disk(home: Path, collection: str = "ragqa_default") -> set[str]:
    """The paper ids of one collection in the embedded store's SQLite file, read without a
    Chroma client (so that this test process opens no store while another process writes it).
    The seeds keep multilingual vectors in a sibling collection (ragqa_default__multi), which
    follows the main one when its ingest step comes (after the BM25 snapshot)."""
    with contextlib.closing(sqlite3.connect(f"file:{home / 'chroma' / 'chroma.sqlite3'}?mode=ro",
                                            uri=True)) as db:
        rows = db.execute(
            "SELECT DISTINCT m.string_value FROM embedding_metadata m "
            "JOIN embeddings e ON e.id = m.id JOIN segments s ON s.id = e.segment_id "
            "JOIN collections c ON c.id = s.collection WHERE m.key = 'paper_id' AND c.name = ?",
            (collection,))
        return {r[0] for r in rows}


def _snapshot_ids(home: Path, **env: str) -> set[str]:
    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent", **env})
    snapshot = lexical.open_current(local_dir(settings, "default"))
    assert snapshot is not None
    try:
        return {p.paper_id for p in snapshot.all_papers()}
    finally:
        snapshot.close()


def _assert_agree(ragqa: Ragqa, home: Path, expected: set[str], port: int | None = None) -> None:
    """Chroma and the BM25 snapshot hold exactly `expected`, each paper whole and once, and the
    CLI (`papers`, `search`) answers from that same set."""
    env = {"RAGQA_CHROMA_HOST": "127.0.0.1", "RAGQA_CHROMA_PORT": str(port)} if port else {}
    assert _consistent_paper_ids(home, port=port) == expected
    listed = ragqa("papers", "--json", **env)
    assert listed.exit_code == 0, listed.output
    ids = [p["paper_id"] for p in json.loads(listed.stdout)["papers"]]
    assert len(ids) == len(set(ids)) and set(ids) == expected
    found = ragqa("search", NEW_QUERY, "--no-cut", "-k", "5", "--json", **env)
    assert found.exit_code == 0, found.output
    result = json.loads(found.stdout)
    assert result["total_papers"] == len(expected)
    assert result["results"] and {r["paper_id"] for r in result["results"]} <= expected


def _seed_ids() -> set[str]:
    return {p.paper_id for p in read_sources([SEEDS]).papers}


def _new_papers(path: Path, numbers: Iterable[int] = range(3), revised: Iterable[int] = ()
                ) -> set[str]:
    """Papers the seeds do not hold, all about NEW_QUERY, with ids n0, n1, ...; the `revised`
    ones have a sentence more."""
    rows = [{"id": f"n{i}", "title": f"Message passing variant {i}", "abstract":
             f"We propose message-passing variant {i} of graph neural networks for molecular "
             "property prediction and evaluate it on standard benchmarks."
             + (" Revised: it also predicts reaction yields." if i in set(revised) else "")}
            for i in numbers]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {r["id"] for r in rows}


# ---------------------------------------------------------------- 1: kill -9 at known points

def _edit_sources(src: Path) -> tuple[str, str]:
    """Edit one seed abstract in place and remove another: (old id of the edited one, removed
    id). With new papers beside them, an `ingest --prune` deletes, embeds and upserts."""
    first, second = src / "000_5a03819fc22e34a3.txt", src / "001_f2883c612296ae37.txt"
    edited = read_sources([first]).papers[3]
    assert edited.title == "Moshi-RAG"
    first.write_text(first.read_text(encoding="utf-8").replace("Moshi-RAG", "Moshi-RAG2"),
                     encoding="utf-8")
    removed = read_sources([second]).papers[-1]
    blocks = second.read_text(encoding="utf-8").strip().split("\n\n")
    second.write_text("\n\n".join(blocks[:-1]) + "\n", encoding="utf-8")
    return edited.paper_id, removed.paper_id


@pytest.mark.parametrize("stage", ["embedding", "upserted", "deleted"], ids=[
    "1a-while-embedding", "1b-after-upsert-before-bm25", "1c-during-prune"])
def test_kill_9_mid_ingest_then_the_next_ingest_repairs(seeded, home, seeds_copy, stage):
    # The seeded papers came from the package's seeds/; one ingest of the copy makes its files
    # theirs (their paths change; nothing is embedded), so that edits to it replace them. In a
    # child, like the ingest killed below: this process must not hold Chroma open meanwhile.
    adopted = subprocess.run([sys.executable, "-m", "ragqa", "ingest", str(seeds_copy),
                              "--quiet", "--json"], env={**os.environ, "RAGQA_HOME": str(home)},
                             capture_output=True, text=True, check=False)
    assert json.loads(adopted.stdout or "{}").get("unchanged") == 29, adopted.stderr
    edited_old, removed = _edit_sources(seeds_copy)
    # While embedding: enough text, on one thread, that the embedder runs for a second or so.
    embedding = stage == "embedding"
    new = _many_papers(seeds_copy / "more.jsonl", 12 if embedding else 3)
    expected = {p.paper_id for p in read_sources([seeds_copy]).papers}
    assert new <= expected and not {edited_old, removed} & expected
    before = _seed_ids()

    paused = PausedIngest({"RAGQA_EMBED_THREADS": "1"} if embedding else {}, stage,
                          str(seeds_copy), "--prune")
    if embedding:
        paused.release()
        time.sleep(0.1)
    paused.kill_9()

    # Where the kill landed: the BM25 snapshot is still the last consistent one, and Chroma
    # holds the deletions, and (after the upsert) the new papers.
    assert _snapshot_ids(home) == before
    written = _chroma_ids_on_disk(home)
    if stage == "upserted":
        assert written == expected
    else:
        assert written == before - {edited_old, removed}, "killed after the upsert"

    report = _ingest(seeded, str(seeds_copy), "--prune")
    assert report["lexical_rebuilt"] is True
    if stage == "upserted":
        assert report["chunks"] == 0  # nothing embedded twice
    _assert_agree(seeded, home, expected)


# ---------------------------------------------------------------- 2: two processes at once

def _lock_holders(path: Path) -> set[int]:
    """Pids holding an flock on `path` (from /proc/locks, by inode)."""
    inode = path.stat().st_ino
    holders = set()
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "FLOCK" in fields and fields[-3].endswith(f":{inode}"):
            holders.add(int(fields[-4]))
    return holders


def _has_open(pid: int, path: Path) -> bool:
    with contextlib.suppress(OSError):
        return any(os.readlink(fd) == str(path.resolve())
                   for fd in Path(f"/proc/{pid}/fd").iterdir())
    return False


def test_second_ingest_waits_or_fails_and_search_answers_from_the_last_snapshot(
        seeded, home, tmp_path):
    source = tmp_path / "new.jsonl"
    new = _new_papers(source)
    lock = local_dir(load_settings(), "default") / "ingest.lock"
    first = PausedIngest({}, "upserted", str(source))  # holds the lock; Chroma has the new papers
    assert _lock_holders(lock) == {first.process.pid}

    # A second ingest that may not wait long fails clearly ...
    impatient = seeded("ingest", str(source), "--quiet", RAGQA_LOCK_TIMEOUT="0.5")
    assert impatient.exit_code == 1
    assert "another ingest is writing to this collection" in _one_error_line(impatient.stderr)

    # ... one that may, waits: it opened the lock file, and is still waiting for it.
    patient = subprocess.Popen([sys.executable, "-m", "ragqa", "ingest", str(source), "--quiet",
                                "--json"], env={**os.environ, "RAGQA_LOCK_TIMEOUT": "300"},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not _has_open(patient.pid, lock) and patient.poll() is None:
        assert time.monotonic() < deadline, "the second ingest never reached the lock"
        time.sleep(0.05)

    # Meanwhile a search answers from the last consistent state: the seeds' snapshot.
    for args in (["search", NEW_QUERY, "--no-cut", "-k", "5", "--json"], ["papers", "--json"]):
        during = seeded(*args)
        assert during.exit_code == 0, during.output
        shown = json.loads(during.stdout)
        ids = {r["paper_id"] for r in shown.get("results", shown.get("papers", []))}
        assert ids and ids <= _seed_ids()
    assert shown["count"] == 29

    time.sleep(1.0)
    assert patient.poll() is None, "the second ingest did not wait for the lock"
    assert _lock_holders(lock) == {first.process.pid}
    code, stderr = first.finish()
    assert code == 0, stderr
    out, err = patient.communicate(timeout=300)
    assert patient.returncode == 0, err
    report = json.loads(out)
    assert report["chunks"] == 0 and report["unchanged"] == len(new)
    _assert_agree(seeded, home, _seed_ids() | new)


def test_search_during_the_first_ingest_does_not_add_the_seeds(ragqa, home, tmp_path):
    """A query on an empty collection ingests the bundled seeds first; a collection that another
    ingest is filling for the first time only looks empty, and must not get them."""
    source = tmp_path / "new.jsonl"
    new = _new_papers(source)
    first = PausedIngest({}, "embedding", str(source))  # the collection exists, still empty
    search = subprocess.Popen([sys.executable, "-m", "ragqa", "search", NEW_QUERY, "--no-cut"],
                              env={**os.environ, "RAGQA_LOCK_TIMEOUT": "300"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert search.stderr is not None
    for notice in search.stderr:  # written once the search found the collection empty
        if "is empty" in notice:
            break
    else:
        pytest.fail(f"the search ended without finding the collection empty: {search.wait()}")
    code, stderr = first.finish()
    assert code == 0, stderr
    out, err = search.communicate(timeout=300)
    assert search.returncode == 0, err
    assert "Message passing variant" in out
    _assert_agree(ragqa, home, new)


# ---------------------------------------------------------------- 3: a Chroma server restarted


@pytest.mark.server
def test_chroma_server_restarted_mid_ingest(ragqa, home, tmp_path, restartable_server):
    server = restartable_server
    env = {"RAGQA_CHROMA_HOST": "127.0.0.1", "RAGQA_CHROMA_PORT": str(server.port)}
    source = tmp_path / "papers.jsonl"
    _new_papers(source)
    first = ragqa("ingest", str(source), "--quiet", **env)
    assert first.exit_code == 0, first.output
    expected = _new_papers(source, [0, 1, 3], revised=[1])  # n1 edited, n2 gone, n3 new

    # The server dies after the ingest deleted n2 and n1's old version, before it writes.
    paused = PausedIngest(env, "deleted", str(source), "--prune")
    server.kill_9()
    code, stderr = paused.finish()
    assert code == 1
    assert f"Chroma server at 127.0.0.1:{server.port} failed" in _one_error_line(stderr)

    server.start()
    again = ragqa("ingest", str(source), "--prune", "--quiet", "--json", **env)
    assert again.exit_code == 0, again.output
    _assert_agree(ragqa, home, expected, port=server.port)
    shown = ragqa("show", "n1", "--json", **env)
    assert "Revised" in json.loads(shown.stdout)["text"]


# ---------------------------------------------------------------- 5: read-only, full disk

def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


def _unmount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)  # still in use: detach


def _writable(folder: Path) -> bool:
    probe = folder / ".probe"
    try:
        probe.write_text("x")
    except OSError:
        return False
    probe.unlink()
    return True


@contextlib.contextmanager
def _read_only(folder: Path) -> Iterator[None]:
    """`folder` read-only: by chmod, and where that does not stop writes (root), by a read-only
    bind mount over it."""
    with contextlib.ExitStack() as undo:
        modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")]}
        undo.callback(lambda: [p.chmod(mode) for p, mode in modes.items()])
        for p, mode in modes.items():
            p.chmod(mode & ~0o222)
        if _writable(folder):
            if not _mount("--bind", str(folder), str(folder)):
                pytest.skip("chmod does not stop this user (root) and a bind mount is not "
                            "possible here: no way to make a folder read-only")
            undo.callback(_unmount, folder)
            if not _mount("-o", "remount,ro,bind", str(folder)):
                pytest.skip("cannot remount a bind mount read-only here")
        yield


def test_read_only_data_folder_is_one_clear_error_and_the_index_survives(seeded, home,
                                                                          tmp_path):
    source = tmp_path / "new.jsonl"
    _new_papers(source)
    with _read_only(home):
        assert not _writable(home), "the data folder is still writable"
        for args in (["ingest", str(source), "--quiet"], ["search", NEW_QUERY]):
            result = seeded(*args)
            assert result.exit_code == 1, result.output
            assert "read" in _one_error_line(result.stderr).lower()
    _assert_agree(seeded, home, _seed_ids())


@contextlib.contextmanager
def _full_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A small tmpfs on `folder` (its files copied in), then filled up; yields the filler file,
    whose removal frees the space again."""
    if os.geteuid() != 0:
        pytest.skip("a full disk needs a small tmpfs, and mounting one needs root")
    saved = folder.with_name(folder.name + ".saved")
    shutil.copytree(folder, saved)
    if not _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)):
        pytest.skip("cannot mount a tmpfs here")
    try:
        shutil.copytree(saved, folder, dirs_exist_ok=True)
        filler = folder / "filler"
        with filler.open("wb", buffering=0) as handle, contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 4096)
        with pytest.raises(OSError) as full:
            (folder / "probe").write_bytes(b"\0" * 4096)
        assert full.value.errno == errno.ENOSPC
        yield filler
    finally:
        _unmount(folder)


@pytest.mark.parametrize("where", ["store", "bm25"], ids=["disk-full", "bm25-folder-full"])
def test_full_disk_is_one_clear_error_and_the_index_survives(seeded, home, tmp_path, where):
    """`store`: the whole data folder is full. `bm25`: only the folder of the BM25 snapshots (a
    tmpfs of its own) is: Chroma takes the new papers, the snapshot cannot follow."""
    source = tmp_path / "new.jsonl"
    new = _new_papers(source)
    folder = home if where == "store" else home / "indexes"
    with _full_tmpfs(folder, "8m" if where == "store" else "1m") as filler:
        failed = seeded("ingest", str(source), "--quiet")
        assert failed.exit_code == 1, failed.output
        line = _one_error_line(failed.stderr)
        assert "internal error" not in line
        assert "disk is full" in line or "No space left on device" in line
        found = seeded("search", NEW_QUERY, "--no-cut", "-k", "5", "--json")
        if where == "bm25":
            # Searches answer from the last snapshot, whole, while the disk is full.
            assert found.exit_code == 0, found.output
            assert {r["paper_id"] for r in json.loads(found.stdout)["results"]} <= _seed_ids()
            assert _chroma_ids_on_disk(home) == _seed_ids() | new
            assert not list(local_dir(load_settings(), "default").glob(".tmp-*")), \
                "a failed snapshot was left behind, filling the disk further"
        else:
            # Embedded Chroma writes as it opens: on a full disk a search fails too, clearly.
            assert found.exit_code == 1, found.output
            assert "disk is full" in _one_error_line(found.stderr)
            assert _chroma_ids_on_disk(home) == _seed_ids()
        filler.unlink()
        assert _snapshot_ids(home) == _seed_ids()
        found = seeded("search", NEW_QUERY, "--no-cut", "-k", "5", "--json")
        assert found.exit_code == 0, found.output
        assert json.loads(found.stdout)["total_papers"] == 29
        again = _ingest(seeded, str(source))
        assert again["lexical_rebuilt"] is True
        _assert_agree(seeded, home, _seed_ids() | new)
