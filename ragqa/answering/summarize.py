"""Literature summaries: the papers of a topic (or a whole collection) grouped into themes by
clustering their embeddings, a paragraph per theme, every claim cited, one reference list.

Bounded at any scale: k-means runs on one vector per paper (a sample of at most
`SAMPLE_FOR_K` papers picks the number of themes), and each theme is written from its most
central papers only (at most `PER_THEME`), so the work per summary, and the number of LLM
calls (two per theme plus one overview), stay fixed however large the collection is.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import quote

import numpy as np

from ragqa.answering.answer import (
    CITATION,
    Evidence,
    check_citations,
    expand_citation,
    repair_uncited,
    sources_block,
)
from ragqa.answering.citations import normalise_citations
from ragqa.answering.messages import message, shown_topic
from ragqa.index import lexical
from ragqa.models.language import detect_language
from ragqa.prompts import load_prompt
from ragqa.retrieval.fitted import LIST_MODEL, whole_list
from ragqa.retrieval.question import strip_frame
from ragqa.retrieval.sentences import best_sentence
from ragqa.retrieval.types import Filters, Hit, SearchResult
from ragqa.screening.screen import Progress, Screening, screener_for
from ragqa.sources.export import reference_link
from ragqa.sources.paper import Paper, contribution_sentence, strip_marks
from ragqa.text import inert_markdown, inert_markdown_line

if TYPE_CHECKING:
    from ragqa.models import LLM
    from ragqa.retrieval.retriever import Retriever

MIN_THEMES, MAX_THEMES = 2, 10
# A theme has at least this many papers (beyond the fewest themes a collection gets).
MIN_THEME_PAPERS = 2
PER_THEME = 15  # papers a theme's paragraph is written from (its most central ones)
SAMPLE_FOR_K = 2000
OTHER = message("summary.other")  # a theme whose papers share no word
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]{2,}")
# Words that make no key phrase on their own ("real world", "wide range", "recent advances",
# "machine learning": a theme of a conference named "Machine learning" says nothing).
_VAGUE = frozenset(re.findall(r"\w+", """
real world wide range recent advances extensive experiments experimental results significant
improvements existing large scale high low small quality efficient effective novel simple
different various key important strong better best first second new current prior future
state art level end based driven level wise time times step steps machine deep
"""))
# Generic words that still end a key phrase as its noun: without them "deep reinforcement
# learning" was named "Deep reinforcement", "unified multimodal models" "Unified multimodal".
_HEADS = frozenset(("learning", "model", "models", "data", "task", "tasks", "problem",
                    "problems", "framework", "frameworks", "method", "methods"))
# "REPresentation", "ALIgnment": capitals that spell an acronym out, not a name's.
_ACRONYM_SPELLED = re.compile(r"[A-Z]{2,}[a-z]+")
# Where a key phrase cannot run on: punctuation and brackets.
_PHRASE_BREAK = re.compile(r"[.,;:!?()\[\]{}\"“”'’/]+|\s[-–—]\s")
# Words that name no theme: English function words and the vocabulary of every abstract.
_GENERIC = frozenset("""
a about above across after again against all almost along also although always among an and
another any are around as at be because been before being below between both but by can
cannot could did do does doing done down during each either enough especially even ever every
few for from further furthermore had has have having here how however if in into is it its
itself just less like made make makes many may might more moreover most much must near need
needs neither no nor not now of off often on once one only onto or other others otherwise our
ours out over own per rather same several shall should since so some such than that the their
them then there therefore these they this those though through thus to together too toward
towards under until up upon us use used uses using very via was we well were what when where
whether which while who whose why will with within without would yet you your
paper papers propose proposed proposes method methods approach approaches model models result
results show shows shown based new novel task tasks performance framework existing art state
data learning work works problem problems experiment experiments experimental demonstrate
demonstrates recent recently achieve achieves achieving introduce introduces present presents
first two three significant significantly improve improves improved improvement improvements
existing challenge challenges key critical large remains remain various outperforms compared
approach provides provide enables enable effective effectively efficient extensive study
github https http com code available address addresses org www
""".split())  # noqa: SIM905 - a word list reads best as text
@dataclass
class Theme:
    name: str
    papers: list[Paper]  # every paper of the theme, most central first
    text: str = ""
    size: int = 0
    # written by an LLM: uncited sentences given a citation, and those no abstract supports
    repaired: int = 0
    unsupported: list[str] = field(default_factory=list)


@dataclass
class Summary:
    topic: str
    mode: str
    themes: list[Theme]
    overview: str
    references: list[Paper]  # [n] is references[n - 1]
    papers_considered: int
    llm_calls: int = 0
    tokens: int = 0
    dropped_citations: int = 0
    # The topic's language: the summary's frames (headings, overview) are written in it.
    language: str = "English"
    # How the LLM screened the topic's candidates; None when it did not.
    screening: Screening | None = None
    notice: str = ""  # what went otherwise than asked (the judge failed), one line


# ---------------------------------------------------------------- clustering

def kmeans(vectors: np.ndarray, k: int, seed: int = 0, iterations: int = 50) -> np.ndarray:
    """Labels of spherical k-means (cosine) with k-means++ seeding; deterministic per seed."""
    rng = np.random.default_rng(seed)
    centres = [vectors[rng.integers(len(vectors))]]
    for _ in range(1, k):
        distance = 1.0 - np.max(vectors @ np.array(centres).T, axis=1)
        weights = np.clip(distance, 0, None) ** 2
        total = weights.sum()
        pick = rng.choice(len(vectors), p=weights / total) if total > 0 else rng.integers(
            len(vectors))
        centres.append(vectors[pick])
    centre_matrix = np.array(centres)
    labels = np.zeros(len(vectors), dtype=np.int64)
    for _ in range(iterations):
        new = np.argmax(vectors @ centre_matrix.T, axis=1)
        if _ and np.array_equal(new, labels):
            break
        labels = new
        for c in range(k):
            members = vectors[labels == c]
            if len(members):
                mean = members.mean(axis=0)
                centre_matrix[c] = mean / (np.linalg.norm(mean) or 1.0)
    return labels


def silhouette(vectors: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette with cosine distance."""
    distances = 1.0 - vectors @ vectors.T
    scores = []
    for i, label in enumerate(labels):
        same = labels == label
        if same.sum() <= 1:
            scores.append(0.0)
            continue
        a = distances[i, same].sum() / (same.sum() - 1)
        b = min(distances[i, labels == other].mean() for other in set(labels) if other != label)
        scores.append((b - a) / max(a, b, 1e-9))
    return float(np.mean(scores))


def choose_themes(vectors: np.ndarray, seed: int = 0) -> np.ndarray:
    """Labels for the number of themes (within bounds) with the best silhouette."""
    n = len(vectors)
    if n < 2 * MIN_THEMES:
        return np.zeros(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    sample = rng.choice(n, size=min(n, SAMPLE_FOR_K), replace=False)
    # Silhouette on sentence embeddings favours the fewest clusters; a larger collection gets a
    # higher floor (21,000 abstracts are not two themes): 2 below ~64 papers, 8 from ~4,096.
    low = min(max(MIN_THEMES, int(math.log2(n)) - 4), MAX_THEMES - 2)
    best_k, best_score = low, -2.0
    for k in range(low, min(MAX_THEMES, n // 2) + 1):
        labels = kmeans(vectors[sample], k, seed)
        if k > low and np.bincount(labels, minlength=k).min() < MIN_THEME_PAPERS:
            continue  # one paper is no theme: a paper apart from the rest joins its nearest
        score = silhouette(vectors[sample], labels)
        if score > best_score + 1e-6:
            best_k, best_score = k, score
    return kmeans(vectors, best_k, seed)


# ---------------------------------------------------------------- naming (offline)

def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _GENERIC]


def _phrases(text: str) -> list[tuple[str, str]]:
    """Every candidate key phrase of a text, lower-cased and as written: runs of two or three
    content words that no function word, generic word or punctuation breaks ("spiking neural
    networks", "LLM agents")."""
    found: list[tuple[str, str]] = []
    for run in _PHRASE_BREAK.split(strip_marks(text)):
        words = _WORD.findall(run)
        lowered = [w.lower() for w in words]
        for start in range(len(words)):
            for size in (2, 3):
                gram = lowered[start:start + size]
                content = [w for w in gram if w not in _HEADS]
                if len(gram) < size or any(w in _GENERIC for w in gram[:-1]) \
                        or (gram[-1] in _GENERIC and gram[-1] not in _HEADS) \
                        or len(content) < size - 1 or all(w in _VAGUE for w in content):
                    continue
                found.append((" ".join(gram), " ".join(words[start:start + size])))
    return found


def distinctive_terms(groups: Sequence[Sequence[Paper]], most: int = 3) -> list[list[str]]:
    """For each group, the words that are frequent in it and rare elsewhere (class TF-IDF)."""
    return _distinctive([[set(_words(f"{p.title} {p.text}")) for p in group] for group in groups],
                        most)


def _distinctive(groups: Sequence[Sequence[set[str]]], most: int) -> list[list[str]]:
    counts = [Counter(w for items in group for w in items) for group in groups]
    in_groups = Counter(w for c in counts for w in c)
    names = []
    for group, count in zip(groups, counts, strict=True):
        # A theme's name is shared by its papers: a word of one paper alone names that paper.
        shared = [w for w in count if count[w] >= 2] if len(group) >= 3 else list(count)
        scored = sorted(shared, key=lambda w: (-(count[w] / len(group))
                                               * math.log(1 + len(groups) / in_groups[w]), w))
        names.append(scored[:most])
    return names


def _written(phrase: str, forms: Counter) -> str:
    """A phrase as the papers most often write it (lower case on a tie), without the capitals
    of an acronym's spelling-out ("REPresentation Alignment") or of a section label ("MAIN
    OUTCOME MEASURES"): a name's capitals are those of its acronyms and names."""
    form = max((n, form.islower(), form) for (p, form), n in forms.items() if p == phrase)[2]
    words = form.split()
    shouting = sum(len(w) >= 4 and w.isupper() for w in words) >= 2
    # A spelled-out acronym is title-cased throughout ("REPresentation Alignment"): all of it.
    spelled = any(_ACRONYM_SPELLED.fullmatch(w) for w in words)
    return " ".join(w.lower() if _ACRONYM_SPELLED.fullmatch(w) or (shouting and w.isupper())
                    or (spelled and w.istitle()) else w for w in words)


def theme_names(groups: Sequence[Sequence[Paper]]) -> list[str]:
    """A name a person would write for each group: its most distinctive key phrase, and a
    second one that shares no word with it ("Speech enhancement and audio foundation models").
    A phrase scores by the share of the group using it times its rarity among all the papers
    summarized, and must be used by two of the group's papers (by its one paper in a group of
    one). Where none is, the group's distinctive words name it."""
    found = [[_phrases(f"{p.title}. {p.text}") for p in group] for group in groups]
    docs = [[{phrase for phrase, _ in doc} for doc in group] for group in found]
    everywhere = Counter(phrase for group in docs for doc in group for phrase in doc)
    total = sum(len(group) for group in docs)
    names: list[str] = []
    firsts: set[str] = set()
    given: set[str] = set()
    for group, group_docs, group_found in zip(groups, docs, found, strict=True):
        count = Counter(phrase for doc in group_docs for phrase in doc)
        forms = Counter(occurrence for doc in group_found for occurrence in doc)
        uses = Counter(phrase for doc in group_found for phrase, _ in doc)
        need = min(2, len(group_docs))  # a phrase of one paper names that paper, not a theme
        candidates = [p for p, c in count.items() if c >= need]
        # "neural machine" gives way to "neural machine translation" when nearly as common.
        shared = [p for p in candidates if not any(p in q and p != q and uses[q] >= 0.8 * uses[p]
                                                   for q in candidates)]
        # "graph neural" gives way to its endings ("graph neural network", "... networks") when
        # together they are nearly as common: a name does not stop before its noun. (Counting
        # each ending apart, or only those two papers share, kept "Natural language" and
        # "Stochastic gradient": the judged namer sums them all, bench/README.md session 26.)
        endings = _endings(uses)
        shared = [p for p in shared if endings[p] < 0.8 * uses[p]]
        # Ties go to the phrase the papers repeat most ("speech enhancement", not the
        # "enhancement removes noise" of one sentence).
        ranked = sorted(shared, key=lambda p: (
            -count[p] / len(group_docs) * math.log((total + 1) / everywhere[p]), -uses[p], p))
        if not ranked:
            # No phrase two of its papers share: the phrases its papers repeat (a term, not a
            # chance run of words), the most repeated and rarest elsewhere first.
            ranked = sorted((p for p in count if uses[p] >= 2), key=lambda p: (
                -uses[p] * math.log((total + 1) / everywhere[p]), p))
        if not ranked:
            words = distinctive_terms([group])[0]
            names.append(", ".join(words).capitalize() if words else OTHER)
            continue
        # Two groups are not given one name: the later takes its next phrase; where its name is
        # still another group's, another second phrase, or its distinctive words, tell it apart.
        first = next((p for p in ranked if p not in firsts), ranked[0])
        firsts.add(first)
        seconds = [p for p in ranked if p != first and not set(p.split()) & set(first.split())]
        name = _named(first, next((p for p in seconds if p in ranked[:4]), None), forms)
        if name.lower() in given:
            name = next((n for n in (_named(first, p, forms) for p in seconds)
                         if n.lower() not in given), name)
        if name.lower() in given:
            name = f"{name} ({', '.join(distinctive_terms([group])[0][:2])})"
        given.add(name.lower())
        names.append(name)
    return names


def _named(first: str, second: str | None, forms: Counter) -> str:
    name = _written(first, forms) + (f" and {_written(second, forms)}" if second else "")
    return name[:1].upper() + name[1:]


def _endings(uses: Counter) -> Counter:
    """Each two-word phrase's uses as the start of a three-word one."""
    endings: Counter = Counter()
    for phrase, n in uses.items():
        words = phrase.split(" ")
        if len(words) == 3:
            endings[f"{words[0]} {words[1]}"] += n
    return endings


# ---------------------------------------------------------------- writing

def _extractive_paragraph(theme: Theme, numbers: dict[str, int], terms: set[str]) -> str:
    lines = []
    for paper in theme.papers[:PER_THEME]:
        # What the paper contributes ("We propose …"), else the sentence nearest the topic.
        sentence = strip_marks(contribution_sentence(paper.text) or best_sentence(paper.text,
                                                                                  terms))
        lines.append(f"**{paper.title}**: {sentence} {_cite([numbers[paper.paper_id]])}")
    return " ".join(lines)


class _LLMCounter:
    """Counts calls and (approximate) tokens across the threads of one summary."""

    def __init__(self, llm: LLM, count_tokens: Callable[[str], int]) -> None:
        self.llm, self.count_tokens, self.calls, self.tokens = llm, count_tokens, 0, 0
        self._lock = threading.Lock()

    def complete(self, prompt: str) -> str:
        reply = self.llm.complete(prompt).text
        with self._lock:
            self.calls += 1
            self.tokens += self.count_tokens(prompt) + self.count_tokens(reply)
        return reply


def summarize(retriever: Retriever, topic: str | None, llm: LLM | None = None,
              max_papers: int | None = None,
              on_progress: Callable[[str], None] | None = None,
              filters: Filters | None = None, screen: str | None = None,
              on_screen: Progress | None = None) -> Summary:
    """A themed summary of the papers on `topic`, or of the whole collection when None (only
    the papers `filters` admits: a venue, a year, a category). With an LLM, a topic's
    candidates are screened by it first (`screen`: --screen, default RAGQA_SCREEN)."""
    progress = on_progress or (lambda message: None)
    screener = screener_for(retriever, llm, screen, offline=lambda: _select_papers(
        retriever, topic, max_papers, filters, hits_only=True)) if topic else None
    screening = None
    if screener is not None:
        ranked = _topic_search(retriever, topic, k=2 * screener.limit, cut=False,
                               sentences=False, filters=filters).hits
        screened = screener.screen(topic, ranked, on_screen)
        screening = screened.screening
        papers = [h.paper for h in screened.hits][:max_papers]
    else:
        papers = _select_papers(retriever, topic, max_papers, filters)
    # "Summarize the papers on audio and speech." is a summary of "audio and speech".
    topic = strip_frame(topic) if topic else topic
    language = detect_language(topic) if topic else "English"
    notice = message("notice.screening_failed", language, reason=screening.failure) \
        if screening and screening.mode == "offline" else ""
    if not papers:
        total = retriever.total_papers
        return Summary(topic or "", "llm" if llm else "extractive", [],
                       message("answer.none", language, total=total,
                               topic=shown_topic(topic or "", language)), [], 0,
                       language=language, screening=screening, notice=notice)
    progress(f"Clustering {len(papers)} papers")
    vectors = retriever.store.paper_vectors([p.paper_id for p in papers])
    labels = choose_themes(vectors)
    themes = _themes(papers, vectors, labels)
    pool = [p for theme in themes for p in theme.papers[:PER_THEME]]
    numbers = {p.paper_id: n for n, p in enumerate(pool, start=1)}
    summary = Summary(topic or "", "llm" if llm else "extractive", themes, "", pool,
                      len(papers), language=language, screening=screening, notice=notice)
    if llm is None:
        terms = set(lexical.terms(topic, query=True)) if topic else set()
        groups = [t.papers for t in themes]
        for theme, name, words in zip(themes, theme_names(groups), distinctive_terms(groups),
                                      strict=True):
            theme.name = message("summary.other", language) if name == OTHER else name
            theme.text = _extractive_paragraph(theme, numbers, terms | set(words))
        summary.overview = _overview(summary)
        return _renumber(summary)
    progress(f"Writing {len(themes)} themes")
    return _write_with_llm(summary, numbers, llm, retriever)


def _write_with_llm(summary: Summary, numbers: dict[str, int], llm: LLM,
                    retriever: Retriever) -> Summary:
    """Theme names and paragraphs (bounded concurrency), then an overview of the paragraphs:
    summaries of clusters, then a summary of the summaries."""
    counter = _LLMCounter(llm, retriever.store.encoder.count_tokens)
    with ThreadPoolExecutor(max_workers=retriever.store.settings.llm_concurrency) as executor:
        summary.dropped_citations = sum(executor.map(
            lambda t: _write_theme(t, numbers, counter, retriever, summary.language),
            summary.themes))
    _renumber(summary)
    overview = counter.complete(load_prompt("overview", retriever.store.settings).fill(
        topic=summary.topic or "the whole collection",
        themes="\n\n".join(f"## {t.name}\n{t.text}" for t in summary.themes)))
    summary.overview = " ".join(CITATION.sub("", overview).split())
    summary.llm_calls, summary.tokens = counter.calls, counter.tokens
    return summary


# Citations are carried as private-use markers until the end, so that brackets quoted from an
# abstract ("the range [0, 100]") are never mistaken for them.
_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKER = re.compile(_OPEN + r"([\d,]+)" + _CLOSE)


def _cite(numbers: Sequence[int]) -> str:
    return _OPEN + ",".join(map(str, numbers)) + _CLOSE


def _renumber(summary: Summary) -> Summary:
    """References in order of first citation across the themes; only cited papers listed."""
    order: dict[int, int] = {}

    def renumber(match: re.Match) -> str:
        numbers = sorted({order.setdefault(int(x), len(order) + 1)
                          for x in match.group(1).split(",")})
        return "[" + ", ".join(map(str, numbers)) + "]"

    for theme in summary.themes:
        theme.text = _MARKER.sub(renumber, theme.text)
    pool = summary.references
    summary.references = [pool[old - 1] for old, _ in sorted(order.items(), key=lambda kv: kv[1])]
    return summary


def _topic_search(retriever: Retriever, topic: str, **options) -> SearchResult:
    """A summary's topic searched as `ask` searches a question: one in another language with
    the collection's multilingual vectors and their own list decision (Retriever.search_foreign:
    the English model would read "脉冲神经网络" as no topic at all), an English one by the list
    model."""
    if detect_language(topic) != "English":
        return retriever.search_foreign(topic, **options)
    return retriever.search(topic, rule=LIST_MODEL, **options)


def _select_papers(retriever: Retriever, topic: str | None, max_papers: int | None,
                   filters: Filters | None = None, hits_only: bool = False) -> list:
    """The papers of `topic` as the list decision keeps them (their hits with `hits_only`),
    or of the whole collection (a sample of `max_papers`)."""
    if topic:
        # the one-tier list, not the long tail of the tiers (fitted.whole_list)
        hits = whole_list(_topic_search(retriever, topic, sentences=False,
                                        filters=filters).hits)
        hits = hits[:max_papers] if max_papers else hits
        return hits if hits_only else [h.paper for h in hits]
    assert retriever.lexical is not None
    papers = [p for p in retriever.lexical.all_papers() if not filters or filters.admits(p)]
    if max_papers and len(papers) > max_papers:
        rng = np.random.default_rng(0)
        papers = [papers[i] for i in sorted(rng.choice(len(papers), max_papers, replace=False))]
    return papers


def _themes(papers: list[Paper], vectors: np.ndarray, labels: np.ndarray) -> list[Theme]:
    themes = []
    for label in sorted(set(labels.tolist())):
        members = np.flatnonzero(labels == label)
        centre = vectors[members].mean(axis=0)
        order = members[np.argsort(-(vectors[members] @ centre))]  # most central first
        themes.append(Theme("", [papers[i] for i in order], size=len(members)))
    themes.sort(key=lambda t: -t.size)
    return themes


def _write_theme(theme: Theme, numbers: dict[str, int], counter: _LLMCounter,
                 retriever: Retriever, language: str = "English") -> int:
    """Name and write one theme; returns how many citations were dropped."""
    settings = retriever.store.settings
    chosen = theme.papers[:PER_THEME]
    hits = [Hit(i, 0.0, 0.0, 0.0, paper=p) for i, p in enumerate(chosen)]
    theme.name = theme_name_of(counter.complete(load_prompt("theme_name", settings).fill(
        sources=sources_block(hits))))
    draft = counter.complete(load_prompt("summarize", settings).fill(
        theme=theme.name, sources=sources_block(hits), language=language))
    # A sentence the model left uncited gets the citation of the abstract sentence that
    # supports it, or is listed as unsupported: no claim passes unchecked.
    draft, repairs, uncited = repair_uncited(normalise_citations(draft, len(hits)), hits,
                                             Evidence(hits, retriever.store.encoder))
    theme.repaired, theme.unsupported = len(repairs), [u["sentence"] for u in uncited]
    checked = check_citations(draft, hits)
    # check_citations numbered by first use within the paragraph; map to the global numbers.
    local = {c.n: numbers[c.paper_id] for c in checked.citations}
    theme.text = CITATION.sub(lambda m: _cite(sorted(local[n] for n in expand_citation(
        m.group(1)))), checked.text)
    return checked.dropped


def theme_name_of(reply: str) -> str:
    """The heading in a model's reply: its first line, without "Theme name:", citations,
    quotes or Markdown marks."""
    line = next((x for x in reply.splitlines() if x.strip()), "")
    line = re.sub(r"^\s*(?:#+\s*)?(?:\*\*)?(?:theme(?: name)?|name|heading)\s*:\s*", "", line,
                  flags=re.IGNORECASE)
    return " ".join(CITATION.sub("", normalise_citations(line, 99)).split()).strip('"#*“”_ ')


def _overview(summary: Summary) -> str:
    language = summary.language
    parts = message("summary.part_separator", language).join(
        message("summary.part", language, name=t.name, size=t.size) for t in summary.themes)
    themes = message("summary.themes", language, count=len(summary.themes))
    if summary.topic:
        return message("summary.overview", language, count=summary.papers_considered,
                       topic=shown_topic(summary.topic, language), themes=themes, parts=parts)
    return message("summary.overview_all", language, count=summary.papers_considered,
                   themes=themes, parts=parts)


def title_of(summary: Summary) -> str:
    if summary.topic:
        return message("summary.title", summary.language,
                       topic=shown_topic(summary.topic, summary.language))
    return message("summary.title_all", summary.language)


def theme_heading(theme: Theme, language: str) -> str:
    return message("summary.theme", language, count=theme.size, name=theme.name)


def as_json(summary: Summary) -> dict:
    def brief(paper: Paper) -> dict:
        return {"paper_id": paper.paper_id, "title": paper.title, "source": paper.source}

    return {
        "topic": summary.topic, "mode": summary.mode,
        "papers_considered": summary.papers_considered, "overview": summary.overview,
        "themes": [{"name": t.name, "size": t.size, "text": t.text,
                    "papers": [brief(p) for p in t.papers], "repaired": t.repaired,
                    "unsupported": t.unsupported,
                    "heading": theme_heading(t, summary.language)} for t in summary.themes],
        "references": [{"n": n, **brief(p)} for n, p in enumerate(summary.references, start=1)],
        "llm_calls": summary.llm_calls, "tokens": summary.tokens,
        "dropped_citations": summary.dropped_citations, "language": summary.language,
        "screening": summary.screening.as_json() if summary.screening else None,
        "notice": summary.notice,
        "labels": {"title": title_of(summary),
                   "references": message("summary.references", summary.language),
                   "mode": summary_mode(summary)},
    }


def summary_mode(summary: Summary) -> str:
    """The line that states how the summary was written, in its language."""
    return message("summary.mode_llm" if summary.mode == "llm" else "summary.mode_extractive",
                   summary.language)


def to_markdown(summary: Summary, images: Sequence[tuple[str, str]] = ()) -> str:
    """The summary as Markdown (`--out`, the page's download): every text from a paper, the
    user or a model is inert (text only: no link, image or HTML can come of it); the only links
    are the references' http(s) pages. `images`: (alt text, a file name beside the Markdown)
    shown after the overview."""
    lines = [f"# {inert_markdown_line(title_of(summary))}", "",
             inert_markdown(summary.overview), ""]
    for alt, name in images:
        lines += [f"![{inert_markdown_line(alt)}]({quote(name)})", ""]
    for theme in summary.themes:
        lines += [f"## {inert_markdown_line(theme_heading(theme, summary.language))}", "",
                  inert_markdown(theme.text), ""]
    lines += [f"## {message('summary.references', summary.language)}", ""]
    # A list, so that each reference keeps its own line in Markdown and in the terminal.
    # Each title links to the paper's page (arXiv, OpenReview forum, DOI) when it has one.
    lines += [f"- [{n}] {reference_link(p.title, p.url)} ({inert_markdown_line(p.source)}, id "
              f"{inert_markdown_line(p.paper_id)})"
              for n, p in enumerate(summary.references, start=1)]
    return "\n".join(lines) + "\n"
