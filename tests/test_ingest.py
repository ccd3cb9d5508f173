"""Incremental, idempotent ingest: re-runs, edits, prunes, moves, rebuilds, and kill -9."""

from __future__ import annotations

import json
from pathlib import Path

import chromadb

from ragqa.config import load_settings
from ragqa.index import lexical
from ragqa.index.store import local_dir
from ragqa.sources import read_sources

from .conftest import SEEDS
from .helpers.ingest import _chunks, _consistent_paper_ids, _ingest


def test_reingest_changes_nothing_and_embeds_nothing(seeded, home):
    before = _chunks(home)
    report = _ingest(seeded, "--seeds")
    assert (report["added"], report["updated"], report["deleted"]) == (0, 0, 0)
    assert report["unchanged"] == 29 and report["chunks"] == 0
    assert report["lexical_rebuilt"] is False
    def dump(m: dict) -> str:
        return json.dumps(m, sort_keys=True)

    assert sorted(map(dump, _chunks(home))) == sorted(map(dump, before))


def test_edited_abstract_is_replaced_without_stale_chunks(ragqa, home, seeds_copy):
    _ingest(ragqa, str(seeds_copy))
    path = seeds_copy / "000_5a03819fc22e34a3.txt"
    old = read_sources([path]).papers[3]
    assert old.title == "Moshi-RAG"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("Moshi-RAG", "Moshi-RAG2"), encoding="utf-8")
    report = _ingest(ragqa, str(seeds_copy))
    assert report["updated"] + report["added"] == 1 and report["deleted"] + report["updated"] == 1
    ids = _consistent_paper_ids(home)
    assert old.paper_id not in ids and len(ids) == 29
    assert not [m for m in _chunks(home) if m["paper_id"] == old.paper_id]
    found = ragqa("search", "Moshi-RAG2 full-duplex retrieval", "--json")
    assert json.loads(found.stdout)["results"][0]["title"] == "Moshi-RAG2"


def test_record_with_own_id_edited_in_place(ragqa, home, tmp_path):
    source = tmp_path / "c.jsonl"
    rows = [{"id": f"p{i}", "title": f"Paper {i}", "abstract": f"Abstract number {i} about "
             "graph neural networks and message passing on molecules."} for i in range(3)]
    source.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    _ingest(ragqa, str(source))
    rows[1]["abstract"] = "A completely different abstract on speech recognition " * 40
    source.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    report = _ingest(ragqa, str(source))
    assert (report["updated"], report["added"], report["unchanged"]) == (1, 0, 2)
    chunks = [m for m in _chunks(home) if m["paper_id"] == "p1"]
    assert len(chunks) == chunks[0]["n_chunks"] > 1
    assert {m["content_hash"] for m in chunks} == {chunks[0]["content_hash"]}
    assert _consistent_paper_ids(home) == {"p0", "p1", "p2"}


def test_removed_abstract_kept_until_prune(ragqa, home, seeds_copy):
    _ingest(ragqa, str(seeds_copy))
    path = seeds_copy / "001_f2883c612296ae37.txt"
    blocks = path.read_text(encoding="utf-8").split("\n\n")
    removed = read_sources([path]).papers[-1]
    path.write_text("\n\n".join(blocks[:-1]) + "\n", encoding="utf-8")
    report = _ingest(ragqa, str(seeds_copy))
    assert report["not_in_sources"] == 1 and removed.paper_id in _consistent_paper_ids(home)
    report = _ingest(ragqa, str(seeds_copy), "--prune")
    assert report["deleted"] == 1
    ids = _consistent_paper_ids(home)
    assert removed.paper_id not in ids and len(ids) == 28


def test_moved_abstract_keeps_its_vectors_and_gets_its_new_source(ragqa, home, seeds_copy):
    _ingest(ragqa, str(seeds_copy))
    path = seeds_copy / "000_5a03819fc22e34a3.txt"
    header, *blocks = path.read_text(encoding="utf-8").strip().split("\n\n")
    path.write_text("\n\n".join([header, blocks[-1], *blocks[:-1]]) + "\n", encoding="utf-8")
    report = _ingest(ragqa, str(seeds_copy))
    assert report["chunks"] == 0 and report["moved"] == 10
    first = read_sources([path]).papers[0]
    shown = json.loads(ragqa("show", first.paper_id, "--json").stdout)
    assert shown["source"] == "000_5a03819fc22e34a3.txt#1" and shown["title"] == "AudioChat"


def _abstracts(path: Path, first: int, n: int) -> Path:
    """n JSONL abstracts without ids (their ids hash the text), numbered from `first`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"title": f"Paper {i}", "abstract": f"Abstract {i} on "
                                        "spectral graph methods for molecules."}) + "\n"
                            for i in range(first, first + n)), encoding="utf-8")
    return path


def test_files_of_the_same_name_in_two_folders_both_stay(ragqa, home, tmp_path):
    """Each conference's corpus.jsonl: ingesting the second must not take the first's papers
    for earlier versions of its own (same file name, same positions)."""
    one = _abstracts(tmp_path / "icml" / "corpus.jsonl", 0, 4)
    two = _abstracts(tmp_path / "iclr" / "corpus.jsonl", 100, 3)
    first = {p.paper_id for p in read_sources([one]).papers}
    second = {p.paper_id for p in read_sources([two]).papers}
    _ingest(ragqa, str(one))
    report = _ingest(ragqa, str(two))
    assert (report["added"], report["deleted"], report["papers_total"]) == (3, 0, 7)
    assert _consistent_paper_ids(home) == first | second
    again = _ingest(ragqa, str(one), "--prune")  # prunes only what `one` no longer holds
    assert (again["unchanged"], again["deleted"], again["papers_total"]) == (4, 0, 7)


def test_a_collection_without_paths_is_matched_by_file_name(ragqa, home, tmp_path):
    """Collections written before ragqa recorded paths: an abstract edited in place still
    replaces its earlier version, and the next ingest records the paths."""
    source = _abstracts(tmp_path / "papers.jsonl", 0, 3)
    _ingest(ragqa, str(source))
    client = chromadb.PersistentClient(path=str(home / "chroma"),
                                       settings=chromadb.config.Settings(anonymized_telemetry=False))
    collection = client.get_collection("ragqa_default")
    got = collection.get(include=["metadatas"])
    collection.update(ids=got["ids"], metadatas=[{**m, "source_path": ""}
                                                 for m in got["metadatas"]])
    del client
    lines = source.read_text(encoding="utf-8").splitlines()
    lines[1] = json.dumps({"title": "Paper 1", "abstract": "Edited: speech recognition."})
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = _ingest(ragqa, str(source))
    assert (report["added"], report["deleted"], report["unchanged"]) == (1, 1, 2)
    assert report["moved"] == 0 and len(_consistent_paper_ids(home)) == 3
    assert {m["source_path"] for m in _chunks(home)} == {str(source.resolve())}


def test_other_embedder_is_a_clear_error_and_rebuild_fixes_it(seeded, home):
    # Pretend the collection was built by another embedder.
    client = chromadb.PersistentClient(path=str(home / "chroma"),
                                       settings=chromadb.config.Settings(anonymized_telemetry=False))
    coll = client.get_collection("ragqa_default")
    meta = {k: v for k, v in coll.metadata.items() if not k.startswith("hnsw:")}
    coll.modify(metadata={**meta, "ragqa_embedder": "openai:text-embedding-3-small@x"})
    del client
    result = seeded("search", "full-duplex speech")
    assert result.exit_code == 2
    assert "ragqa ingest --rebuild" in result.stderr and "Traceback" not in result.output
    report = _ingest(seeded, "--rebuild")
    assert report["added"] == 29
    assert seeded("search", "full-duplex speech").exit_code == 0


def test_bm25_snapshot_repaired_when_it_disagrees_with_chroma(seeded, home):
    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent"})
    folder = local_dir(settings, "default")
    (folder / lexical.CURRENT).unlink()  # as if killed after the upsert, before the rebuild
    report = _ingest(seeded, "--seeds")
    assert report["lexical_rebuilt"] is True and report["chunks"] == 0
    assert len(_consistent_paper_ids(home)) == 29


def test_abstract_removed_from_the_middle_is_kept_until_prune(ragqa, home, seeds_copy):
    _ingest(ragqa, str(seeds_copy))
    path = seeds_copy / "000_5a03819fc22e34a3.txt"
    header, *blocks = path.read_text(encoding="utf-8").strip().split("\n\n")
    removed = read_sources([path]).papers[4]
    path.write_text("\n\n".join([header, *blocks[:4], *blocks[5:]]) + "\n", encoding="utf-8")
    report = _ingest(ragqa, str(seeds_copy))
    assert report["deleted"] == 0 and report["not_in_sources"] == 1
    assert removed.paper_id in _consistent_paper_ids(home)
    moved = json.loads(ragqa("show", read_sources([path]).papers[4].paper_id, "--json").stdout)
    assert moved["source"].endswith("#5") and moved["line"] == read_sources([path]).papers[4].line


def test_rebuild_with_a_path_keeps_the_other_papers(seeded, home, tmp_path):
    extra = tmp_path / "extra.jsonl"
    extra.write_text(json.dumps({"id": "e1", "title": "Speech codecs", "abstract":
                                 "We study neural speech codecs for full-duplex dialogue."})
                     + "\n", encoding="utf-8")
    report = _ingest(seeded, "--rebuild", str(extra))
    assert report["papers_total"] == 30
    assert len(_consistent_paper_ids(home)) == 30


def test_failed_rebuild_leaves_the_collection_intact(seeded, home):
    failed = seeded("ingest", "--rebuild", "--quiet", RAGQA_EMBED_PROVIDER="openai",
                    RAGQA_EMBED_BASE_URL="http://127.0.0.1:9/v1", RAGQA_LLM_RETRIES="0")
    assert failed.exit_code == 1 and "embedding server failed" in failed.stderr
    assert len(_consistent_paper_ids(home)) == 29
    found = json.loads(seeded("search", "full-duplex speech", "--json").stdout)["results"]
    assert {r["title"] for r in found[:2]} == {"Moshi-RAG", "τ-Voice"}


# ---------------------------------------------------------------- where the texts live

def _client(home: Path):
    return chromadb.PersistentClient(path=str(home / "chroma"),
                                     settings=chromadb.config.Settings(anonymized_telemetry=False))


def test_chunk_texts_are_in_the_metadata_and_out_of_chromas_text_index(seeded, home):
    """Chroma indexes documents for full-text search, which ragqa never uses: the texts are
    kept in the metadata, and each paper's chunks still join up to its abstract."""
    collection = _client(home).get_collection("ragqa_default")
    got = collection.get(include=["metadatas", "documents"])
    assert set(got["documents"]) == {None}
    texts: dict[str, list[tuple[int, str]]] = {}
    for meta in got["metadatas"]:
        texts.setdefault(meta["paper_id"], []).append((meta["chunk_index"], meta["chunk_text"]))
    for paper in read_sources([SEEDS]).papers:
        chunks = [text for _, text in sorted(texts[paper.paper_id])]
        assert " ".join(chunks).split() == paper.text.split()
    side = _client(home).get_collection("ragqa_default__multi").get(
        include=["metadatas", "documents"])
    assert set(side["documents"]) == {None}
    assert not [m for m in side["metadatas"] if "chunk_text" in m]


def test_a_collection_with_texts_in_chromas_documents_still_reads(seeded, home):
    """Collections written before the texts moved to the metadata (ragqa_schema 1)."""
    collection = _client(home).get_collection("ragqa_default")
    got = collection.get(include=["metadatas", "documents", "embeddings"])
    collection.update(ids=got["ids"], embeddings=got["embeddings"],
                      documents=[m["chunk_text"] for m in got["metadatas"]],
                      metadatas=[{"chunk_text": None} for _ in got["ids"]])  # None: key gone
    old = collection.get(include=["metadatas", "documents"])
    del collection
    assert None not in old["documents"] and not [m for m in old["metadatas"]
                                                 if "chunk_text" in m]
    snapshot = local_dir(load_settings({"RAGQA_HOME": str(home),
                                        "RAGQA_ENV_FILE": "/nonexistent"}), "default")
    (snapshot / lexical.CURRENT).unlink()  # rebuilt from Chroma's texts by the next ingest
    report = _ingest(seeded, str(SEEDS))
    assert (report["unchanged"], report["added"], report["lexical_rebuilt"]) == (29, 0, True)
    assert len(_consistent_paper_ids(home)) == 29
    rebuilt = {p.paper_id: p.text for p in lexical.open_current(snapshot).all_papers()}
    assert rebuilt == {p.paper_id: p.text for p in read_sources([SEEDS]).papers}
    moshi = next(p for p in read_sources([SEEDS]).papers if p.title == "Moshi-RAG")
    shown = json.loads(seeded("show", moshi.paper_id, "--json").stdout)
    assert shown["text"] == moshi.text
    found = json.loads(seeded("search", "full-duplex speech", "--json").stdout)["results"]
    assert {r["title"] for r in found[:2]} == {"Moshi-RAG", "τ-Voice"}
    assert all(r["best_sentence"] for r in found)
