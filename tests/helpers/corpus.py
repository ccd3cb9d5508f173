"""Source files for ingest tests, and the check that a bad one left nothing behind."""

from __future__ import annotations

import json
import random
from pathlib import Path

import chromadb

from ragqa.sources import read_sources

from . import SEEDS

A2SG = "201d7e76c9b0847d"  # the id of the seed paper A²SG

ABSTRACT_1 = (
    "Speech-to-speech language models have recently emerged to enhance the naturalness of "
    "conversational AI. In this work, we propose Moshi-RAG, a modular approach that combines "
    "a compact full-duplex interface with selective retrieval."
)
ABSTRACT_2 = (
    "Tabular question answering is usually a passive task. We introduce TableAgent-Bench, a "
    "bilingual benchmark that reformulates it as agentic, multi-turn interaction."
)
ABSTRACT_3 = (
    "Spiking neural networks are hard to train because spikes are not differentiable. We study "
    "surrogate gradients and show when they converge to flat minima."
)


def _jsonl(*records: object) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def _collection_exists(home: Path, collection: str = "default") -> bool:
    """Whether the Chroma store under `home` holds the collection (read directly, not through
    `ragqa papers`, which would ingest the seeds into a missing collection)."""
    if not (home / "chroma").exists():
        return False
    client = chromadb.PersistentClient(path=str(home / "chroma"),
                                       settings=chromadb.config.Settings(anonymized_telemetry=False))
    return f"ragqa_{collection}" in {c.name for c in client.list_collections()}


def _assert_failed_cleanly(result, home: Path, where: str) -> None:
    """Exit code 2, exactly one line on stderr naming `where`, no traceback, nothing written."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and result.stderr.endswith("\n"), result.stderr
    assert where in lines[0], lines[0]
    assert "Traceback" not in result.output
    assert not _collection_exists(home)


def _many_papers(path: Path, n: int) -> set[str]:
    seeds = [p for f in sorted(SEEDS.glob("*.txt")) for p in read_sources([f]).papers]
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            base = seeds[i % len(seeds)]
            handle.write(json.dumps({"id": f"k{i}", "title": f"{base.title} #{i}",
                                     "abstract": base.text}) + "\n")
    return {f"k{i}" for i in range(n)}


def _corpus(path: Path, n: int) -> Path:
    """n short abstracts (one chunk each: the provider's ~4 characters a token)."""
    words = ["spectral", "graph", "speech", "kernel", "diffusion", "agent", "tensor", "robust"]
    rng = random.Random(n)
    lines = []
    for i in range(n):
        body = " ".join(rng.choice(words) for _ in range(20))
        lines.append(json.dumps({"id": f"p{i:03d}", "title": f"Paper {i}",
                                 "abstract": f"Abstract number {i} studies {body}."}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
