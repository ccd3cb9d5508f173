"""What changed in a collection, kept on its Chroma server for the clients that did not write it.

A team shares one Chroma server, but each client keeps its own BM25 snapshot and paper table
(Chroma's sparse index is hosted-only). The journal is how a client learns what to bring into
its snapshot:
- every write to papers (an upsert, a delete, a change of place) is followed by a journal record
  naming the papers it touched; records are only added, each under a new id, so writers on
  several machines never overwrite each other's;
- after its records, a writer sets the journal's head (its collection metadata) to a new random
  token: one cheap read (`marker`) tells a reader whether anything was written since it looked;
- a record names papers, not what became of them: the reader reads each named paper's chunk 0
  as it is now (present: added or replaced; absent: removed). Applying records is therefore
  idempotent and order-free, and two writers of the same paper cannot leave a reader with the
  older version, since the last write to a paper is always followed by a record.
A writer killed between its writes and its record leaves papers no record names: the next
ingest, from any machine, compares what Chroma holds with its followed snapshot and records
the difference (ingest.reconcile).

Leases say who is writing: `--prune` and `--rebuild` remove what others may be adding, and
need the collection to themselves (`Leases.exclusive`).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ragqa.errors import DiskFullError, IndexMismatchError, StoreError
from ragqa.index.store import PAGE, Store, chroma_failure

JOURNAL_SUFFIX = "__journal"
LEASES_SUFFIX = "__writers"
# 1: records {"papers": JSON list of ids}. A reader refuses a journal of a later format rather
# than misread it (and keeps its snapshot).
JOURNAL_FORMAT = 1
IDS_PER_RECORD = 1000  # a prune of many papers writes several records
LEASE_SECONDS = 60.0  # a writer that has not renewed its lease for this long is gone
RENEW_SECONDS = 10.0
FORGET_SECONDS = 3600.0  # a lease record this old is removed by the next writer that looks
_VECTOR = [1.0]  # Chroma stores a vector with every record; the journal's say nothing


@dataclass(frozen=True)
class Marker:
    """The journal as a reader last saw it: which journal (a rebuild starts a new one, with a new
    Chroma id) and its head."""

    journal_id: str
    head: str


def _meta_without_hnsw(collection) -> dict:
    return {k: v for k, v in (collection.metadata or {}).items() if not k.startswith("hnsw:")}


class Journal:
    """The journal of one collection (a hidden sibling collection, like the multilingual one)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.chroma_name = f"ragqa_{store.name}{JOURNAL_SUFFIX}"

    def _open(self, create: bool):
        from chromadb.errors import NotFoundError

        client = self.store.client
        try:
            if create:
                return self.store.call(
                    "opening the journal", client.get_or_create_collection, self.chroma_name,
                    metadata={"ragqa_journal": JOURNAL_FORMAT, "head": ""},
                    embedding_function=None)
            return client.get_collection(self.chroma_name, embedding_function=None)
        except NotFoundError:
            return None
        except (StoreError, DiskFullError):
            raise
        except Exception as exc:  # chromadb raises many kinds; all mean "store unavailable"
            raise chroma_failure(self.store.settings, "reading the journal", exc) from None

    def marker(self) -> Marker | None:
        """The journal's id and head, in one call to the server; None if the collection has no
        journal (written before ragqa kept one, or never written)."""
        collection = self._open(create=False)
        if collection is None:
            return None
        metadata = collection.metadata or {}
        if int(metadata.get("ragqa_journal", 0)) > JOURNAL_FORMAT:
            raise IndexMismatchError(
                f"collection {self.store.name!r} was written by a newer ragqa (journal format "
                f"{metadata['ragqa_journal']}; this one reads {JOURNAL_FORMAT}): upgrade ragqa")
        return Marker(str(collection.id), str(metadata.get("head", "")))

    def append(self, paper_ids: Iterable[str]) -> None:
        """Record that these papers were written, then move the head."""
        ids = sorted(set(paper_ids))
        if not ids:
            return
        collection = self._open(create=True)
        by = f"{socket.gethostname()}:{os.getpid()}"
        for start in range(0, len(ids), IDS_PER_RECORD):
            part = ids[start : start + IDS_PER_RECORD]
            self.store.call("writing the journal", collection.add,
                             ids=[f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}"],
                             embeddings=[_VECTOR], metadatas=[{
                                 "papers": json.dumps(part, ensure_ascii=False), "by": by,
                                 "at": time.time()}])
        self.store.call("moving the journal's head", collection.modify,
                         metadata={**_meta_without_hnsw(collection), "head": uuid.uuid4().hex})

    def record_ids(self) -> list[str]:
        """The ids of every record (ids only: one small read per PAGE records)."""
        collection = self._open(create=False)
        if collection is None:
            return []
        return [i for page in _pages(self.store, collection, []) for i in page["ids"]]

    def papers_of(self, record_ids: list[str]) -> set[str]:
        """The papers these records name."""
        collection = self._open(create=False)
        found: set[str] = set()
        if collection is None or not record_ids:
            return found
        for start in range(0, len(record_ids), PAGE):
            got = self.store.call("reading the journal", collection.get,
                                   ids=record_ids[start : start + PAGE], include=["metadatas"])
            for meta in got["metadatas"]:
                found.update(json.loads(str(meta.get("papers", "[]"))))
        return found

    def drop(self) -> None:
        """Remove the journal (a rebuild: readers then see a new journal and read everything)."""
        if self._open(create=False) is not None:
            self.store.call("removing the journal", self.store.client.delete_collection,
                             self.chroma_name)


def _pages(store: Store, collection, include: list[str]) -> Iterator[dict]:
    offset = 0
    while True:
        page = store.call("reading the journal", collection.get, include=include, limit=PAGE,
                           offset=offset)
        if not page["ids"]:
            return
        yield page
        offset += len(page["ids"])


# ---------------------------------------------------------------- leases

@dataclass(frozen=True)
class Writer:
    """Another client writing to the collection, as its lease says."""

    who: str
    exclusive: bool
    seconds_ago: float


class Leases:
    """Who is writing to a collection: one record per running ingest, renewed while it runs.

    Two ingests of papers commute (see the module's docstring) and run side by side; `--prune`
    and `--rebuild` remove what another may be adding, so they take an exclusive lease: each
    writer first registers, then looks at the others, and stops if it may not share (the
    exclusive one with any writer, any writer with an exclusive one). Of two that register at
    once, at least one sees the other, so they never run together (both may stop).

    Leases are judged by the writers' clocks (LEASE_SECONDS): machines of a team keep them in
    step (NTP). A lease of this machine whose process is gone is over at once."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.chroma_name = f"ragqa_{store.name}{LEASES_SUFFIX}"
        self.host = socket.gethostname()

    def _collection(self):
        return self.store.call("opening the writers' leases",
                                self.store.client.get_or_create_collection, self.chroma_name,
                                embedding_function=None)

    def others(self, mine: str) -> list[Writer]:
        """The live leases other than `mine`."""
        collection = self._collection()
        got = self.store.call("reading the writers' leases", collection.get,
                               include=["metadatas"])
        now, live, forgotten = time.time(), [], []
        for lease_id, meta in zip(got["ids"], got["metadatas"], strict=True):
            if lease_id == mine:
                continue
            ago = now - float(meta.get("renewed", 0))
            if ago > FORGET_SECONDS:
                forgotten.append(lease_id)  # a killed writer's, long over
            if ago > LEASE_SECONDS or self._process_gone(meta):
                continue
            live.append(Writer(f"{meta.get('host')} (pid {meta.get('pid')})",
                               bool(meta.get("exclusive")), max(ago, 0.0)))
        if forgotten:
            self.store.call("removing old leases", collection.delete, ids=forgotten)
        return live

    def _process_gone(self, meta: dict) -> bool:
        if meta.get("host") != self.host:
            return False
        try:
            os.kill(int(meta.get("pid", 0)), 0)
        except ProcessLookupError:
            return True
        except (OSError, ValueError):
            return False
        return False

    @contextlib.contextmanager
    def held(self, exclusive: bool) -> Iterator[list[Writer]]:
        """Hold a lease while the block runs (renewed by a thread); yields the other writers.
        Raises StoreError if the lease may not be shared."""
        collection = self._collection()
        lease_id = uuid.uuid4().hex
        meta = {"host": self.host, "pid": os.getpid(), "exclusive": exclusive}
        self.store.call("taking a lease", collection.upsert, ids=[lease_id],
                         embeddings=[_VECTOR], metadatas=[{**meta, "renewed": time.time()}])
        stop = threading.Event()
        try:
            others = self.others(lease_id)
            blocking = [w for w in others if exclusive or w.exclusive]
            if blocking:
                writer = blocking[0]
                what = ("another ingest" if not writer.exclusive
                        else "an ingest with --prune or --rebuild")
                need = "--prune and --rebuild need the collection alone" if exclusive else \
                    "it needs the collection alone"
                raise StoreError(
                    f"{what} is writing to collection {self.store.name!r} ({writer.who}, seen "
                    f"{writer.seconds_ago:.0f} s ago); {need}: try again when it ends")
            renewer = threading.Thread(target=self._renew, args=(collection, lease_id, meta,
                                                                 stop),
                                       name="ragqa-lease", daemon=True)
            renewer.start()
            yield others
        finally:
            stop.set()
            # The server went away: the lease runs out by itself.
            with contextlib.suppress(Exception):
                collection.delete(ids=[lease_id])

    def _renew(self, collection, lease_id: str, meta: dict, stop: threading.Event) -> None:
        while not stop.wait(RENEW_SECONDS):
            with contextlib.suppress(Exception):  # tried again at the next renewal
                collection.upsert(ids=[lease_id], embeddings=[_VECTOR],
                                  metadatas=[{**meta, "renewed": time.time()}])
