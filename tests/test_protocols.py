"""The model protocols (ragqa.models): every implementation satisfies them, so the core types
against them and never probes a model with getattr; the in-process fakes satisfy them too, and
carry a whole ask through real Chroma, real retrieval and the real citation check in a second."""

from __future__ import annotations

import inspect

import pytest

from ragqa.answering.answer import answer_question
from ragqa.config import load_settings
from ragqa.index.ingest import ingest_sources
from ragqa.index.store import Store
from ragqa.models import LLM, Encoder
from ragqa.models.encoders import LocalMiniLM, MultilingualE5, OpenAICompatibleEmbedder
from ragqa.models.llm import ChatLLM, LocalGGUF
from ragqa.retrieval.retriever import Retriever
from ragqa.sources import ReadReport
from ragqa.sources.paper import Paper
from tests.helpers.fakes import HashingEncoder, ScriptedLLM


def _members(protocol: type) -> set[str]:
    return {n for n in dir(protocol) if not n.startswith("_")} | set(
        getattr(protocol, "__annotations__", {}))


@pytest.mark.parametrize("cls", [LocalMiniLM, MultilingualE5, OpenAICompatibleEmbedder,
                                 HashingEncoder])
def test_every_encoder_has_the_protocol_methods(cls):
    for name in ("embed", "embed_queries", "count_tokens"):
        assert callable(getattr(cls, name, None)), f"{cls.__name__} lacks {name}"
        assert list(inspect.signature(getattr(cls, name)).parameters)[1:] == \
            list(inspect.signature(getattr(Encoder, name)).parameters)[1:]


@pytest.mark.parametrize("cls", [ChatLLM, LocalGGUF, ScriptedLLM])
def test_every_llm_has_the_protocol_methods(cls):
    for name in ("complete", "stream", "context_window", "description"):
        assert hasattr(cls, name), f"{cls.__name__} lacks {name}"


def test_instances_satisfy_the_protocols(tmp_path):
    settings = load_settings({"RAGQA_HOME": str(tmp_path), "RAGQA_ENV_FILE": "/nonexistent",
                              "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert isinstance(OpenAICompatibleEmbedder(model="m", base_url="http://127.0.0.1:9/v1",
                                               api_key=""), Encoder)
    assert isinstance(ChatLLM(settings), LLM)
    assert isinstance(HashingEncoder(), Encoder) and isinstance(ScriptedLLM(str), LLM)


PAPERS = [
    ("p-speech", "Full-duplex speech agents",
     "We build a full-duplex speech agent that listens while it speaks. It halves latency."),
    ("p-graph", "Graph networks for molecules",
     "We predict molecular properties with graph neural networks on 12 benchmarks."),
    ("p-spike", "Spiking networks",
     "We train spiking neural networks with surrogate gradients for event cameras."),
] + [(f"p-other-{i}", f"Topic {topic}", f"We study {topic} with new {method} and report gains.")
     for i, (topic, method) in enumerate([
         ("protein folding", "diffusion models"), ("traffic forecasting", "transformers"),
         ("image segmentation", "convolutions"), ("reinforcement learning", "world models"),
         ("machine translation", "adapters"), ("recommender systems", "contrastive losses"),
         ("weather prediction", "neural operators"), ("robot grasping", "tactile sensors"),
         ("code generation", "program search"), ("tabular data", "gradient boosting"),
         ("fairness auditing", "causal graphs"), ("music generation", "tokenizers")])]


def test_an_llm_answer_through_real_chroma_and_the_citation_check(tmp_path):
    settings = load_settings({"RAGQA_HOME": str(tmp_path), "RAGQA_ENV_FILE": "/nonexistent"})
    store = Store(settings, "fakes", HashingEncoder())
    papers = [Paper(paper_id=i, title=t, text=x, source=f"fake.jsonl#{n}")
              for n, (i, t, x) in enumerate(PAPERS, start=1)]
    ingest_sources(store, ReadReport(papers=papers, skipped=[]))
    llm = ScriptedLLM(lambda prompt: "A full-duplex agent listens while it speaks [1]. "
                                     "It also cures colds [7].")
    answer = answer_question(Retriever(store),
                             "How much does the full-duplex speech agent cut latency?",
                             llm=llm)
    cited = {c.paper_id for c in answer.citations}
    assert cited == {"p-speech"}  # [7] points at no retrieved paper: dropped, never shown
    assert "[7]" not in answer.text and "[1]" in answer.text
    assert answer.as_json()["dropped_citations"] == 1
    # The sentence that lost its only citation is shown, so it is listed as unsupported.
    assert {"sentence": "It also cures colds.", "citations": [], "support": None,
            "dropped_citation": True} in answer.as_json()["unsupported"]
    assert "<source" in llm.prompts[-1] and "full-duplex" in llm.prompts[-1].lower()
