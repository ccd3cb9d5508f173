"""ragqa's encoders as llama-index `BaseEmbedding`s.

Kept apart from encoders.py because importing llama-index costs ~2 s, which a search process
should not pay; anything built on llama-index (a VectorStoreIndex, a query engine) uses this.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from ragqa.models import Encoder


class EncoderEmbedding(BaseEmbedding):
    """Delegates to a ragqa Encoder (the local ONNX MiniLM or an OpenAI-compatible server)."""

    _encoder: Any = PrivateAttr()

    @classmethod
    def from_encoder(cls, encoder: Encoder) -> EncoderEmbedding:
        instance = cls(model_name=encoder.embedder_id, embed_batch_size=64)
        instance._encoder = encoder
        return instance

    @classmethod
    def class_name(cls) -> str:
        return "RagqaEncoderEmbedding"

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._encoder.embed([query])[0].tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._encoder.embed([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._encoder.embed(texts).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)


def as_llama_embedding(encoder: Encoder) -> EncoderEmbedding:
    """The encoder as a llama-index BaseEmbedding."""
    return EncoderEmbedding.from_encoder(encoder)
