"""The models: embedders (MiniLM ONNX, multilingual e5, any OpenAI-compatible embedding server),
LLMs (OpenAI-compatible servers through llama-index, an in-process GGUF model), the
cross-encoder and the Chinese-English glossary. They know nothing of Chroma or of prompts.

The two protocols below are what the rest of ragqa types against; every implementation
satisfies them (tests/test_protocols.py checks it), so nothing probes a model with getattr.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np


@runtime_checkable
class Encoder(Protocol):
    """Texts to unit vectors: passages (`embed`) and questions (`embed_queries`), which differ
    for models trained with prefixes (e5's "passage: " and "query: ")."""

    #: Identifies the model and its settings; an index built by one encoder refuses another.
    embedder_id: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...


@runtime_checkable
class LLM(Protocol):
    """A chat model that completes one user prompt, whole or streamed."""

    #: The model's name as configured (RAGQA_LLM_MODEL, or the GGUF file's name).
    model: str
    #: "length" when the last reply stopped at the model's output limit: a cut answer.
    last_finish_reason: str | None
    #: The server's token counts of the last reply, when it sent them.
    last_usage: dict[str, int]

    @property
    def description(self) -> str:
        """The model and where it runs, for people (never a secret)."""
        ...

    def context_window(self) -> int | None:
        """The context the model says it has, in tokens; None when it does not say."""
        ...

    def complete(self, prompt: str) -> str: ...

    def stream(self, prompt: str) -> Iterator[str]: ...

    def complete_json(self, prompt: str, schema: dict) -> tuple[str, dict[str, int]]:
        """The whole reply to a prompt that asks for a JSON object of `schema` (structured
        output where the server offers it), and that reply's token counts. Safe to call from
        several threads at once (screening sends batches concurrently)."""
        ...
