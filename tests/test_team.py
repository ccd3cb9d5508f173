"""A team on one Chroma server (issue 28): several data folders (as several machines have) and one
real `chroma run`, started here. Readers follow what others write; writers run side by side;
what needs the collection alone says so."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import chromadb
import httpx
import pytest

from ragqa.config import load_settings
from ragqa.index import lexical
from ragqa.index.follow import chroma_fingerprint
from ragqa.index.store import Store, local_dir
from ragqa.models.encoders import make_encoder
from ragqa.sources import read_sources

from .conftest import FULL_DUPLEX, SEEDS
from .helpers.processes import ChromaServer, PausedIngest, _one_error_line
from .helpers.serve import RagqaServer, server_env

pytestmark = pytest.mark.server

DUPLEX_TALK = {
    "id": "duplextalk-2026", "title": "DuplexTalk: Streaming Full-Duplex Spoken Dialogue",
    "abstract": "We present DuplexTalk, a full-duplex speech dialogue model that listens and "
                "speaks at the same time, handling interruptions and backchannels in streaming "
                "spoken conversation. DuplexTalk cuts response latency by 40% against "
                "half-duplex cascades on a spoken dialogue benchmark.",
}


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path / "chroma-server", tmp_path / "chroma.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Machine:
    """One client of the shared server: its own data folder."""

    def __init__(self, ragqa, tmp_path: Path, name: str, chroma: ChromaServer) -> None:
        self.home = tmp_path / name
        self.env = {"RAGQA_HOME": str(self.home), "RAGQA_CHROMA_HOST": "127.0.0.1",
                    "RAGQA_CHROMA_PORT": str(chroma.port)}
        self._ragqa = ragqa

    def __call__(self, *args: str):
        return self._ragqa(*args, **self.env)

    def json(self, *args: str) -> dict:
        result = self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def search_ids(self, question: str) -> list[str]:
        return [r["paper_id"] for r in self.json("search", question)["results"]]

    def current(self) -> dict:
        return json.loads((local_dir(self.settings(), "default") / lexical.CURRENT).read_text())

    def settings(self):
        return load_settings({**self.env, "RAGQA_ENV_FILE": "/nonexistent"})

    def process_env(self) -> dict[str, str]:
        return server_env(self.home, **{k: v for k, v in self.env.items() if k != "RAGQA_HOME"})


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _seed_records() -> list[dict]:
    papers = read_sources(sorted(SEEDS.iterdir())).papers
    return [{"id": f"seed-{i:02d}", "title": p.title, "abstract": p.text}
            for i, p in enumerate(papers)]


def _chroma_client(chroma: ChromaServer):
    return chromadb.HttpClient(host="127.0.0.1", port=chroma.port,
                               settings=chromadb.config.Settings(anonymized_telemetry=False))


def _chunks_per_paper(chroma: ChromaServer) -> tuple[Counter, dict[str, int]]:
    """(chunks held per paper, chunks each paper's chunk 0 says it has)."""
    got = _chroma_client(chroma).get_collection("ragqa_default").get(include=["metadatas"])
    held = Counter(str(m["paper_id"]) for m in got["metadatas"])
    said = {str(m["paper_id"]): int(m["n_chunks"]) for m in got["metadatas"]
            if m["chunk_index"] == 0}
    return held, said


def _assert_whole(chroma: ChromaServer, expected: set[str]) -> None:
    """Every expected paper, each with all its chunks once, and nothing else."""
    held, said = _chunks_per_paper(chroma)
    assert set(said) == expected
    assert all(held[pid] == said[pid] for pid in said), "a paper with missing or extra chunks"


# ---------------------------------------------------------------- readers follow the server

def test_a_teammate_sees_new_replaced_and_removed_papers(ragqa, tmp_path, chroma):
    a, b = (Machine(ragqa, tmp_path, name, chroma) for name in ("a", "b"))
    assert a.json("ingest", "--seeds", "--quiet")["added"] == 29
    before = b.search_ids(FULL_DUPLEX)
    assert DUPLEX_TALK["id"] not in before and b.json("papers")["count"] == 29

    new = _jsonl(tmp_path / "new.jsonl", [DUPLEX_TALK])
    assert a.json("ingest", str(new), "--quiet")["added"] == 1
    # B did not ingest, restart or delete anything: its next command sees the paper.
    assert DUPLEX_TALK["id"] in b.search_ids(FULL_DUPLEX)
    shown = b("show", DUPLEX_TALK["id"])
    assert shown.exit_code == 0 and "DuplexTalk" in shown.stdout
    assert b.json("papers")["count"] == 30
    answer = b.json("ask", FULL_DUPLEX)
    assert DUPLEX_TALK["id"] in {p["paper_id"] for p in answer["papers"]}
    # ... by the journal's new records, not by reading every paper again.
    assert len(b.current()["journal"]["applied"]) == len(a.current()["journal"]["applied"])

    # The paper's abstract edited: B reads the new text.
    edited = {**DUPLEX_TALK, "abstract": DUPLEX_TALK["abstract"].replace("40%", "55%")}
    assert a.json("ingest", str(_jsonl(new, [edited])), "--quiet")["updated"] == 1
    assert "55%" in b("show", DUPLEX_TALK["id"]).stdout

    # Removed (--prune of a file that no longer holds it): gone for B too.
    _jsonl(new, [{**DUPLEX_TALK, "id": "other-2026", "title": "Other",
                  "abstract": "A different abstract about graph neural networks for molecules "
                              "and their message passing over bonds."}])
    report = a.json("ingest", str(new), "--prune", "--quiet")
    assert report["deleted"] == 1 and report["added"] == 1
    assert b("show", DUPLEX_TALK["id"]).exit_code == 2
    assert b.json("papers")["count"] == 30

    # What B built by following equals what a fresh client reads from the server.
    settings = b.settings()
    store = Store(settings, "default", make_encoder(settings))
    assert b.current()["fingerprint"] == chroma_fingerprint(store, store.paper_states())
    c = Machine(ragqa, tmp_path, "c", chroma)
    assert c.search_ids("graph neural networks for molecules") == \
        b.search_ids("graph neural networks for molecules")


def test_replicas_answer_the_same_after_a_third_machine_ingests(ragqa, tmp_path, chroma):
    a = Machine(ragqa, tmp_path, "a", chroma)
    a.json("ingest", "--seeds", "--quiet")
    replicas = [RagqaServer(tmp_path / name, **{k: v for k, v in a.env.items()
                                                 if k != "RAGQA_HOME"})
                for name in ("replica-1", "replica-2")]
    try:
        for replica in replicas:
            replica.wait_ready()

        def found(replica: RagqaServer) -> list[str]:
            reply = httpx.post(f"{replica.url}/api/search", json={"question": FULL_DUPLEX},
                               timeout=60)
            assert reply.status_code == 200, reply.text
            return [r["paper_id"] for r in reply.json()["results"]]

        assert found(replicas[0]) == found(replicas[1])
        # The journal and the writers' leases are siblings, never collections (or models).
        models = httpx.get(f"{replicas[0].url}/v1/models", timeout=30).json()["data"]
        assert [m["id"] for m in models] == ["ragqa-default"]
        a.json("ingest", str(_jsonl(tmp_path / "new.jsonl", [DUPLEX_TALK])), "--quiet")
        started = time.monotonic()
        seen = [None, None]
        while time.monotonic() - started < 30 and None in seen:
            for i, replica in enumerate(replicas):
                if seen[i] is None and DUPLEX_TALK["id"] in found(replica):
                    seen[i] = time.monotonic() - started
            time.sleep(0.2)
        assert None not in seen, "a replica never saw the new paper"
        assert found(replicas[0]) == found(replicas[1])

        # A rebuild elsewhere replaces the collection (and starts a new journal): the replicas
        # read it again and answer as before, still without a restart.
        assert a.json("ingest", "--rebuild", "--quiet")["papers_total"] == 30
        journal = a.current()["journal"]["id"]
        followers = [Machine(ragqa, tmp_path, name, chroma) for name in ("replica-1",
                                                                          "replica-2")]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and \
                any(f.current()["journal"]["id"] != journal for f in followers):
            time.sleep(0.3)
        answers = [found(replica) for replica in replicas]
        assert answers[0] == answers[1] and DUPLEX_TALK["id"] in answers[0]
    finally:
        for replica in replicas:
            replica.stop()


# ---------------------------------------------------------------- several writers

def _ingest_process(machine: Machine, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ragqa", "ingest", *args, "--quiet", "--json"],
                            env=machine.process_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


class Reader(threading.Thread):
    """Searches over and over from its own data folder while others write; keeps each
    result's paper ids and every failure."""

    def __init__(self, machine: Machine) -> None:
        super().__init__(daemon=True)
        self.machine, self.stop, self.lists, self.failures = machine, threading.Event(), [], []

    def run(self) -> None:
        while not self.stop.is_set():
            result = subprocess.run(
                [sys.executable, "-m", "ragqa", "search", "speech and audio models", "--json",
                 "-k", "50"], env=self.machine.process_env(), capture_output=True, text=True)
            if result.returncode != 0:
                self.failures.append(result.stderr)
            else:
                self.lists.append([r["paper_id"] for r in json.loads(result.stdout)["results"]])


@pytest.mark.parametrize("overlap", [False, True], ids=["disjoint", "overlapping"])
def test_two_machines_ingest_at_once(ragqa, tmp_path, chroma, overlap):
    records = _seed_records()
    first, second = (records[:20], records[10:]) if overlap else (records[:15], records[15:])
    a, b, r = (Machine(ragqa, tmp_path, name, chroma) for name in ("a", "b", "r"))
    a.json("ingest", str(_jsonl(tmp_path / "first.jsonl", first[:2])), "--quiet")
    reader = Reader(r)
    reader.start()
    try:
        runs = [_ingest_process(a, str(_jsonl(tmp_path / "first.jsonl", first))),
                _ingest_process(b, str(_jsonl(tmp_path / "second.jsonl", second)))]
        for run in runs:
            out, err = run.communicate(timeout=300)
            assert run.returncode == 0, err
    finally:
        reader.stop.set()
        reader.join(timeout=120)
    everything = {rec["id"] for rec in records}
    _assert_whole(chroma, everything)
    assert not reader.failures, reader.failures[0]
    assert reader.lists and all(len(ids) == len(set(ids)) for ids in reader.lists)
    for machine in (a, b, r):
        assert machine.json("papers")["count"] == len(everything)


def test_a_writer_killed_mid_ingest_loses_nothing_for_the_others(ragqa, tmp_path, chroma):
    records = _seed_records()
    a, b, r = (Machine(ragqa, tmp_path, name, chroma) for name in ("a", "b", "r"))
    b.json("ingest", str(_jsonl(tmp_path / "start.jsonl", records[:1])), "--quiet")
    r.json("papers")
    # A's papers written, its journal record not yet: killed there.
    paused = PausedIngest(a.process_env(), "upserted",
                          str(_jsonl(tmp_path / "a.jsonl", records[:14])))
    paused.kill_9()
    report = b.json("ingest", str(_jsonl(tmp_path / "b.jsonl", records[14:])), "--quiet")
    assert report["added"] == len(records) - 14
    # B's ingest recorded what A wrote and did not record: the reader sees both.
    assert r.json("papers")["count"] == len(records)
    assert a.json("ingest", str(tmp_path / "a.jsonl"), "--quiet")["added"] == 0
    _assert_whole(chroma, {rec["id"] for rec in records})
    assert r.json("papers")["count"] == a.json("papers")["count"] == len(records)


def test_prune_and_rebuild_need_the_collection_alone(ragqa, tmp_path, chroma):
    records = _seed_records()
    a, b = (Machine(ragqa, tmp_path, name, chroma) for name in ("a", "b"))
    b.json("ingest", str(_jsonl(tmp_path / "b.jsonl", records[:5])), "--quiet")
    paused = PausedIngest(a.process_env(), "embedding",
                          str(_jsonl(tmp_path / "a.jsonl", records[5:10])))
    try:
        for option in ("--prune", "--rebuild"):
            result = b("ingest", str(tmp_path / "b.jsonl"), option, "--quiet")
            assert result.exit_code == 1
            line = _one_error_line(result.stderr)
            assert "another ingest is writing to collection 'default'" in line
            assert "--prune and --rebuild need the collection alone" in line
        code, said = paused.finish()
        assert code == 0, said
    finally:
        if paused.process.poll() is None:
            paused.kill_9()
    # Alone now, the prune runs (it removes only what b.jsonl held and no longer does).
    assert b.json("ingest", str(tmp_path / "b.jsonl"), "--prune", "--quiet")["deleted"] == 0

    rebuilding = PausedIngest(b.process_env(), "embedding", str(tmp_path / "b.jsonl"),
                              "--rebuild")
    try:
        result = a("ingest", str(tmp_path / "a.jsonl"), "--quiet")
        assert result.exit_code == 1
        assert "an ingest with --prune or --rebuild is writing" in _one_error_line(result.stderr)
        code, said = rebuilding.finish()
        assert code == 0, said
    finally:
        if rebuilding.process.poll() is None:
            rebuilding.kill_9()
    # After the rebuild (a new journal), A reads everything again and misses nothing.
    assert a.json("papers")["count"] == 10


# ---------------------------------------------------------------- errors

def test_a_server_gone_mid_follow_leaves_the_snapshot_usable(ragqa, tmp_path, chroma):
    a, b = (Machine(ragqa, tmp_path, name, chroma) for name in ("a", "b"))
    a.json("ingest", "--seeds", "--quiet")
    b.json("papers")
    kept = b.current()["dir"]
    a.json("ingest", str(_jsonl(tmp_path / "new.jsonl", [DUPLEX_TALK])), "--quiet")
    following = PausedIngest(b.process_env(), "following", FULL_DUPLEX, "--json",
                             command=("search",))
    chroma.kill_9()
    code, said = following.finish()
    assert code == 1, said
    assert _one_error_line(said).startswith("ragqa: error: ")
    assert b.current()["dir"] == kept  # the old snapshot, whole
    chroma.start()
    assert DUPLEX_TALK["id"] in b.search_ids(FULL_DUPLEX)


def _newer_journal(client) -> None:
    journal = client.get_collection("ragqa_default__journal")
    journal.modify(metadata={"ragqa_journal": 99, "head": "moved"})


def _other_embedder(client) -> None:
    collection = client.get_collection("ragqa_default")
    metadata = {k: v for k, v in collection.metadata.items() if not k.startswith("hnsw:")}
    collection.modify(metadata={**metadata, "ragqa_embedder": "other/model"})


@pytest.mark.parametrize(("change", "said"), [
    (_newer_journal, "written by a newer ragqa"), (_other_embedder, "was built with other/model"),
], ids=["journal-of-a-newer-ragqa", "another-embedder"])
def test_a_collection_this_ragqa_cannot_read_is_one_line(ragqa, tmp_path, chroma, change, said):
    a, b = (Machine(ragqa, tmp_path, name, chroma) for name in ("a", "b"))
    a.json("ingest", "--seeds", "--quiet")
    b.json("papers")
    kept = b.current()
    change(_chroma_client(chroma))
    result = b("search", FULL_DUPLEX)
    assert result.exit_code == 2
    assert said in _one_error_line(result.stderr)
    assert b.current() == kept  # the snapshot as it was, still usable


def test_no_name_reaches_another_collections_siblings(ragqa, tmp_path, chroma):
    """Issue 49: `-c default__multi` (a typo, or another team) once opened default's
    multilingual vectors, and `--rebuild` destroyed them. Every "__" name is refused."""
    a, b = (Machine(ragqa, tmp_path, name, chroma) for name in ("a", "b"))
    assert a.json("ingest", "--seeds", "--quiet")["added"] == 29
    client = _chroma_client(chroma)
    siblings = sorted(c.name for c in client.list_collections() if "__" in c.name)
    assert "ragqa_default__multi" in siblings
    held = {name: client.get_collection(name).count() for name in siblings}
    for args in (("ingest", "--seeds", "--rebuild"), ("ask", FULL_DUPLEX), ("papers",),
                 ("search", "speech"), ("ingest", "--seeds")):
        for name in ("default__multi", "default__journal", "default__writers",
                     "default__rebuild", "mine__x"):
            result = b(*args, "-c", name)
            assert result.exit_code == 2, (args, name, result.output)
            assert "'__' is reserved" in _one_error_line(result.stderr)
    assert {name: client.get_collection(name).count() for name in siblings} == held
    # the multilingual vectors still answer a Chinese question
    answer = b.json("ask", "全双工语音的论文有哪些？")
    assert {"Moshi-RAG", "τ-Voice", "Hibiki-Zero"} & {p["title"] for p in answer["papers"]}
