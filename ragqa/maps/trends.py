"""A topic over the years: its papers per year against the collection's papers per year.

The topic's papers are the ones the list decision keeps for it, as for "which papers are
about TOPIC?" and for a summary of TOPIC, so that the counts are the papers a user would be
shown. Papers without a year are counted apart, never in a year. Split by venue, each venue's
papers of the topic are counted against that venue's papers of the year (a year the venue has
no papers of is a gap, as for the whole collection).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ragqa.errors import UserError
from ragqa.retrieval.fitted import LIST_MODEL, whole_list
from ragqa.retrieval.question import strip_frame
from ragqa.retrieval.types import Filters
from ragqa.sources.paper import Paper

if TYPE_CHECKING:
    from ragqa.retrieval.retriever import Retriever

MIN_YEARS = 3  # fewer years than this are no trend to draw


@dataclass
class YearCount:
    year: int
    papers: int  # the topic's
    collection: int  # all of the collection's (within the filters)

    @property
    def share(self) -> float | None:
        """The topic's share of the year's papers; None for a year the collection has no
        papers of (a gap, not 0 %)."""
        return self.papers / self.collection if self.collection else None


@dataclass
class VenueTrend:
    venue: str
    papers: int  # the topic's papers of this venue
    collection: int  # all of the venue's papers (within the filters)
    years: list[YearCount]  # the whole trend's years; the venue's own papers per year


@dataclass
class Trend:
    topic: str
    years: list[YearCount]  # every year from the first to the last, gaps as zero
    without_year: YearCount  # year 0: the papers that carry none
    papers: list[Paper]  # the topic's, best first
    venues: list[VenueTrend] = field(default_factory=list)  # when split by venue


def topic_papers(retriever: Retriever, topic: str, filters: Filters | None = None,
                 foreign: bool = False) -> list[Paper]:
    """The papers the list decision keeps for `topic` (a question in another language searched
    with the multilingual vectors)."""
    if foreign:
        result = retriever.search_foreign(topic, filters=filters, sentences=False,
                                          rule=LIST_MODEL)
    else:
        result = retriever.search(topic, filters=filters, sentences=False, rule=LIST_MODEL)
    # the one-tier list, not the long tail of the tiers (fitted.whole_list)
    return [hit.paper for hit in whole_list(result.hits)]


def count_by_year(topic: str, papers: Sequence[Paper], collection: Sequence[Paper]) -> Trend:
    """The topic's `papers` and the `collection`'s per year, every year from the first to the
    last (a gap is a row of zeros)."""
    mine = Counter(p.year or 0 for p in papers)
    everyone = Counter(p.year or 0 for p in collection)
    years = sorted(y for y in everyone if y)
    span = range(years[0], years[-1] + 1) if years else range(0)
    return Trend(topic, [YearCount(y, mine[y], everyone[y]) for y in span],
                 YearCount(0, mine[0], everyone[0]), list(papers))


def by_venue(trend: Trend, collection: Sequence[Paper]) -> list[VenueTrend]:
    """The trend of each venue of the collection, over the trend's years: the venues with the
    most papers on the topic first."""
    venues: dict[str, list[Paper]] = {}
    for paper in collection:
        venues.setdefault(paper.venue or "", []).append(paper)
    mine: dict[str, list[Paper]] = {}
    for paper in trend.papers:
        mine.setdefault(paper.venue or "", []).append(paper)
    split = []
    for venue, papers in venues.items():
        counted = count_by_year(trend.topic, mine.get(venue, []), papers)
        years = {row.year: row for row in counted.years}
        split.append(VenueTrend(venue, len(mine.get(venue, [])), len(papers), [
            years.get(row.year, YearCount(row.year, 0, 0)) for row in trend.years]))
    return sorted(split, key=lambda v: (-v.papers, v.venue))


def trend(retriever: Retriever, topic: str, filters: Filters | None = None,
          foreign: bool = False, split_venues: bool = False) -> Trend:
    """`ragqa trends TOPIC`: the topic's papers per year, and the collection's (and each
    venue's, with `split_venues`)."""
    filters = filters or Filters()
    collection = [p for p in retriever.lexical.all_papers() if filters.admits(p)] \
        if retriever.lexical is not None else []
    # Checked before searching: a collection of one year needs no search to say so.
    years = {p.year for p in collection if p.year}
    if len(years) < MIN_YEARS:
        raise UserError(f"the collection's papers carry {_years(sorted(years))}: a trend "
                        f"needs papers of {MIN_YEARS} or more years")
    papers = topic_papers(retriever, topic, filters, foreign)
    counted = count_by_year(strip_frame(topic), papers, collection)
    if split_venues:
        counted.venues = by_venue(counted, collection)
    return counted


def _years(years: Sequence[int]) -> str:
    if not years:
        return "no year"
    if len(years) == 1:
        return f"one year ({years[0]})"
    return f"{len(years)} years ({', '.join(map(str, years))})"


def _years_json(years: Sequence[YearCount]) -> list[dict]:
    return [{"year": c.year, "papers": c.papers, "collection": c.collection,
             "share": None if c.share is None else round(c.share, 4)} for c in years]


def as_json(trend: Trend, collection: str) -> dict:
    return {
        "topic": trend.topic, "collection": collection,
        "papers": len(trend.papers),
        "years": _years_json(trend.years),
        "venues": [{"venue": v.venue, "papers": v.papers, "collection": v.collection,
                    "years": _years_json(v.years)} for v in trend.venues],
        "without_year": {"papers": trend.without_year.papers,
                         "collection": trend.without_year.collection},
        "results": [{"paper_id": p.paper_id, "title": p.title, "source": p.source,
                     "year": p.year, "venue": p.venue} for p in trend.papers],
    }
