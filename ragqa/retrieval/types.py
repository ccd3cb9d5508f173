"""What a search takes and gives: the filters it may apply, a paper found (Hit) with its
signals, and the result of one search."""

from __future__ import annotations

from dataclasses import dataclass, field

from ragqa.sources.paper import Paper
from ragqa.sources.select import category_key, split_categories


@dataclass
class Hit:
    index: int  # the paper's row in the lexical snapshot
    score: float  # fused (0..1), the order of the results
    similarity: float  # best chunk's cosine similarity to the question (-1 .. 1)
    bm25: float
    chunk_id: str = ""  # the paper's nearest chunk (empty when only BM25 found it)
    best_sentence: str = ""
    z: float = 0.0
    coverage: float = 0.0
    # The list decision's signals (RelevanceModel.FEATURES, set by signals.list_signals via
    # Retriever._list_candidates) and the probability it gives the paper.
    signals: dict[str, float] = field(default_factory=dict)
    probability: float = 0.0
    named: bool = False  # holds a rare name the question uses (signals.NAMED_PAPERS)
    # A list's papers in two tiers (RelevanceModel.keep): "core", the papers the decision is
    # sure of, shown as the answer; "tail", the less certain rest, folded (issue 45).
    tier: str = "core"
    # The list decision's topic gate doubted the question's topic: the paper is in its list
    # only as a folded candidate (RelevanceModel.keep), never in the one-tier list.
    doubted: bool = False
    # Nearer what the question says it does not want than what it asks (decide.fold_excluded):
    # folded, and in no one-tier list.
    excluded: bool = False
    paper: Paper = None  # type: ignore[assignment]  # read for the hits that are kept


@dataclass(frozen=True)
class Filters:
    """Which papers a search may return: a venue, a year, an arXiv category, or a set of paper
    ids (a chat follow-up about "them" searches only the papers the last answer cited)."""

    venue: str | None = None
    year: int | None = None
    paper_ids: frozenset[str] | None = None
    category: str | None = None

    def __bool__(self) -> bool:
        return (self.venue is not None or self.year is not None or self.paper_ids is not None
                or self.category is not None)

    def as_dict(self) -> dict:
        out: dict = {k: v for k, v in (("venue", self.venue), ("year", self.year),
                                       ("category", self.category)) if v}
        if self.paper_ids is not None:
            out["paper_ids"] = sorted(self.paper_ids)
        return out

    def chroma_where(self) -> dict | None:
        clauses: list[dict] = []
        if self.venue:  # its short name ("ACL") or the whole label (ragqa/sources/venues.py)
            clauses.append({"$or": [{"venue_key": self.venue.lower()},
                                    {"venue_label_key": self.venue.lower()}]})
        if self.year is not None:
            clauses.append({"year": self.year})
        if self.category:
            clauses.append({category_key(self.category): True})
        if self.paper_ids is not None:
            clauses.append({"paper_id": {"$in": sorted(self.paper_ids)}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def admits(self, paper: Paper) -> bool:
        """The same test in Python, for papers read from the BM25 snapshot (`summarize --all`)."""
        label = str(paper.extra.get("venue_label", ""))
        return ((not self.venue or self.venue.lower() in (paper.venue.lower(), label.lower()))
                and (self.year is None or paper.year == self.year)
                and (self.paper_ids is None or paper.paper_id in self.paper_ids)
                and (not self.category or self.category.lower() in
                     {c.lower() for c in split_categories(paper.extra.get("categories", ""))}))


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    total_papers: int
    considered: int = 0
    cut_applied: bool = True
    filters: dict = field(default_factory=dict)
    # How a question in another language was searched: "multilingual" (its own multilingual
    # vectors), "translated+multilingual" (an LLM's translation and those, merged), "english" or
    # "english+translation" (the collection keeps no multilingual vectors: the English model
    # matched the question itself, or its translation; the answer says how to add them).
    multilingual: str = ""
