"""ragqa inside llama-index apps (`pip install 'ragqa[llama-index]'`): a retriever whose nodes
are papers, and a query engine whose source nodes are the answer's checked citations.

    import ragqa
    from ragqa.integrations.llama_index import PaperRetriever, PaperQueryEngine

    papers = ragqa.open("icml", home="/tmp/ragqa-home")
    retriever = PaperRetriever(papers)              # ragqa's hybrid retrieval and list cut
    nodes = retriever.retrieve("Which papers do full-duplex speech?")
    engine = PaperQueryEngine(papers)               # ragqa's cited answers
    response = engine.query("Which papers do full-duplex speech?")
    response.source_nodes                           # the cited papers, in citation order

`as_llama_embedding(papers.encoder)` is ragqa's embedder as a llama-index `BaseEmbedding`.

Each node is one paper: its abstract as text; title, venue, year, url, authors, source, the
sentence that shows why (`best_sentence`), its `tier` and `paper_id` as metadata, and an arXiv
paper's `category` list (the title, venue and year reach an LLM, the rest stays out of its
prompt). `MetadataFilters` are honoured on every metadata key, with any operator and condition,
as llama-index defines them (exact values; equality on a list is membership); a single
equality on `year` or `category` also narrows ragqa's search itself. llama-index is imported
here only: the rest of ragqa never needs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

try:
    from llama_index.core.base.base_query_engine import BaseQueryEngine
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.base.response.schema import Response
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from llama_index.core.vector_stores.types import (
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
    )
except ImportError as exc:  # said as what to install, not as a missing module
    raise ImportError("ragqa.integrations.llama_index needs llama-index: "
                      "pip install 'ragqa[llama-index]'") from exc
from pydantic import PrivateAttr

from ragqa.api import Collection
from ragqa.errors import InvalidField
from ragqa.models import Encoder
from ragqa.results import Answer
from ragqa.sources.select import split_categories

__all__ = ["EncoderEmbedding", "PaperQueryEngine", "PaperRetriever", "as_llama_embedding",
           "paper_node"]

#: Metadata an LLM reads with a paper's abstract; the rest is for code (ids, scores, links).
LLM_METADATA = ("title", "venue", "year")
#: The keys ragqa's own search can filter on with a MetadataFilter's meaning (exact equality):
#: pushed into the search. Its venue filter also matches the venue's label, in any case, so a
#: venue filter is only applied to the nodes.
PUSHED_DOWN = ("year", "category")


def paper_node(collection: Collection, paper_id: str, **metadata: Any) -> TextNode:
    """The paper as a TextNode: the abstract as text, the paper's fields as metadata."""
    paper = collection.paper(paper_id)
    fields = {**{k: v for k, v in paper.extra.items() if isinstance(v, str | int | float)},
              "paper_id": paper.paper_id, "title": paper.title, "venue": paper.venue,
              "year": paper.year, "url": paper.url, "authors": paper.authors,
              "source": paper.source, **metadata}
    if "categories" in paper.extra:  # arXiv's "cs.CL cs.SD": a filter on `category` is membership
        fields["category"] = split_categories(paper.extra["categories"])
    return TextNode(id_=paper.paper_id, text=paper.text, metadata=fields,
                    excluded_llm_metadata_keys=[k for k in fields if k not in LLM_METADATA],
                    excluded_embed_metadata_keys=[k for k in fields if k not in LLM_METADATA])


class PaperRetriever(BaseRetriever):
    """ragqa's search as a llama-index retriever: the papers that pass its relevance cut (a
    list question: the list decision's core and tail, `tiers` chooses), or the top
    `similarity_top_k` (with `cut=False`, 10 by default). Scores are ragqa's: for a list
    question the probability that the paper is relevant."""

    def __init__(self, collection: Collection, *, similarity_top_k: int | None = None,
                 cut: bool = True, tiers: Sequence[str] = ("core", "tail"),
                 filters: MetadataFilters | None = None,
                 callback_manager: CallbackManager | None = None, verbose: bool = False
                 ) -> None:
        self._collection = collection
        self._k, self._cut, self._tiers = similarity_top_k, cut, tuple(tiers)
        self._filters = filters
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        filters = self._filters if self._filters and self._filters.filters else None
        pushed = _pushed(filters)
        limit = self._k or (None if self._cut else 10)
        k = self._k
        if filters is not None or set(self._tiers) != {"core", "tail"}:
            # The top k is taken after the filters and tiers, not before them.
            k = None if self._cut else max(limit, 200)
        results = self._collection.search(query_bundle.query_str, k=k, cut=self._cut, **pushed)
        nodes = []
        for hit in results.results:
            if hit.tier not in self._tiers:
                continue
            node = paper_node(self._collection, hit.paper_id, best_sentence=hit.best_sentence,
                              tier=hit.tier, rank=hit.rank)
            if filters is None or _admits(filters, node.metadata):
                nodes.append(NodeWithScore(node=node, score=hit.score))
        return nodes[:limit] if limit else nodes

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._retrieve, query_bundle)


class PaperQueryEngine(BaseQueryEngine):
    """ragqa's answer as a llama-index query engine: the answer text (LLM-written with the
    collection's configured LLM, or extractive: `llm`), its `source_nodes` the papers it cites,
    in the order of their numbers ([1] first), each with ragqa's score for it. The options of
    `Collection.ask` (k, screen, unfold, venue, year, category) are the engine's.
    `Response.metadata` holds the whole answer object (`answer`: ragqa.results.Answer)."""

    def __init__(self, collection: Collection, *, llm: str = "auto",
                 callback_manager: CallbackManager | None = None, **ask_options: Any) -> None:
        self._collection, self._llm, self._options = collection, llm, ask_options
        super().__init__(callback_manager=callback_manager or CallbackManager([]))

    def _get_prompt_modules(self) -> dict[str, Any]:
        return {}  # ragqa's prompts live in its prompts/ folder, not in llama-index

    def _query(self, query_bundle: QueryBundle) -> Response:
        answer = self._collection.ask(query_bundle.query_str, llm=self._llm, **self._options)
        if not answer.citations and any(p.tier == "tail" for p in answer.papers):
            # a topic ragqa doubts: its folded papers are all there is, so they are the answer
            answer = self._collection.ask(query_bundle.query_str, llm=self._llm,
                                          **{**self._options, "unfold": True})
        return Response(response=answer.answer, source_nodes=self.cited_nodes(answer),
                        metadata={"answer": answer, "mode": answer.mode,
                                  "notice": answer.notice})

    async def _aquery(self, query_bundle: QueryBundle) -> Response:
        return await asyncio.to_thread(self._query, query_bundle)

    def cited_nodes(self, answer: Answer) -> list[NodeWithScore]:
        """The cited papers as nodes, [1] first, each with the quote that backs it."""
        scores = {p.paper_id: p.score for p in answer.papers}
        return [NodeWithScore(node=paper_node(self._collection, c.paper_id, citation=c.n,
                                              quote=c.quote),
                              score=scores.get(c.paper_id))
                for c in sorted(answer.citations, key=lambda c: c.n)]


# ---------------------------------------------------------------- MetadataFilters

def _pushed(filters: MetadataFilters | None) -> dict[str, Any]:
    """The filters ragqa's search can apply itself, as its own filters: equality on `year` or
    `category`, one each, in an AND of plain filters. They only narrow the search: the nodes
    are checked against every filter all the same (`_admits`), so that both paths agree."""
    if filters is None or filters.condition not in (FilterCondition.AND, None):
        return {}
    pushed: dict[str, Any] = {}
    for key in PUSHED_DOWN:
        equal = [f for f in filters.filters if isinstance(f, MetadataFilter) and f.key == key]
        if len(equal) != 1 or equal[0].operator != FilterOperator.EQ:
            continue  # none, another operator, or several (perhaps contradictory): not pushed
        value = equal[0].value
        if key == "year":
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise InvalidField(f"the year filter must be a whole number, not "
                                   f"{value!r}") from None
        pushed[key] = value if key == "year" else str(value)
    return pushed


def _admits(filters: MetadataFilters, metadata: dict[str, Any]) -> bool:
    """Whether a node's metadata meets `filters` (nested sets and every operator)."""
    checks = [_admits(f, metadata) if isinstance(f, MetadataFilters) else
              _meets(f, metadata) for f in filters.filters]
    if filters.condition == FilterCondition.OR:
        return any(checks)
    if filters.condition == FilterCondition.NOT:
        return not any(checks)
    return all(checks)


def _meets(f: MetadataFilter, metadata: dict[str, Any]) -> bool:
    value, wanted, op = metadata.get(f.key), f.value, f.operator
    if op == FilterOperator.IS_EMPTY:
        return value in (None, "", [])
    if value is None:
        return op in (FilterOperator.NE, FilterOperator.NIN)
    if op in (FilterOperator.EQ, FilterOperator.NE):
        same = any(_same(v, wanted) for v in value) if isinstance(value, list) \
            else _same(value, wanted)
        return same if op == FilterOperator.EQ else not same
    if op in (FilterOperator.GT, FilterOperator.GTE, FilterOperator.LT, FilterOperator.LTE):
        try:
            left, right = (float(value), float(wanted)) if _numeric(value, wanted) \
                else (str(value), str(wanted))
        except (TypeError, ValueError):
            return False
        return {FilterOperator.GT: left > right, FilterOperator.GTE: left >= right,
                FilterOperator.LT: left < right, FilterOperator.LTE: left <= right}[op]
    if op in (FilterOperator.IN, FilterOperator.NIN):
        inside = any(_same(v, w) for v in _listed(value) for w in _listed(wanted))
        return inside if op == FilterOperator.IN else not inside
    if op in (FilterOperator.ANY, FilterOperator.ALL):
        held = set(map(str, _listed(value)))
        asked = [str(w) for w in _listed(wanted)]
        return any(w in held for w in asked) if op == FilterOperator.ANY \
            else all(w in held for w in asked)
    if op == FilterOperator.CONTAINS:
        return str(wanted) in (map(str, value) if isinstance(value, list) else str(value))
    if op == FilterOperator.TEXT_MATCH:
        return str(wanted) in str(value)
    if op == FilterOperator.TEXT_MATCH_INSENSITIVE:
        return str(wanted).lower() in str(value).lower()
    raise ValueError(f"unsupported filter operator {op!r}")


def _same(value: Any, wanted: Any) -> bool:
    if _numeric(value, wanted):
        return float(value) == float(wanted)
    return str(value) == str(wanted)


def _numeric(*values: Any) -> bool:
    try:
        return all(not isinstance(v, bool) and float(v) == float(v) for v in values)
    except (TypeError, ValueError):
        return False


def _listed(value: Any) -> Iterable[Any]:
    return value if isinstance(value, list | tuple | set) else [value]


# ---------------------------------------------------------------- the embedder

class EncoderEmbedding(BaseEmbedding):
    """Delegates to a ragqa Encoder (the local ONNX MiniLM, multilingual e5 or an
    OpenAI-compatible server): `as_llama_embedding(papers.encoder)`."""

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
        return self._encoder.embed_queries([query])[0].tolist()

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
