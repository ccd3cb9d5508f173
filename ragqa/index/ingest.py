"""Sources -> Chroma, incrementally: diff by content hash, chunk, embed, upsert, delete, record
each write in the collection's journal, then bring the BM25 snapshot in line (follow.py).

Why it survives `kill -9`: a paper's chunks go to Chroma in one upsert, chunk 0 (which records
how many chunks the paper has) last, and the next run treats any paper whose chunks disagree
with that as absent (deletes and redoes it). A run killed after a write and before its journal
record is repaired by the next ingest from any machine (`reconcile`).

Why several machines may ingest into one collection at once (a shared Chroma server): upserts of
a paper are idempotent, journal records are only added, and readers apply them order-free
(journal.py). What removes papers others may be adding (`--prune`, `--rebuild`) takes an
exclusive lease on the server and stops with one line if another writer is there.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ragqa.errors import DiskFullError, IndexMismatchError
from ragqa.index import lexical
from ragqa.index.follow import collection_lock, follow
from ragqa.index.journal import Journal, Leases
from ragqa.index.phases import PHASES, pause_for_tests
from ragqa.index.store import CHUNK_TEXT_KEY, PaperState, Store, chunk_metadata, local_dir
from ragqa.models import Encoder
from ragqa.models.encoders import make_multilingual_encoder
from ragqa.sources import ReadReport, read_sources
from ragqa.sources.paper import Paper
from ragqa.text import chunk_pieces

if TYPE_CHECKING:
    import numpy as np

    from ragqa.config import Settings

PAPERS_PER_BATCH = 256  # one upsert each; big enough that length-sorted batches pad little
WRITES_AHEAD = 2  # embedded batches that may wait for the writer: bounds the memory they hold
REBUILD_SUFFIX = "__rebuild"
MULTILINGUAL_PER_BATCH = 32  # chunks a multilingual upsert: what a kill can lose


@dataclass
class Plan:
    to_embed: list[Paper] = field(default_factory=list)
    to_delete: list[str] = field(default_factory=list)  # replaced, pruned or half-written
    # id -> (source, line, source_path): papers whose text is unchanged but whose place is not
    moved: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    places_changed: int = 0  # of those, the ones whose (source, line) changed: "moved"
    unchanged: int = 0
    not_in_sources: int = 0  # papers of these files the files no longer hold (kept w/o --prune)


@dataclass
class IngestReport:
    collection: str
    added: int = 0
    updated: int = 0
    deleted: int = 0
    moved: int = 0
    unchanged: int = 0
    skipped_bad: int = 0
    records_read: int = 0  # records of the sources parsed (kept by --where/--limit or not)
    without_abstract: int = 0  # BibTeX entries that are no paper
    # Records read and counted, not errors, by kind (ragqa.sources.paper.TALLIES): entries
    # without or with a placeholder abstract, a paper read twice, OpenReview replies, and
    # quirks of real libraries read through (empty and duplicate keys, repeated fields).
    tallies: dict[str, int] = field(default_factory=dict)
    not_in_sources: int = 0
    chunks: int = 0
    papers_total: int = 0
    lexical_rebuilt: bool = False
    seconds: float = 0.0
    skipped_messages: list[str] = field(default_factory=list)
    # Multilingual vectors (ingest --multilingual): whether the collection keeps them, how many
    # chunks got one in this run, and how many chunks have one now.
    multilingual: bool = False
    multilingual_embedded: int = 0
    multilingual_chunks: int = 0
    multilingual_seconds: float = 0.0


class Progress:
    """Callbacks the CLI implements to draw a progress bar; ingest itself never prints."""

    def start(self, total: int) -> None: ...

    def advance(self, papers: int) -> None: ...

    def stage(self, message: str) -> None: ...

    def finish(self) -> None: ...


# ---------------------------------------------------------------- planning

def _source_file(source: str) -> str:
    return source.rpartition("#")[0] or source


class _Files:
    """The files being ingested, and whether a stored paper came from one of them.

    A file is its resolved path: two folders may each hold a `corpus.jsonl.gz`, and ingesting
    one must not touch the other's papers. Papers stored before ragqa recorded paths are matched
    by file name, as then."""

    def __init__(self, papers: Sequence[Paper]) -> None:
        self.paths = {p.source_path for p in papers if p.source_path}
        self.names = {_source_file(p.source) for p in papers}

    def holds(self, state: PaperState) -> bool:
        if state.source_path:
            return state.source_path in self.paths
        return _source_file(state.source) in self.names


def keep_stored_ids(papers: Sequence[Paper], held: Container[str]) -> list[Paper]:
    """The papers, each under the id the collection holds it by: a paper an earlier version
    of ragqa named otherwise (a BibTeX entry by its abstract's hash) keeps that id, so that
    re-ingesting a library neither doubles its papers nor breaks saved chats' citations."""
    incoming = {p.paper_id for p in papers}
    taken: set[str] = set()
    out = []
    for paper in papers:
        if paper.paper_id not in held:
            former = next((f for f in paper.former_ids if f in held and f not in incoming
                           and f not in taken), None)
            if former:
                taken.add(former)
                paper = replace(paper, paper_id=former)
        out.append(paper)
    return out


def plan_changes(papers: Sequence[Paper], states: dict[str, PaperState], prune: bool,
                 others_writing: bool = False) -> Plan:
    """What to embed, delete and move. `others_writing`: another client is writing to the
    collection now, so a paper half-written and not in these sources may be one it is writing:
    it is left alone (the next ingest that runs alone removes it if it stays half-written)."""
    plan = Plan()
    incoming = {p.paper_id: p for p in papers}
    for paper in papers:
        state = states.get(paper.paper_id)
        if state is None:
            plan.to_embed.append(paper)
        elif not state.complete or state.content_hash != paper.content_hash:
            plan.to_delete.append(paper.paper_id)
            plan.to_embed.append(paper)
        elif (state.source, state.line, state.source_path) != \
                (paper.source, paper.line, paper.source_path or state.source_path):
            plan.moved[paper.paper_id] = (paper.source, paper.line,
                                          paper.source_path or state.source_path)
            if (state.source, state.line) != (paper.source, paper.line):
                plan.places_changed += 1
            else:  # the same place of a file whose path is now known, or whose folder moved
                plan.unchanged += 1
        else:
            plan.unchanged += 1
    files = _Files(papers)
    # Slots (path, file name#position) taken by papers new to the index: an edited abstract's
    # new version. With "" for the path too, for papers stored before paths were recorded.
    new = [p for p in papers if p.paper_id not in states]
    taken_slots = {(path, p.source) for p in new for path in (p.source_path, "")}
    for pid, state in states.items():
        if pid in incoming:
            continue
        if not state.complete:
            if not others_writing:
                plan.to_delete.append(pid)  # half-written by a killed run, not coming back
        elif files.holds(state):
            # An abstract edited in place gets a new id and takes its predecessor's slot.
            if prune or (state.source_path, state.source) in taken_slots:
                plan.to_delete.append(pid)
            else:
                plan.not_in_sources += 1
    return plan


# ---------------------------------------------------------------- chunking

def make_chunker(encoder: Encoder, settings: Settings) -> Callable[[Paper], list[str]]:
    """A paper's chunks, sized in the embedder's own tokens so that title + chunk fits
    `chunk_tokens` (MiniLM reads 256 tokens and silently drops the rest).

    An abstract that fits is one chunk: most do (73 % of the mlconf abstracts), and embedding it
    whole costs the same as the raw embedder and keeps its context together. A longer one is cut
    between sentences, so no sentence goes unread; `chunk_overlap` tokens of the previous
    chunk's last sentences may be repeated (none by default: SciFact does not need them, and
    each is embedded twice). Linear in the text: a 10 MB abstract chunks in
    seconds."""

    def chunks(paper: Paper) -> list[str]:
        prefix = 0 if paper.title_derived else encoder.count_tokens(f"{paper.title}.") + 1
        # A WordPiece token spans at most ~100 characters ([UNK] for a longer word): past that
        # many the text cannot fit, and tokenising a megabyte text in one piece takes seconds.
        if len(paper.text) <= 101 * settings.chunk_tokens and \
                prefix + encoder.count_tokens(paper.text) <= settings.chunk_tokens:
            return [paper.text]
        # A very long title must not leave chunks too small to say anything.
        size = max(settings.chunk_tokens - prefix, settings.chunk_tokens // 2)
        counted = [piece for sentence in chunk_pieces(paper.text)
                   for piece in _fit(sentence, encoder.count_tokens(sentence), size,
                                     encoder.count_tokens)]
        return pack([p for p, _ in counted], [n for _, n in counted], size,
                    min(settings.chunk_overlap, size // 4)) or [paper.text]

    return chunks


def _fit(sentence: str, tokens: int, size: int, count: Callable[[str], int]
         ) -> list[tuple[str, int]]:
    """(piece, tokens): the sentence itself when it fits a chunk, else pieces of about
    size * 0.8 tokens cut at spaces (sized from its characters per token: counting every word
    would be slow)."""
    if tokens <= size:
        return [(sentence, tokens)]
    width = max(1, int(len(sentence) / tokens * size * 0.8))
    pieces, start = [], 0
    while start < len(sentence):
        end = start + width
        if end < len(sentence):
            space = sentence.rfind(" ", start + 1, end)
            end = space if space > start else end  # no space: cut inside the "word"
        pieces.append(sentence[start:end].strip())
        start = end
    return [(p, count(p)) for p in pieces if p]


def pack(pieces: Sequence[str], tokens: Sequence[int], size: int, overlap: int) -> list[str]:
    """Consecutive pieces joined into chunks of at most `size` tokens (a piece larger than
    that stands alone), each starting with the previous chunk's last pieces that fit in
    `overlap` tokens."""
    chunks: list[str] = []
    current: list[int] = []  # indices into pieces
    used = 0
    for i, n in enumerate(tokens):
        if current and used + n > size:
            chunks.append(" ".join(pieces[j] for j in current))
            carried: list[int] = []
            kept = 0
            for j in reversed(current):
                if kept + tokens[j] > overlap or kept + tokens[j] + n > size:
                    break
                carried.insert(0, j)
                kept += tokens[j]
            current, used = carried, kept
        current.append(i)
        used += n
    if current:
        chunks.append(" ".join(pieces[j] for j in current))
    return chunks


def embedding_input(paper: Paper, chunk: str) -> str:
    """A real title says what the paper is about; prefix it. A derived one is already in it."""
    return chunk if paper.title_derived else f"{paper.title}. {chunk}"


# ---------------------------------------------------------------- running

@dataclass
class _Batch:
    """One batch of papers, chunked, then embedded: one upsert."""

    papers: list[Paper]
    ids: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)  # what is embedded: title + chunk
    documents: list[str] = field(default_factory=list)
    metadatas: list[dict] = field(default_factory=list)
    vectors: np.ndarray | None = None


def _chunk(chunker: Callable[[Paper], list[str]], papers: list[Paper]) -> _Batch:
    batch = _Batch(papers)
    with PHASES.phase("chunking"):
        for paper in papers:
            chunks = chunker(paper)
            for i, chunk in enumerate(chunks):
                batch.ids.append(f"{paper.paper_id}::{i}")
                batch.inputs.append(embedding_input(paper, chunk))
                batch.documents.append(chunk)
                batch.metadatas.append(chunk_metadata(paper, i, len(chunks)))
    return batch


class _Writer:
    """The Chroma upserts, on a thread of their own, so that the next batch embeds meanwhile.

    One thread, a FIFO queue: batches are written in the order they were embedded, each in one
    `Store.upsert` (chunk 0 of each paper last, so kill -9 safety is that of a single upsert).
    At most WRITES_AHEAD embedded batches wait. The first failure stops the writing; the main
    thread raises it at its next `put` or at `close`. `close` waits for every batch handed
    over: what was embedded before a failure elsewhere (the embedder, Ctrl-C) is kept.

    Once a batch is written, the writer records it in the collection's journal (so that other
    clients see its papers while the ingest goes on), then works out its papers' BM25 terms into
    `known_terms`, for the snapshot written at the end (follow.py)."""

    def __init__(self, store: Store, known_terms: dict[str, lexical.KnownTerms] | None,
                 journal: Journal | None, stored: list[str] | None = None) -> None:
        self._store = store
        self._known_terms = known_terms
        self._journal = journal
        self._stored = stored  # the papers written whole so far: what a failure leaves
        self._queue: queue.Queue[_Batch | None] = queue.Queue(maxsize=WRITES_AHEAD)
        self._error: BaseException | None = None
        # A daemon: a writer stuck in Chroma must not keep a Ctrl-C'd process alive.
        self._thread = threading.Thread(target=self._run, name="ragqa-ingest-writer",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (batch := self._queue.get()) is not None:
            if self._error is not None:
                continue  # drain, so that `put` never blocks on a dead writer
            try:
                with PHASES.phase("chroma upserts"):
                    self._store.upsert(batch.ids, batch.vectors, batch.documents,
                                       batch.metadatas)
                    if self._store.encoder.dimension:
                        self._store.record_dimension(self._store.encoder.dimension)
                if self._stored is not None:
                    self._stored.extend(p.paper_id for p in batch.papers)
                pause_for_tests("upserted")
                if self._journal is not None:
                    self._journal.append(p.paper_id for p in batch.papers)
                if self._known_terms is not None:
                    with PHASES.phase("bm25: terms, while embedding"):
                        for paper in batch.papers:
                            self._known_terms[paper.paper_id] = lexical.document_terms(paper)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread
                self._error = exc

    def check(self) -> None:
        """Raise the writer's failure, if it had one."""
        if self._error is not None:
            raise self._error

    def put(self, batch: _Batch) -> None:
        self.check()
        with PHASES.phase("waiting for the writer"):
            self._queue.put(batch)

    def close(self, check: bool = True) -> None:
        with PHASES.phase("waiting for the writer"):
            self._queue.put(None)
            self._thread.join()
        if check:
            self.check()


def _embed_and_store(store: Store, papers: list[Paper], progress: Progress,
                     known_terms: dict[str, lexical.KnownTerms] | None,
                     journal: Journal | None, stored: list[str] | None = None) -> int:
    """Chunk, embed and upsert `papers`, PAPERS_PER_BATCH at a time; returns the chunks.
    `stored`: extended with the ids of the papers written, batch by batch."""
    chunker = make_chunker(store.encoder, store.settings)
    store.collection(create=True)
    writer = _Writer(store, known_terms, journal, stored)
    batches = [papers[i : i + PAPERS_PER_BATCH] for i in range(0, len(papers), PAPERS_PER_BATCH)]
    chunks = 0
    try:
        ahead = _chunk(chunker, batches[0])
        for i in range(len(batches)):
            writer.check()  # a failed write: embed nothing more
            pause_for_tests("embedding")
            with PHASES.phase("embedding"):
                ahead.vectors = store.encoder.embed(ahead.inputs)
            # The next batch is chunked before this one goes to the writer: chunking is Python
            # that needs the GIL, as the writer does; the embedder mostly runs without it.
            embedded = ahead
            if i + 1 < len(batches):
                ahead = _chunk(chunker, batches[i + 1])
            writer.put(embedded)
            chunks += len(embedded.ids)
            progress.advance(len(embedded.papers))
    except BaseException:
        writer.close(check=False)  # the error in hand is the one to show
        raise
    writer.close()
    return chunks


def reconcile(store: Store, journal: Journal, states: dict[str, PaperState]) -> int:
    """Record the papers whose last write no journal record names (a writer killed between its
    write and its record): those where Chroma and this client's followed snapshot disagree.
    Returns how many."""
    index = lexical.open_current(local_dir(store.settings, store.name))
    if index is None:
        return 0
    try:
        held = index.marks()
    finally:
        index.close()
    whole = {pid: lexical.paper_mark(s.content_hash, s.source, s.line)
             for pid, s in states.items() if s.complete}
    differ = {pid for pid, mark in whole.items() if held.get(pid) != mark}
    differ |= {pid for pid in held if pid not in whole}
    journal.append(differ)
    return len(differ)


def ingest_papers(store: Store, papers: Sequence[Paper], prune: bool = False,
                  progress: Progress | None = None, lexical_index: bool = True,
                  alone: bool = True, stored: list[str] | None = None) -> IngestReport:
    """Bring the collection in line with `papers`. The caller holds the collection lock (and,
    on a Chroma server, a lease: `alone` says whether another writer holds one too).
    `lexical_index` False: a side collection (a rebuild's), with no journal nor snapshot.
    `stored`: extended with the ids of the papers embedded and written whole, as they are (what
    an ingest that fails part-way has added)."""
    started = time.perf_counter()
    progress = progress or Progress()
    report = IngestReport(collection=store.name)
    journal = Journal(store) if lexical_index else None
    progress.stage("Comparing with the index")
    with PHASES.phase("comparing with the index"):
        if journal is not None and store.exists():
            # What the others wrote (or a lost snapshot), so that `reconcile` can judge.
            report.lexical_rebuilt = follow(store, locked=True) != "current"
        states = store.paper_states() if store.exists() else {}
        if journal is not None:
            reconcile(store, journal, states)
        papers = keep_stored_ids(papers, states)
        plan = plan_changes(papers, states, prune, others_writing=not alone)
    if plan.to_delete:
        progress.stage(f"Removing {len(plan.to_delete)} outdated papers")
        store.delete_papers(plan.to_delete)
        pause_for_tests("deleted")
        if journal is not None:
            journal.append(plan.to_delete)
    if plan.moved:
        store.update_places(plan.moved)
        if journal is not None:
            journal.append(plan.moved)
    # The papers' BM25 terms, worked out by the writer while the next batch embeds.
    known_terms: dict[str, lexical.KnownTerms] | None = {} if lexical_index else None
    if plan.to_embed:
        progress.start(len(plan.to_embed))
        report.chunks = _embed_and_store(store, plan.to_embed, progress, known_terms, journal,
                                         stored)
        progress.finish()
    replaced = {pid for pid in plan.to_delete if pid in states and states[pid].complete}
    embedded = {p.paper_id for p in plan.to_embed}
    report.updated = len(embedded & replaced)
    report.added = len(embedded) - report.updated
    report.deleted = len(replaced - embedded)
    report.moved, report.unchanged = plan.places_changed, plan.unchanged
    report.not_in_sources = plan.not_in_sources
    if lexical_index:
        progress.stage("Updating the BM25 index")
        with PHASES.phase("bm25: following the journal"):
            if follow(store, locked=True, known_terms=known_terms) != "current":
                report.lexical_rebuilt = True
        index = lexical.open_current(local_dir(store.settings, store.name))
        report.papers_total = index.size if index else 0
        if index is not None:
            index.close()
    else:
        changed = plan.to_delete or plan.moved or plan.to_embed
        with PHASES.phase("rescan"):
            final_states = (store.paper_states() if store.exists() else {}) if changed \
                else states
        report.papers_total = sum(1 for s in final_states.values() if s.complete)
    report.seconds = time.perf_counter() - started
    return report


def _chunk_input(meta: dict, document: str) -> str:
    """What a chunk's vectors embed (as embedding_input, from the chunk's record)."""
    return document if meta.get("title_derived") else f"{meta.get('title', '')}. {document}"


def sync_multilingual(store: Store, encoder: Encoder, progress: Progress | None = None
                      ) -> tuple[int, int]:
    """Bring the sibling collection of multilingual vectors in line with the collection's
    chunks: a chunk gets one when the sibling lacks its id or holds another text for it (by the
    paper's content hash); sibling records whose chunk is gone are deleted. Each batch is its
    own upsert, so a killed run keeps what it embedded and the next one adds the rest.
    Returns (chunks embedded now, chunks with a multilingual vector)."""
    progress = progress or Progress()
    side = store.multilingual_store(encoder)
    held: dict[str, str] = {}
    if side.exists():
        for ids, metas, _ in side.chunk_pages(with_documents=False):
            held.update((i, str(m.get("content_hash", ""))) for i, m in zip(ids, metas,
                                                                           strict=True))
    wanted: dict[str, str] = {}
    todo: list[tuple[str, dict, str]] = []
    if store.exists():
        for ids, metas, documents in store.chunk_pages(with_documents=True):
            for chunk_id, meta, document in zip(ids, metas, documents, strict=True):
                wanted[chunk_id] = str(meta.get("content_hash", ""))
                if held.get(chunk_id) != wanted[chunk_id]:
                    # The chunk's filter fields, not the paper's text: that is in the collection.
                    todo.append((chunk_id, {k: v for k, v in meta.items() if k not in
                                            ("paper_text", "extra_json", CHUNK_TEXT_KEY)},
                                 document))
    stale = [i for i in held if i not in wanted]  # a changed chunk is simply overwritten
    if stale:
        side.delete_chunks(stale)
    if todo:
        progress.stage(f"Adding multilingual vectors to {len(todo)} chunks")
        progress.start(len(todo))
        side.collection(create=True)
        for start in range(0, len(todo), MULTILINGUAL_PER_BATCH):
            part = todo[start : start + MULTILINGUAL_PER_BATCH]
            vectors = encoder.embed([_chunk_input(meta, doc) for _, meta, doc in part])
            side.upsert([c for c, _, _ in part], vectors, None, [m for _, m, _ in part])
            pause_for_tests("multilingual-upserted")
            progress.advance(len(part))
        side.record_dimension(encoder.dimension)
        progress.finish()
    return len(todo), len(wanted)


def ingest_sources(store: Store, read: ReadReport | None, prune: bool = False,
                   rebuild: bool = False, progress: Progress | None = None,
                   only_if_empty: bool = False,
                   multilingual: Encoder | None = None) -> IngestReport:
    """Ingest parsed sources (parse with `read_sources` first, so bad input fails before
    anything is opened or written). `rebuild` re-embeds the whole collection (see `rebuild`).
    `only_if_empty` ingests nothing into a collection that holds papers once the lock is ours.
    `multilingual` (an encoder): the collection keeps a multilingual vector per chunk from now
    on; a collection that keeps them gets them for its new papers in every ingest."""
    read = read or ReadReport([], [])
    folder = local_dir(store.settings, store.name)
    # What a full disk leaves is told against these: the papers of the last complete ingest
    # (the snapshot that searches answer from until the next one), and those written since.
    before = (lexical.read_current(folder) or {}).get("papers")
    stored: list[str] = []
    stage = "rebuild" if rebuild else "papers"
    try:
        with collection_lock(folder, store.settings.lock_timeout), \
                writers_lease(store, exclusive=prune or rebuild) as others:
            finish_interrupted_rebuild(store)
            if only_if_empty and store.count():
                # A collection looks empty while its first ingest embeds its first batch; a
                # query that found it so (and would add the bundled seeds) must not add them to
                # it, and must read what that ingest wrote with a client that did not see it
                # empty.
                store.reopen()
                return IngestReport(collection=store.name)
            kept_by = store.multilingual_embedder()  # before a rebuild makes a new collection
            if rebuild:
                report = _rebuild(store, read.papers, progress)
            else:
                report = ingest_papers(store, read.papers, prune=prune, progress=progress,
                                       alone=not others, stored=stored)
            stage = "multilingual"
            _keep_multilingual(store, report, kept_by, multilingual, progress)
    except DiskFullError as exc:
        state = _after_full_disk(store.name, exc, before, len(set(stored)), stage,
                                 (lexical.read_current(folder) or {}).get("papers"))
        raise exc.with_state(state, "free space and run the ingest again") from None
    report.skipped_bad = len(read.skipped)
    report.records_read, report.without_abstract = read.records_read, read.without_abstract
    report.tallies = dict(read.tallies)
    if read.partial:  # papers of an earlier slice are still in the files, not gone from them
        report.not_in_sources = 0
    report.skipped_messages = [str(e) for e in read.skipped]
    return report


def _after_full_disk(name: str, exc: DiskFullError, before: int | None, stored: int,
                     stage: str, now: int | None) -> str:
    """What a full disk left of the collection, said truly: every write ragqa makes is whole
    or absent (a paper's chunk 0 last, snapshots switched atomically, a rebuild beside the
    collection), so the collection is intact unless Chroma itself was cut short mid-write
    (`exc.damaged`, see store.py)."""
    if exc.damaged:
        return (f"Chroma could not finish writing, and the collection {name!r} may be damaged "
                f"(it held {before or 0} papers before this ingest)")
    if stage == "multilingual":
        return (f"the collection {name!r} is intact ({now or 0} papers), but not all of its "
                "multilingual vectors were added")
    if stage == "rebuild":  # written beside the collection, swapped in only once whole
        return (f"the collection {name!r} is intact ({before or 0} papers); the rebuild did "
                "not finish")
    state = (f"the collection {name!r} is intact at its last complete ingest ({before} papers)"
             if before is not None else f"the collection {name!r} is intact (no ingest into it "
             "has completed yet)")
    if stored:
        state += f", with {stored} papers of this ingest stored whole"
    return state


@contextlib.contextmanager
def writers_lease(store: Store, exclusive: bool) -> Iterator[list]:
    """On a Chroma server, a lease among the collection's writers (journal.Leases); yields the
    other writers. This machine's collection lock already orders its own ingests: with the
    embedded store, no lease."""
    if not store.settings.uses_chroma_server:
        yield []
        return
    with Leases(store).held(exclusive) as others:
        yield others


def _keep_multilingual(store: Store, report: IngestReport, kept_by: str,
                       asked: Encoder | None, progress: Progress | None) -> None:
    """Add (asked) or keep in step (the collection keeps them) the multilingual vectors."""
    if not asked and not kept_by:
        return

    encoder = asked or make_multilingual_encoder(store.settings)
    if kept_by and kept_by != encoder.embedder_id:
        raise IndexMismatchError(
            f"collection {store.name!r} keeps multilingual vectors of {kept_by}, not "
            f"{encoder.embedder_id}; run `ragqa ingest --rebuild --multilingual`")
    if not store.exists():
        return
    store.mark_multilingual(encoder.embedder_id)
    started = time.perf_counter()
    with PHASES.phase("multilingual vectors"):
        report.multilingual_embedded, report.multilingual_chunks = sync_multilingual(
            store, encoder, progress)
    report.multilingual = True
    report.multilingual_seconds = time.perf_counter() - started


def _rebuild_store(store: Store) -> Store:
    return Store(store.settings, f"{store.name}{REBUILD_SUFFIX}", store.encoder,
                 check_name=False)  # a sibling's name: reserved to ragqa


def _rebuild(store: Store, papers: Sequence[Paper], progress: Progress | None) -> IngestReport:
    """Re-embed everything the collection holds (updated by `papers`) with the current embedder,
    into a side collection that replaces the old one only once complete: a failure or a kill
    part-way leaves the old collection as it was."""
    held = {p.paper_id: p for p in store.iter_papers(check=False)} if store.exists() else {}
    held.update({p.paper_id: p for p in keep_stored_ids(papers, held)})
    if not held:
        return IngestReport(collection=store.name)
    side = _rebuild_store(store)
    side.drop()  # what an earlier, interrupted rebuild left
    report = ingest_papers(side, list(held.values()), progress=progress, lexical_index=False)
    # The journal goes first: a reader that finds none keeps its snapshot until the new one
    # appears, then reads everything (it has a new id).
    Journal(store).drop()
    store.drop()
    _take_over(side, store)
    report.collection = store.name
    report.lexical_rebuilt = True
    return report


def _take_over(side: Store, store: Store) -> None:
    """Give the rebuilt side collection the collection's name, start its journal with every
    paper, and rebuild this client's snapshot from it."""
    side.rename(store.name)
    store.reset()
    Journal(store).append(p.paper_id for p in store.iter_papers())
    follow(store, locked=True)


def finish_interrupted_rebuild(store: Store) -> None:
    """A rebuild killed between dropping the old collection and renaming the new one left the
    complete new one under its side name: finish the swap."""
    side = _rebuild_store(store)
    if not store.exists() and side.exists():
        _take_over(side, store)


def ingest_paths(store: Store, paths: Sequence[Path], **options) -> IngestReport:
    return ingest_sources(store, read_sources(paths), **options)
