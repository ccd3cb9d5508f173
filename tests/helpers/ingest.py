"""Ingest through the CLI, the checks that Chroma and the BM25 snapshot agree, and the
environment that embeds through the loopback server (RAGQA_EMBED_PROVIDER=openai)."""

from __future__ import annotations

import json
from pathlib import Path

import chromadb

from ragqa.config import load_settings
from ragqa.index import lexical
from ragqa.index.store import local_dir


def _ingest(ragqa, *args: str) -> dict:
    result = ragqa("ingest", *args, "--quiet", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _chunks(home: Path, collection: str = "default", port: int | None = None) -> list[dict]:
    """Every chunk's metadata, from the embedded store, or from a Chroma server on `port`."""
    settings = chromadb.config.Settings(anonymized_telemetry=False)
    client = (chromadb.HttpClient(host="127.0.0.1", port=port, settings=settings) if port
              else chromadb.PersistentClient(path=str(home / "chroma"), settings=settings))
    return client.get_collection(f"ragqa_{collection}").get(include=["metadatas"])["metadatas"]


def _consistent_paper_ids(home: Path, collection: str = "default", port: int | None = None
                          ) -> set[str]:
    """The papers of the collection, after checking Chroma and the BM25 snapshot agree and no
    paper has missing or duplicate chunks (`port`: a Chroma server on 127.0.0.1)."""
    metas = _chunks(home, collection, port)
    by_paper: dict[str, list[int]] = {}
    for meta in metas:
        by_paper.setdefault(meta["paper_id"], []).append(meta["chunk_index"])
        assert meta["n_chunks"] >= 1
    for pid, indices in by_paper.items():
        n = next(m["n_chunks"] for m in metas if m["paper_id"] == pid)
        assert sorted(indices) == list(range(n)), f"paper {pid} has chunks {indices} of {n}"
    server = {"RAGQA_CHROMA_HOST": "127.0.0.1", "RAGQA_CHROMA_PORT": str(port)} if port else {}
    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/nonexistent", **server})
    snapshot = lexical.open_current(local_dir(settings, collection))
    assert snapshot is not None
    assert {p.paper_id for p in snapshot.all_papers()} == set(by_paper)
    return set(by_paper)


KEY = "sk-embed-canary-7391"


def _env(server, **extra: str) -> dict[str, str]:
    return {"RAGQA_EMBED_PROVIDER": "openai", "RAGQA_EMBED_BASE_URL": server.url,
            "RAGQA_EMBED_MODEL": "loopback-embed", "RAGQA_EMBED_API_KEY": KEY, **extra}
