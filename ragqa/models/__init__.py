"""The models: embedders (MiniLM ONNX, multilingual e5, any OpenAI-compatible embedding server),
LLMs (OpenAI-compatible servers through the `openai` SDK, an in-process GGUF model), the
cross-encoder and the Chinese-English glossary. They know nothing of Chroma or of prompts.

The two protocols below are what the rest of ragqa types against; every implementation
satisfies them (tests/test_protocols.py checks it), so nothing probes a model with getattr.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class Reply:
    """A model's whole reply: its text, why it stopped ("length": cut at the output limit) and
    the server's token counts (`prompt_tokens`, `completion_tokens`; empty when it sent none).
    Returned with each call, never kept on the model: one model serves many threads."""

    text: str
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


#: What a streaming call yields (text deltas) and, at its end, returns: (finish_reason, usage).
Deltas = Generator[str, None, "tuple[str | None, dict[str, int]]"]


class ReplyStream:
    """A reply's text deltas as they arrive; once iterated to its end, `reply` is the whole
    Reply (None before, or when the stream failed or was left). Leaving the iteration early
    (a `break`, an exception in the caller) or `close()` ends the request."""

    def __init__(self, deltas: Deltas) -> None:
        self._deltas = deltas
        self.reply: Reply | None = None

    def __iter__(self) -> Iterator[str]:
        parts: list[str] = []
        try:
            while True:
                try:
                    delta = next(self._deltas)
                except StopIteration as end:
                    finish_reason, usage = end.value or (None, {})
                    break
                parts.append(delta)
                yield delta
        finally:
            self.close()
        self.reply = Reply("".join(parts), finish_reason, usage)

    def close(self) -> None:
        """Ends the request (the model's connection closed); a no-op once it has ended."""
        self._deltas.close()


@runtime_checkable
class LLM(Protocol):
    """A chat model that completes one user prompt, whole or streamed. Thread-safe: every
    call's outcome comes back with it (Reply), nothing of it stays on the model."""

    #: The model's name as configured (RAGQA_LLM_MODEL, or the GGUF file's name).
    model: str

    @property
    def description(self) -> str:
        """The model and where it runs, for people (never a secret)."""
        ...

    def context_window(self) -> int | None:
        """The context the model says it has, in tokens; None when it does not say."""
        ...

    def complete(self, prompt: str) -> Reply: ...

    def stream(self, prompt: str) -> ReplyStream: ...

    def complete_json(self, prompt: str, schema: dict) -> Reply:
        """The whole reply to a prompt that asks for a JSON object of `schema` (structured
        output where the server offers it)."""
        ...
