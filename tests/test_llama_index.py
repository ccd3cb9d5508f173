"""ragqa inside llama-index (ragqa.integrations.llama_index): its retriever and query engine run
in llama-index's own code paths (RetrieverQueryEngine, QueryFusionRetriever, a ReAct agent's
QueryEngineTool), offline, with llama-index's OpenAILike LLM on the loopback server. Real
Chroma, the real embedder, the seeds."""

from __future__ import annotations

import asyncio
import re

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.query_engine import RetrieverQueryEngine  # noqa: E402
from llama_index.core.retrievers import QueryFusionRetriever  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402
from llama_index.core.tools import QueryEngineTool  # noqa: E402
from llama_index.core.vector_stores.types import (  # noqa: E402
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

import ragqa  # noqa: E402
from ragqa.integrations.llama_index import PaperQueryEngine, PaperRetriever  # noqa: E402

from .helpers import FULL_DUPLEX  # noqa: E402
from .helpers.llm_server import Reply, prompt_of  # noqa: E402

SPEECH = {"Moshi-RAG", "Hibiki-Zero", "τ-Voice"}  # the seeds' full-duplex speech papers


@pytest.fixture
def papers(seeded, home):
    with ragqa.open(home=home) as opened:
        yield opened


def _llama_llm(server):
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(model="loopback-model", api_base=server.url, api_key="not-needed",
                      is_chat_model=True, context_window=32768, max_retries=0)


def _titles(nodes) -> set[str]:
    return {n.node.metadata["title"] for n in nodes}


def test_the_retriever_gives_papers_as_nodes_with_ragqa_scores(papers):
    nodes = PaperRetriever(papers).retrieve(FULL_DUPLEX)
    found = papers.search(FULL_DUPLEX)
    assert [n.node.node_id for n in nodes] == [h.paper_id for h in found.results]
    assert [n.score for n in nodes] == [h.score for h in found.results]
    assert _titles(nodes) >= SPEECH
    first = nodes[0].node
    assert isinstance(first, TextNode)
    assert first.text == papers.paper(first.node_id).text  # the abstract
    assert {"title", "venue", "year", "url", "source", "best_sentence", "tier", "paper_id"} <= \
        set(first.metadata)
    shown = first.get_content(metadata_mode="llm")
    assert f"title: {first.metadata['title']}" in shown and "paper_id" not in shown
    core = PaperRetriever(papers, tiers=("core",)).retrieve(FULL_DUPLEX)
    assert [n.node.node_id for n in core] == [h.paper_id for h in found.results
                                             if h.tier == "core"]
    assert len(PaperRetriever(papers, similarity_top_k=2, cut=False).retrieve("speech")) == 2
    assert asyncio.run(PaperRetriever(papers).aretrieve(FULL_DUPLEX))[0].node.node_id == \
        nodes[0].node.node_id


def test_metadata_filters_are_honoured(papers):
    def titles(*filters, condition=FilterCondition.AND, **options):
        return _titles(PaperRetriever(papers, filters=MetadataFilters(
            filters=list(filters), condition=condition), **options).retrieve(FULL_DUPLEX))

    every = titles()
    assert every >= SPEECH
    venue, year = (papers.paper(papers.search(FULL_DUPLEX).results[0].paper_id).venue,
                   papers.paper(papers.search(FULL_DUPLEX).results[0].paper_id).year)
    assert titles(MetadataFilter(key="year", value=year)) == every  # pushed into the search
    assert titles(MetadataFilter(key="year", value=year - 1)) == set()
    assert titles(MetadataFilter(key="venue", value=venue, operator=FilterOperator.NE)) == set()
    only = titles(MetadataFilter(key="title", value="Moshi", operator=FilterOperator.TEXT_MATCH))
    assert only == {"Moshi-RAG"}
    either = titles(MetadataFilter(key="title", value="Moshi-RAG"),
                    MetadataFilter(key="title", value="Hibiki-Zero"),
                    condition=FilterCondition.OR)
    assert either == {"Moshi-RAG", "Hibiki-Zero"}
    nested = titles(MetadataFilter(key="year", value=year, operator=FilterOperator.GTE),
                    MetadataFilters(filters=[
                        MetadataFilter(key="title", value=["τ-Voice", "Moshi-RAG"],
                                       operator=FilterOperator.IN)]))
    assert nested == {"τ-Voice", "Moshi-RAG"}
    # With a filter ragqa cannot apply, the top k is taken after it, not before.
    top = titles(MetadataFilter(key="title", value="Hibiki-Zero"), similarity_top_k=1,
                 cut=False)
    assert top == {"Hibiki-Zero"}


def test_filters_mean_what_llama_index_says_in_every_path(tmp_path):
    """Pushed into ragqa's search or applied to the nodes, a filter gives the same answer:
    exact venue, category membership, contradictory equalities, a bad year said in one line."""
    import json

    from ragqa.errors import InvalidField

    records = [("s1", "Streaming speech recognition", "ICML", 2024, "cs.SD cs.CL"),
               ("s2", "Speech synthesis with diffusion", "NeurIPS", 2023, "cs.SD"),
               ("s3", "Spoken dialogue agents that listen while speaking", "ICML", 2024,
                "cs.CL"),
               ("v1", "Image segmentation transformers", "ICML", 2024, "cs.CV")]
    source = tmp_path / "papers.jsonl"
    source.write_text("".join(json.dumps({
        "id": i, "title": t, "venue": v, "year": y, "categories": c,
        "abstract": f"{t}. We study {t.lower()} and report results on standard benchmarks."})
        + "\n" for i, t, v, y, c in records))
    mine = ragqa.open("filters", home=tmp_path / "home")
    mine.ingest(source)

    def ids(*filters, condition=FilterCondition.AND):
        nodes = PaperRetriever(mine, cut=False, similarity_top_k=10, filters=MetadataFilters(
            filters=list(filters), condition=condition)).retrieve("speech")
        return {n.node.node_id for n in nodes}

    assert ids() == {"s1", "s2", "s3", "v1"}
    assert ids(MetadataFilter(key="venue", value="ICML")) == {"s1", "s3", "v1"}
    assert ids(MetadataFilter(key="venue", value="icml")) == set()  # exact, as llama-index says
    assert ids(MetadataFilter(key="category", value="cs.SD")) == {"s1", "s2"}  # pushed
    both = ids(MetadataFilter(key="category", value="cs.SD"),
               MetadataFilter(key="year", value=2024, operator=FilterOperator.GTE))
    assert both == {"s1"}  # one pushed, one not: the same meaning
    assert ids(MetadataFilter(key="year", value=2024),
               MetadataFilter(key="year", value=2023)) == set()  # contradictory
    assert ids(MetadataFilter(key="year", value=2024), MetadataFilter(key="year", value=2023),
               condition=FilterCondition.OR) == {"s1", "s2", "s3", "v1"}
    assert ids(MetadataFilter(key="category", value=["cs.CV", "cs.CL"],
                              operator=FilterOperator.IN)) == {"s1", "s3", "v1"}
    with pytest.raises(InvalidField, match="year filter must be a whole number"):
        ids(MetadataFilter(key="year", value="last year"))


def test_a_retriever_query_engine_reads_the_abstracts(papers, llm_server):
    seen = []

    def reply(body):
        prompt = prompt_of(body)
        seen.append(prompt)
        named = sorted(t for t in SPEECH if t in prompt)
        return Reply("The full-duplex papers are " + ", ".join(named) + ".")

    llm_server.reply = reply
    engine = RetrieverQueryEngine.from_args(PaperRetriever(papers), llm=_llama_llm(llm_server))
    response = engine.query(FULL_DUPLEX)
    assert all(t in str(response) for t in SPEECH)
    assert _titles(response.source_nodes) >= SPEECH
    moshi = next(n.node for n in response.source_nodes if n.node.metadata["title"] == "Moshi-RAG")
    assert moshi.text[:60] in seen[0]  # the abstract reached the model


def test_a_fusion_retriever_fuses_ragqa_with_another_retriever(papers, llm_server):
    fusion = QueryFusionRetriever(
        [PaperRetriever(papers), PaperRetriever(papers, cut=False, similarity_top_k=5)],
        llm=_llama_llm(llm_server), similarity_top_k=4, num_queries=1,
        mode="reciprocal_rerank", use_async=False)
    nodes = fusion.retrieve(FULL_DUPLEX)
    ids = [n.node.node_id for n in nodes]
    assert len(ids) == 4 and len(set(ids)) == 4
    assert set(ids) <= {h.paper_id for h in papers.search(FULL_DUPLEX, k=20, cut=False).results}
    assert not llm_server.requests  # one query: the question itself, no rewriting


def test_the_query_engine_cites_checked_papers_in_order(papers):
    engine = PaperQueryEngine(papers, llm="none")
    response = engine.query(FULL_DUPLEX)
    answer = response.metadata["answer"]
    assert response.response == answer.answer
    assert [n.node.node_id for n in response.source_nodes] == \
        [c.paper_id for c in sorted(answer.citations, key=lambda c: c.n)]
    assert _titles(response.source_nodes) >= {"Moshi-RAG", "τ-Voice"}
    for number, node in enumerate(response.source_nodes, start=1):
        assert node.node.metadata["citation"] == number
        assert f"[{number}]" in response.response
        assert node.node.metadata["quote"] in node.node.text


def test_an_agent_uses_the_query_engine_as_a_tool(papers, llm_server):
    from llama_index.core.agent.workflow import ReActAgent

    cited = papers.ask(FULL_DUPLEX, llm="none").citations
    titles = [c.title for c in cited]
    def reply(body):
        # The template mentions "Observation:" too: the tool's output is the last message.
        last = str(body["messages"][-1].get("content", ""))
        if "Observation:" not in last:
            return Reply('Thought: I need to use a tool to help me answer the question.\n'
                         'Action: icml_papers\n'
                         'Action Input: {"input": "Which papers do full-duplex speech?"}\n')
        named = sorted(t for t in titles if t in last)
        return Reply("Thought: I can answer without using any more tools.\n"
                     f"Answer: The tool found {', '.join(named)}.")

    llm_server.reply = reply
    tool = QueryEngineTool.from_defaults(
        PaperQueryEngine(papers, llm="none"), name="icml_papers",
        description="Answers questions about the ICML 2026 papers, citing them.")
    agent = ReActAgent(tools=[tool], llm=_llama_llm(llm_server), streaming=False)

    async def run():
        return await agent.run(user_msg="Which papers do full-duplex speech?")

    result = asyncio.run(run())
    said = str(result)
    assert titles and all(t in said for t in titles), said
    observed = str(llm_server.requests[-1]["body"]["messages"][-1]["content"])
    assert re.search(r"\[1\]", observed)  # the tool's output is ragqa's cited answer
    assert len([r for r in llm_server.requests if "messages" in r["body"]]) == 2
