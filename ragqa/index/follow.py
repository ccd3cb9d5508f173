"""This client's BM25 snapshot and paper table, kept in line with what Chroma holds.

Two ways, both ending in a new immutable snapshot (lexical.py) and a new CURRENT:
- `follow`: read the collection's journal (journal.py) and bring in only the papers its new
  records name: one cheap read when nothing changed (`is_current`), ~1 s at 37,932 papers for a
  few new ones (docs/scaling.md). Every ingest ends with it, and every reader of a shared Chroma
  server runs it (each CLI command once, `ragqa serve` and `ragqa mcp` every second).
- `rebuild_snapshot`: read every paper (a new client, a journal that started again after a
  rebuild, a snapshot of an older ragqa).

CURRENT records what of the journal the snapshot reflects: the journal's id, its head when it
was read, and the records applied. The head is read before the records and the records before
the papers, so a write that lands meanwhile is seen again at the next check, never missed.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from ragqa.errors import LockTimeout, SnapshotError
from ragqa.index import lexical
from ragqa.index.journal import Journal, Marker
from ragqa.index.phases import PHASES, pause_for_tests
from ragqa.index.store import PaperState, Store, local_dir

BACKGROUND_SAMPLE = 2000  # vectors kept to judge how unusual a similarity is (retrieval/signals.py)
# A follow that changes more than this share of the papers draws the background sample again.
RESAMPLE_SHARE = 0.1


@contextlib.contextmanager
def collection_lock(folder: Path, timeout: float) -> Iterator[None]:
    """This machine's lock on a collection's local files (its snapshots): one ingest or one
    follow at a time per data folder. `timeout` 0: fail at once if held."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "ingest.lock").open("a+") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(
                        f"another ingest is writing to this collection (waited {timeout:.0f} s; "
                        "RAGQA_LOCK_TIMEOUT sets how long to wait)"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _journal_state(current: Mapping | None) -> tuple[Marker | None, list[str]]:
    journal = (current or {}).get("journal") or {}
    if not journal.get("id"):
        return None, []
    return Marker(str(journal["id"]), str(journal.get("head", ""))), list(journal["applied"])


def _state(marker: Marker | None, applied: list[str]) -> dict:
    if marker is None:
        return {}
    return {"journal": {"id": marker.journal_id, "head": marker.head, "applied": applied}}


def is_current(store: Store) -> bool:
    """Whether this client's snapshot reflects the collection's journal as it is now: one read
    of the journal's head. A collection without a journal (written by an older ragqa, or never
    written) cannot say, and counts as current once a snapshot exists."""
    current = lexical.read_current(local_dir(store.settings, store.name))
    if not current:
        return False
    marker = Journal(store).marker()
    return marker is None or _journal_state(current)[0] == marker


def follow(store: Store, wait: bool = True,
           known_terms: Mapping[str, lexical.KnownTerms] | None = None,
           locked: bool = False) -> str:
    """Bring this client's snapshot in line with the collection. Returns "current" (nothing to
    do), "updated" (the journal's new records applied), "rebuilt" (every paper read again) or
    "busy" (`wait` False and another process of this data folder holds the lock: it is writing
    a snapshot itself). `known_terms`: as for lexical.write_snapshot. `locked`: the caller
    holds the collection lock (an ingest)."""
    folder = local_dir(store.settings, store.name)
    if locked:
        return _follow_locked(store, folder, known_terms or {})
    if wait is False and is_current(store):
        return "current"
    try:
        with collection_lock(folder, store.settings.lock_timeout if wait else 0):
            return _follow_locked(store, folder, known_terms or {})
    except LockTimeout:
        if wait:
            raise
        return "busy"


def _follow_locked(store: Store, folder: Path,
                   known_terms: Mapping[str, lexical.KnownTerms]) -> str:
    journal = Journal(store)
    marker = journal.marker()
    current = lexical.read_current(folder)
    held, applied = _journal_state(current)
    if current and (folder / current["dir"]).is_dir() and (marker is None or marker == held):
        return "current"
    base = lexical.open_current(folder)
    try:
        store.reset()  # a rebuild elsewhere replaced the collection: open it again
        record_ids = journal.record_ids()
        if base is not None and held is not None and held.journal_id == marker.journal_id:
            seen = set(applied)
            touched = journal.papers_of([i for i in record_ids if i not in seen])
            pause_for_tests("following")
            try:
                _apply(store, base, touched, known_terms, _state(marker, record_ids))
                return "updated"
            except SnapshotError:
                if lexical.up_to_date(base.folder):
                    raise  # the disk, not the snapshot's age
        rebuild_snapshot(store, known_terms, _state(marker, record_ids))
        return "rebuilt"
    finally:
        if base is not None:
            base.close()


def _apply(store: Store, base: lexical.LexicalIndex, touched: set[str],
           known_terms: Mapping[str, lexical.KnownTerms], state: dict) -> None:
    """Bring the named papers into a new snapshot as Chroma holds them now."""
    now = store.papers_by_id(sorted(touched)) if touched else {}
    marks = base.marks(touched)
    removed, added = set(), []
    for pid in touched:
        paper = now.get(pid)
        mark = lexical.paper_mark(paper.content_hash, paper.source, paper.line) if paper else None
        if marks.get(pid) == mark:
            continue  # as the snapshot has it (a record of a write already seen)
        if pid in marks:
            removed.add(pid)
        if paper is not None:
            added.append(paper)
    if not removed and not added:
        lexical.write_current(base.folder.parent, {
            **state, "dir": base.folder.name, "fingerprint": base.fingerprint,
            "papers": base.size})
        return
    fp = lexical.fingerprint_moved(base.fingerprint, [(pid, marks[pid]) for pid in removed],
                                   [(p.paper_id, lexical.paper_mark(p.content_hash, p.source,
                                                                    p.line)) for p in added])
    size = base.size - len(removed) + len(added)
    background = None
    if (len(removed) + len(added)) > RESAMPLE_SHARE * max(base.size, 1) or \
            base.background is None:
        kept = set(base.marks()) - removed | {p.paper_id for p in added}
        background = store.sample_vectors(sorted(kept), BACKGROUND_SAMPLE) if size else None
    lexical.update_snapshot(base, removed, added, fp, background, known_terms, state)


def rebuild_snapshot(store: Store, known_terms: Mapping[str, lexical.KnownTerms] | None = None,
                     state: dict | None = None,
                     states: dict[str, PaperState] | None = None) -> None:
    """A snapshot of every whole paper the collection holds, read from Chroma."""
    folder = local_dir(store.settings, store.name)
    if states is None:
        states = store.paper_states() if store.exists() else {}
    complete = {pid for pid, s in states.items() if s.complete}
    with PHASES.phase("bm25: reading chroma"):
        papers = [p for p in store.iter_papers() if p.paper_id in complete] if complete else []
        background = store.sample_vectors(complete, BACKGROUND_SAMPLE) if complete else None
    with PHASES.phase("bm25: writing the snapshot"):
        lexical.write_snapshot(folder, papers, chroma_fingerprint(store, states), background,
                               known_terms, state)


def chroma_fingerprint(store: Store, states: dict[str, PaperState]) -> str:
    """The fingerprint of the whole papers Chroma holds (and of the embedder: a collection
    re-embedded by another model needs a new background sample)."""
    return lexical.fingerprint(
        [(pid, lexical.paper_mark(s.content_hash, s.source, s.line))
         for pid, s in states.items() if s.complete] + [("", store.encoder.embedder_id)])
