"""In-process stand-ins for ragqa's model protocols (ragqa.models.Encoder and LLM), for fast
tests of the layers above them. They are real implementations of the protocols, not mocks of
ragqa's modules: Chroma, the BM25 snapshot, retrieval and the citation check run for real on
what they produce. Tests that prove behaviour of the models themselves use the real embedder
and the real `openai` client over a loopback server instead."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import numpy as np

from ragqa.models import Reply, ReplyStream

_WORD = re.compile(r"[a-z0-9]+")


class HashingEncoder:
    """Bag-of-words vectors by feature hashing: texts that share words are near, others far.
    Deterministic, instant, no model file."""

    dimension = 256
    embedder_id = "test-hashing-256"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
                vectors[row, int.from_bytes(digest, "little") % self.dimension] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.clip(norms, 1e-12, None)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)

    def count_tokens(self, text: str) -> int:
        return len(_WORD.findall(text.lower())) + 2


class ScriptedLLM:
    """An LLM whose reply to each prompt is what `reply(prompt)` returns; it records the
    prompts it was sent."""

    model = "scripted"

    def __init__(self, reply: Callable[[str], str]) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    @property
    def description(self) -> str:
        return "scripted (tests)"

    def context_window(self) -> int | None:
        return None

    def complete(self, prompt: str) -> Reply:
        self.prompts.append(prompt)
        return Reply(self.reply(prompt), "stop")

    def stream(self, prompt: str) -> ReplyStream:
        def deltas():
            yield from re.findall(r"\S+\s*", self.complete(prompt).text)
            return "stop", {}

        return ReplyStream(deltas())

    def complete_json(self, prompt: str, schema: dict) -> Reply:
        return self.complete(prompt)
