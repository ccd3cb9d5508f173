"""The Chroma side: client, collections, and what each collection holds.

Chroma is the source of truth. Every chunk carries its paper's metadata; chunk 0 also carries
the paper's full text, so that everything else (the BM25 index, `ragqa papers`) can be rebuilt
from Chroma alone, on any machine that reaches the same Chroma server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragqa.errors import (
    DiskFullError,
    IndexMismatchError,
    ServiceError,
    StoreError,
    free_bytes,
    is_disk_full,
)
from ragqa.sources.paper import Paper
from ragqa.sources.select import category_key, split_categories

if TYPE_CHECKING:
    from ragqa.config import Settings
    from ragqa.models import Encoder

# 2: a chunk's text is in its metadata (CHUNK_TEXT_KEY), not in Chroma's document field.
# Chroma indexes documents for full-text search (trigrams in SQLite): ragqa never searches that
# way, and the index cost 60 % of every upsert's time and a third of the SQLite file. Schema 1
# collections (text in the documents) are read as before.
SCHEMA_VERSION = 2
CHUNK_TEXT_KEY = "chunk_text"
# The sibling collection that holds a second vector per chunk, in the multilingual embedder's
# space (same chunk ids; Chroma keeps one embedding per record). Never listed as a collection.
MULTILINGUAL_SUFFIX = "__multi"
MULTILINGUAL_KEY = "ragqa_multilingual"  # in the main collection's metadata: its embedder id
PAGE = 2000  # records per Chroma get(): bounded memory on large collections
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,55}[A-Za-z0-9]$|^[A-Za-z0-9]$")


# ragqa's sibling collections are NAME + "__" + a role (__multi, __journal, __writers,
# __rebuild). A user's name holds no "__", so that no name reaches a sibling: `-c default__multi`
# once opened default's multilingual vectors, and `--rebuild` destroyed them (issue 49).
RESERVED = "__"


def validate_collection_name(name: str) -> str:
    if not _NAME.match(name) or ".." in name:
        raise ValueError(
            f"collection name {name!r} is not valid: use 1-57 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit"
        )
    if RESERVED in name:
        raise ValueError(
            f"collection name {name!r} is not valid: '{RESERVED}' is reserved for the "
            "collections ragqa keeps beside each collection (NAME__multi, NAME__journal, ...)"
        )
    return name


def local_dir(settings: Settings, collection: str) -> Path:
    """Where the derived files of a collection live (BM25 index, lock), on this machine."""
    if settings.uses_chroma_server:
        place = f"server-{settings.chroma_host}-{settings.chroma_port}"
    else:
        place = "local"
    return settings.home / "indexes" / place / collection


@dataclass
class PaperState:
    """What Chroma holds of one paper, read from its chunks' metadata. Chunk 0 carries the
    paper-level fields; a paper without it, or with a chunk count or hash that disagrees, was
    left half-written (a killed ingest) and is not complete."""

    content_hash: str = ""
    n_chunks: int = 0
    source: str = ""
    line: int = 0
    source_path: str = ""  # "" in collections written before ragqa recorded it
    chunk_hashes: set[str] = field(default_factory=set)
    chunks_seen: int = 0

    @property
    def complete(self) -> bool:
        return (self.n_chunks > 0 and self.chunks_seen == self.n_chunks
                and self.chunk_hashes == {self.content_hash})


class _RagqaEmbeddingFunction:
    """Passed to every collection so that Chroma never falls back to (and downloads) its default
    model. ragqa always sends vectors it computed itself; this only embeds if Chroma asks."""

    def __init__(self, encoder: Encoder | None) -> None:
        self._encoder = encoder

    def __call__(self, input: Sequence[str]) -> list[np.ndarray]:  # noqa: A002 (Chroma's name)
        if self._encoder is None:
            raise StoreError("ragqa collections must be searched through ragqa")
        return list(self._encoder.embed(list(input)))

    def embed_query(self, input: Sequence[str]) -> list[np.ndarray]:  # noqa: A002
        return self(input)

    @staticmethod
    def name() -> str:
        return "ragqa"

    def get_config(self) -> dict[str, Any]:
        return {"embedder": self._encoder.embedder_id if self._encoder else ""}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> _RagqaEmbeddingFunction:
        # Chroma rebuilds the function named in a collection's config when it lists collections;
        # ragqa always passes its own, so the rebuilt one only has to exist, never to embed.
        return _RagqaEmbeddingFunction(None)

    def is_legacy(self) -> bool:
        return False

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine"]


def _chroma_settings():
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False, allow_reset=False)


def open_client(settings: Settings):
    import chromadb
    from chromadb.utils.embedding_functions import known_embedding_functions

    known_embedding_functions.setdefault("ragqa", _RagqaEmbeddingFunction)

    try:
        if settings.uses_chroma_server:
            headers = {}
            if settings.chroma_token:
                headers["Authorization"] = f"Bearer {settings.chroma_token.reveal()}"
            client = chromadb.HttpClient(
                host=settings.chroma_host, port=settings.chroma_port, ssl=settings.chroma_ssl,
                headers=headers, settings=_chroma_settings(),
            )
            client.heartbeat()
            return client
        path = settings.home / "chroma"
        path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=_chroma_settings())
    except StoreError:
        raise
    except Exception as exc:  # chromadb raises many kinds; all mean "store unavailable"
        if not settings.uses_chroma_server:
            # chromadb keeps the client of a path even when opening it failed (a full disk):
            # without this, every later open in this process would get that broken one.
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient.clear_system_cache()
        raise chroma_failure(settings, "", exc) from None


# What chromadb 1.5.9 raises when its disk fills (measured on a small tmpfs, embedded store):
# - chromadb.errors.InternalError "Query error: Database error: error returned from database:
#   (code: 13) database or disk is full": SQLite refused the write and rolled it back; the
#   collection is as it was. Opening a store on a full disk fails the same way (it writes).
# - chromadb.errors.InternalError "Error in compaction: Failed to apply logs to the metadata
#   segment" or "... to the hnsw segment writer": the records are in Chroma's log, and applying
#   them to the collection's indexes ran out of space. The error does not say why, hence the
#   free space is measured. The HNSW index files are rewritten in place: one cut short (its
#   index_metadata.pickle left empty) makes every later read of the collection fail ("Error
#   deserializing pickle file"), even once space is freed. Hence `Store.upsert` refuses a
#   write that may not fit, before Chroma starts it (`room_needed`).
# A Chroma server's full disk reaches the client as the same texts, in an HTTP error.
_COMPACTION_TEXTS = ("error in compaction", "failed to apply logs", "backfill")
# Chroma writes its HNSW index every HNSW_SYNC records (hnsw:sync_threshold, default 1000),
# in place, and grows its file in blocks of about as many records.
HNSW_SYNC = 1000
# Free space kept beyond a write's own estimate: what Chroma writes besides the records (its
# SQLite rollback journal, a collection's metadata, the journal's and leases' records). Also
# the free space under which a compaction error is taken for a full disk.
DISK_RESERVE = 2 << 20


def room_needed(records: int, dimension: int, payload: int) -> int:
    """Bytes an upsert of `records` vectors of `dimension` floats, whose metadata and texts
    take `payload` bytes as JSON, may need on the embedded store's disk. Measured: SQLite keeps
    each record about four times over (Chroma's log, the metadata table and its indexes); an
    HNSW write may add up to HNSW_SYNC + records vectors with their links."""
    vector = 4 * dimension + 512  # the floats, and the row or the links beside them
    return DISK_RESERVE + 5 * (records * vector + payload) + (HNSW_SYNC + records) * vector


def chroma_failure(settings: Settings, what: str, exc: Exception) -> ServiceError:
    """A Chroma failure as the error to raise: DiskFullError when the disk is full (see above),
    else StoreError saying what was being done (`what`, "" for opening the store)."""
    text = str(exc).lower()
    if settings.uses_chroma_server:
        if is_disk_full(exc):
            return DiskFullError(server=f"{settings.chroma_host}:{settings.chroma_port}")
    else:
        folder = settings.home / "chroma"
        free = free_bytes(folder)
        low = free is not None and free < DISK_RESERVE
        compaction = any(marker in text for marker in _COMPACTION_TEXTS)
        if is_disk_full(exc) or (compaction and low):
            # Only a cut-short HNSW write can leave the collection unreadable (see above).
            return DiskFullError(folder, free, damaged=compaction and "hnsw" in text)
    message = describe_chroma_error(settings, exc)
    return StoreError(f"{what}: {message}" if what else message)


def describe_chroma_error(settings: Settings, exc: Exception) -> str:
    where = (f"Chroma server at {settings.chroma_host}:{settings.chroma_port}"
             if settings.uses_chroma_server else f"Chroma store at {settings.home / 'chroma'}")
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    token = settings.chroma_token.reveal()
    if token:
        detail = detail.replace(token, "***")
    return f"{where} failed: {detail[:300]}"


class Store:
    """One ragqa collection in Chroma."""

    def __init__(self, settings: Settings, collection: str, encoder: Encoder,
                 check_name: bool = True) -> None:
        self.settings = settings
        # A sibling's name (NAME__multi) may pass the length users' names are held to.
        self.name = validate_collection_name(collection) if check_name else collection
        self.encoder = encoder
        self._client = open_client(settings)
        self._collection = None

    @property
    def client(self):
        """The Chroma client (the journal and the leases are sibling collections of it)."""
        return self._client

    @property
    def chroma_name(self) -> str:
        return f"ragqa_{self.name}"

    def call(self, what: str, fn, *args, **kwargs):
        """A Chroma call whose failure becomes one StoreError saying what was being done (a
        DiskFullError when the disk is full)."""
        try:
            return fn(*args, **kwargs)
        except (StoreError, IndexMismatchError, DiskFullError):
            raise
        except Exception as exc:
            raise chroma_failure(self.settings, what, exc) from None

    def exists(self) -> bool:
        if self._collection is not None:
            return True
        from chromadb.errors import NotFoundError

        try:
            self._client.get_collection(self.chroma_name,
                                        embedding_function=_RagqaEmbeddingFunction(self.encoder))
            return True
        except NotFoundError:
            return False
        except Exception as exc:
            raise chroma_failure(self.settings, "", exc) from None

    def collection(self, create: bool = False, check: bool = True):
        """The Chroma collection; `check=False` skips the embedder check, for reading the papers
        out of a collection that is about to be rebuilt with another embedder."""
        if self._collection is not None:
            return self._collection
        ef = _RagqaEmbeddingFunction(self.encoder)
        if create:
            metadata = {"hnsw:space": "cosine", "ragqa_schema": SCHEMA_VERSION,
                        "ragqa_embedder": self.encoder.embedder_id}
            coll = self.call("creating the collection", self._client.get_or_create_collection,
                              name=self.chroma_name, metadata=metadata, embedding_function=ef)
        else:
            coll = self.call("opening the collection", self._client.get_collection,
                              name=self.chroma_name, embedding_function=ef)
        if not check:
            return coll
        self._check_embedder(coll.metadata or {})
        self._collection = coll
        return coll

    def _check_embedder(self, metadata: dict) -> None:
        built_by = metadata.get("ragqa_embedder")
        if built_by and built_by != self.encoder.embedder_id:
            raise IndexMismatchError(
                f"collection {self.name!r} was built with {built_by}, not "
                f"{self.encoder.embedder_id}; run `ragqa ingest --rebuild` to rebuild it"
            )
        built_dim = metadata.get("ragqa_dim")
        if built_dim and self.encoder.dimension and int(built_dim) != self.encoder.dimension:
            raise IndexMismatchError(
                f"collection {self.name!r} holds {built_dim}-dimensional vectors, the embedder "
                f"gives {self.encoder.dimension}; run `ragqa ingest --rebuild`"
            )

    def record_dimension(self, dimension: int) -> None:
        coll = self.collection()
        if (coll.metadata or {}).get("ragqa_dim") == dimension:
            return
        metadata = {k: v for k, v in (coll.metadata or {}).items() if not k.startswith("hnsw:")}
        self.call("recording the dimension", coll.modify, metadata={**metadata,
                                                                    "ragqa_dim": dimension})

    # ------------------------------------------------------------ multilingual vectors

    def multilingual_embedder(self) -> str:
        """The multilingual embedder this collection keeps second vectors of ("" if none)."""
        if not self.exists():
            return ""
        return str((self.collection(check=False).metadata or {}).get(MULTILINGUAL_KEY, ""))

    def mark_multilingual(self, embedder_id: str) -> None:
        """Record that this collection keeps multilingual vectors: every later ingest keeps
        them in step with its papers."""
        coll = self.collection(create=True)
        if (coll.metadata or {}).get(MULTILINGUAL_KEY) == embedder_id:
            return
        metadata = {k: v for k, v in (coll.metadata or {}).items() if not k.startswith("hnsw:")}
        self.call("recording the multilingual embedder", coll.modify,
                   metadata={**metadata, MULTILINGUAL_KEY: embedder_id})

    def multilingual_store(self, encoder: Encoder) -> Store:
        """The sibling collection of this one's multilingual vectors."""
        return Store(self.settings, f"{self.name}{MULTILINGUAL_SUFFIX}", encoder,
                     check_name=False)

    def chunk_pages(self, with_documents: bool) -> Iterator[tuple[list[str], list[dict],
                                                                   list[str]]]:
        """(ids, metadatas, chunk texts) of every chunk, a page at a time (no texts unless
        `with_documents`)."""
        include = ["metadatas", "documents"] if with_documents else ["metadatas"]
        for page in self._pages(None, include):
            yield page["ids"], page["metadatas"], (_texts(page) if with_documents else [])

    def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        coll = self.collection()
        for start in range(0, len(chunk_ids), 500):
            self.call("deleting chunks", coll.delete, ids=list(chunk_ids[start : start + 500]))

    def reset(self) -> None:
        """Forget the cached collection handle (after a rename or drop by another Store)."""
        self._collection = None

    def reopen(self) -> None:
        """A new client, for a collection another process wrote since this one read it: embedded
        Chroma keeps, per client, what it read of a collection and does not see that process's
        writes (a collection it counted while empty then fails every query: "Nothing found on
        disk"). A Chroma server is shared state, and needs nothing."""
        if not self.settings.uses_chroma_server:
            from chromadb.api.shared_system_client import SharedSystemClient

            SharedSystemClient.clear_system_cache()  # or the next client is the same one
            self._client = open_client(self.settings)
        self._collection = None

    def drop(self) -> None:
        if self.exists():
            self.call("deleting the collection", self._client.delete_collection, self.chroma_name)
        self._collection = None

    def count(self) -> int:
        if not self.exists():
            return 0
        return self.call("counting", self.collection().count)

    # ------------------------------------------------------------ reading

    def _pages(self, where: dict | None, include: list[str], check: bool = True
               ) -> Iterator[dict]:
        coll = self.collection(check=check)
        offset = 0
        while True:
            page = self.call("reading the collection", coll.get, where=where, include=include,
                              limit=PAGE, offset=offset)
            if not page["ids"]:
                return
            yield page
            offset += len(page["ids"])

    def paper_states(self) -> dict[str, PaperState]:
        """Every paper in the collection, to diff against the sources."""
        states: dict[str, PaperState] = {}
        for page in self._pages(None, ["metadatas"]):
            for meta in page["metadatas"]:
                state = states.setdefault(str(meta["paper_id"]), PaperState())
                state.chunk_hashes.add(str(meta["content_hash"]))
                state.chunks_seen += 1
                if meta.get("chunk_index") == 0:
                    state.content_hash = str(meta["content_hash"])
                    state.n_chunks = int(meta["n_chunks"])
                    state.source = str(meta["source"])
                    state.line = int(meta.get("line", 0))
                    state.source_path = str(meta.get("source_path", ""))
        return states

    def iter_papers(self, check: bool = True) -> Iterator[Paper]:
        """Every paper, rebuilt from its chunk 0."""
        for page in self._pages({"chunk_index": 0}, ["metadatas", "documents"], check=check):
            for meta, document in zip(page["metadatas"], _texts(page), strict=True):
                yield paper_from_metadata(meta, document)

    def papers_by_id(self, paper_ids: Sequence[str]) -> dict[str, Paper]:
        """The papers of these ids that the collection holds whole (their chunk 0 is written
        last), rebuilt from their chunk 0."""
        found: dict[str, Paper] = {}
        ids = sorted(set(paper_ids))
        for start in range(0, len(ids), 1000):
            got = self.call("reading papers", self.collection().get,
                             ids=[f"{pid}::0" for pid in ids[start : start + 1000]],
                             include=["metadatas", "documents"])
            for meta, document in zip(got["metadatas"], _texts(got), strict=True):
                paper = paper_from_metadata(meta, document)
                found[paper.paper_id] = paper
        return found

    def sample_vectors(self, paper_ids: Sequence[str], n: int, seed: int = 0) -> np.ndarray:
        """Chunk-0 vectors of up to n papers drawn at random (seeded: the same collection gives
        the same sample)."""
        rng = np.random.default_rng(seed)
        ids = sorted(paper_ids)
        chosen = rng.choice(len(ids), size=min(n, len(ids)), replace=False) if ids else []
        got = self.call("reading vectors", self.collection().get,
                         ids=[f"{ids[i]}::0" for i in chosen], include=["embeddings"])
        return np.asarray(got["embeddings"], dtype=np.float32)

    def paper_vectors(self, paper_ids: Sequence[str]) -> np.ndarray:
        """One vector per paper (its chunk 0), in the order given."""
        coll = self.collection()
        out = np.zeros((len(paper_ids), self.encoder.dimension or 0), dtype=np.float32)
        for start in range(0, len(paper_ids), 1000):
            batch = [f"{pid}::0" for pid in paper_ids[start : start + 1000]]
            got = self.call("reading vectors", coll.get, ids=batch, include=["embeddings"])
            found = dict(zip(got["ids"], got["embeddings"], strict=True))
            rows = np.asarray([found[i] for i in batch], dtype=np.float32)
            if out.shape[1] != rows.shape[1]:
                out = np.zeros((len(paper_ids), rows.shape[1]), dtype=np.float32)
            out[start : start + len(batch)] = rows
        return out

    def query(self, vector: np.ndarray, n: int, where: dict | None = None
              ) -> list[tuple[str, str, float]]:
        """The n nearest chunks as (chunk id, paper id, cosine similarity), nearest first.
        Only ids and distances come back: texts and metadata would multiply the time a search
        takes, and only the few chunks shown are read (`documents`)."""
        return self.query_many(vector[None, :], n, where)[0]

    def query_many(self, vectors: np.ndarray, n: int, where: dict | None = None
                   ) -> list[list[tuple[str, str, float]]]:
        """`query` for several vectors in one call (a question's sub-queries)."""
        result = self.call("searching", self.collection().query,
                            query_embeddings=[v.tolist() for v in vectors], n_results=n,
                            where=where, include=["distances"])
        return [[(chunk_id, chunk_id.rsplit("::", 1)[0], 1.0 - float(dist))
                 for chunk_id, dist in zip(ids, distances, strict=True)]
                for ids, distances in zip(result["ids"], result["distances"], strict=True)]

    def documents(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """Chunk id -> chunk text."""
        if not chunk_ids:
            return {}
        got = self.call("reading chunks", self.collection().get, ids=list(chunk_ids),
                         include=["metadatas", "documents"])
        return dict(zip(got["ids"], _texts(got), strict=True))

    # ------------------------------------------------------------ writing

    def upsert(self, ids: list[str], vectors: np.ndarray, documents: list[str] | None,
               metadatas: list[dict]) -> None:
        """Write chunks; `documents`, their texts (kept under CHUNK_TEXT_KEY; None: no text, as
        the multilingual sibling, whose texts are in the collection)."""
        coll = self.collection(create=True)
        self._check_room(vectors, documents, metadatas)
        limit = self.call("writing chunks", self._client.get_max_batch_size)
        # Chroma takes at most `limit` records a call. Chunk 0, which says how many chunks its
        # paper has, goes in the last call: a paper cut short by a kill between calls then
        # lacks it, and the next ingest sees the paper as half-written and redoes it.
        order = sorted(range(len(ids)), key=lambda i: ids[i].endswith("::0"))
        for start in range(0, len(order), limit):
            part = order[start : start + limit]
            self.call("writing chunks", coll.upsert, ids=[ids[i] for i in part],
                       embeddings=vectors[part],
                       metadatas=[metadatas[i] if documents is None else
                                  {**metadatas[i], CHUNK_TEXT_KEY: documents[i]} for i in part])

    def _check_room(self, vectors: np.ndarray, documents: list[str] | None,
                    metadatas: list[dict]) -> None:
        """Refuse an upsert the embedded store's disk may not hold (`room_needed`): Chroma
        cut short mid-write can lose the whole collection, refused beforehand it keeps all."""
        if self.settings.uses_chroma_server or not len(metadatas):
            return  # a server's disk is its own; it reports a full one itself
        folder = self.settings.home / "chroma"
        free = free_bytes(folder)
        if free is None:
            return
        # ASCII JSON: at least as long as the UTF-8 bytes SQLite keeps.
        payload = sum(len(json.dumps(m)) for m in metadatas)
        payload += sum(len(d.encode()) for d in documents or [])
        needed = room_needed(len(metadatas), int(np.shape(vectors)[-1]), payload)
        if free < needed:
            raise DiskFullError(folder, free, needed=needed)

    def delete_papers(self, paper_ids: Sequence[str]) -> None:
        coll = self.collection()
        for start in range(0, len(paper_ids), 500):
            batch = list(paper_ids[start : start + 500])
            self.call("deleting papers", coll.delete, where={"paper_id": {"$in": batch}})

    def update_places(self, moves: dict[str, tuple[str, int, str]]) -> None:
        """Papers whose text is unchanged but whose place (source, line, source_path) moved:
        their chunks' metadata is rewritten, their vectors kept."""
        coll = self.collection()
        ids = sorted(moves)
        for start in range(0, len(ids), 500):
            got = self.call("reading chunks", coll.get, include=["metadatas"],
                             where={"paper_id": {"$in": ids[start : start + 500]}})
            metas = [{**m, **dict(zip(("source", "line", "source_path"), moves[m["paper_id"]],
                                          strict=True))}
                     for m in got["metadatas"]]
            self.call("updating places", coll.update, ids=got["ids"], metadatas=metas)

    def rename(self, new_name: str) -> None:
        """Give this collection another ragqa name (the last step of a rebuild)."""
        coll = self.collection(check=False)
        self.call("renaming the collection", coll.modify, name=f"ragqa_{new_name}")
        self._collection = None


def chunk_metadata(paper: Paper, index: int, n_chunks: int) -> dict:
    meta: dict[str, Any] = {
        "paper_id": paper.paper_id, "title": paper.title, "source": paper.source,
        "venue": paper.venue, "venue_key": paper.venue.lower(), "authors": paper.authors,
        "url": paper.url, "content_hash": paper.content_hash, "chunk_index": index,
        "n_chunks": n_chunks, "title_derived": paper.title_derived, "line": paper.line,
        "source_path": paper.source_path,
    }
    if paper.year is not None:
        meta["year"] = paper.year
    if paper.extra.get("venue_label"):  # `--venue` matches the whole label too
        meta["venue_label_key"] = str(paper.extra["venue_label"]).lower()
    for category in split_categories(paper.extra.get("categories", "")):
        meta[category_key(category)] = True  # `--category cs.CL` (ragqa.sources.select)
    if index == 0:
        if n_chunks > 1:  # a paper of one chunk is its own document: don't store it twice
            meta["paper_text"] = paper.text
        meta["extra_json"] = json.dumps(paper.extra, ensure_ascii=False)
    return meta


def _texts(page: dict) -> list[str]:
    """The chunk texts of a Chroma get() result read with metadatas and documents: in the
    metadata since schema 2, in the documents before."""
    documents = page.get("documents") or [None] * len(page["ids"])
    return [str(meta.get(CHUNK_TEXT_KEY, document or "")) if meta else str(document or "")
            for meta, document in zip(page["metadatas"], documents, strict=True)]


def paper_from_metadata(meta: dict, document: str | None = None) -> Paper:
    """The paper a chunk-0 record describes (`document` is that chunk's text)."""
    return Paper(
        paper_id=str(meta["paper_id"]), title=str(meta.get("title", "")),
        text=str(meta.get("paper_text", document or "")), source=str(meta.get("source", "")),
        authors=str(meta.get("authors", "")), venue=str(meta.get("venue", "")),
        year=meta.get("year"), url=str(meta.get("url", "")),
        title_derived=bool(meta.get("title_derived", False)), line=int(meta.get("line", 0)),
        extra=json.loads(meta.get("extra_json") or "{}"),
        source_path=str(meta.get("source_path", "")),
    )
