"""Screening a question's ranked candidates: batches down the ranking until the relevant
papers end, read by the judge.

How deep (bench/lists/screening.py fits these on the dev sets, docs/benchmarks.md reports
them on held-out folds):
- the first wave reads MIN_DEPTH candidates; a topic of which the judge accepts none there is
  absent, and the list is empty;
- then waves of STOP_AFTER_EMPTY batches, each time re-ordering what is left by what was
  accepted and rejected so far (feedback.rocchio_scores), until a whole wave yields nothing
  accepted, or the limit (RAGQA_SCREEN_MAX, or --screen N) is read;
- a rejected paper as close to the accepted papers' centre as RESCUE_SIMILARITY is kept all the
  same: a judge misses a relevant paper now and then, and a paper that near to the ones it
  accepted is nearly always about the topic too (precision held at 0.99 on the dev sets).
The list is the accepted papers in the first ranking's order. Batches of a wave run at once
(RAGQA_LLM_CONCURRENCY); verdicts already known (cache.VerdictCache) are not asked again.

A weak judge is found out, not assumed strong: the first wave hides DECOYS papers drawn at
random from outside the candidates (attention checks, as crowdsourced judging uses them). A
judge that accepts one of them says yes to papers on other topics (the 1.5B local model
accepts most candidates): reading stops after that first wave, and its verdicts are combined
with the offline decision rather than obeyed (mode "combined"): the list is the offline list,
less the papers the judge rejected that the offline model itself was unsure of (probability
below CERTAIN). With the scripted yes-sayer of bench/lists/screening.py (it accepts 94 % of
the relevant papers and 85 % of the others) every rejection it makes of an offline-listed paper
costs more recall than it gains precision (F1 0.654 against 0.683 offline, NeurIPS 2018), and
the offline lists hold papers of probability 0.9 and more: the combined list is the offline
one, for 80 candidates read.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np

from ragqa.errors import LLMError, UserError
from ragqa.index.lexical import LexicalIndex
from ragqa.models import LLM
from ragqa.resources import DATA_DIR
from ragqa.retrieval.retriever import Retriever
from ragqa.retrieval.types import Hit
from ragqa.screening.cache import VerdictCache, judge_key
from ragqa.screening.feedback import rocchio_scores, unit
from ragqa.screening.judge import BatchReply, Candidate, Judge, LLMJudge, Verdict, candidate_text
from ragqa.sources.paper import Paper
from ragqa.text import split_sentences

# Fitted by bench/lists/screening.py on both dev slices' 84 questions (docs/benchmarks.md,
# "Screening": held out, recall 0.899 / 0.917 at precision 0.982 / 0.951, 143 / 127 read).
MIN_DEPTH = 80
STOP_AFTER_EMPTY = 3
RESCUE_SIMILARITY = 0.775
DECOYS = 3
CERTAIN = 0.5


@dataclass
class Screening:
    """What a screening cost and found: the `screening` object of `ask --json`."""

    judge: str
    candidates: int = 0  # candidates read (by the judge, or from the cache)
    batches: int = 0  # requests sent
    accepted: int = 0  # papers listed: accepted by the judge, or kept by the rescue rule
    rescued: int = 0
    cached: int = 0  # verdicts read from the cache instead of asked
    ignored: int = 0  # numbers in replies outside their batch
    retried: int = 0  # replies that held no verdict and were asked again
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    stopped: str = ""  # absent | no_more | limit | exhausted | weak_judge | judge_failed
    decoys: int = 0  # papers from outside the candidates hidden in the first batches
    decoys_accepted: int = 0
    # judged: the judge's verdicts; combined: the offline list pruned; offline: the judge
    # failed (no usable verdict, a time-out, an error) and the list is the offline one
    mode: str = "judged"
    failure: str = ""  # why the judge failed (mode offline), one line for people

    def as_json(self) -> dict:
        return {**asdict(self), "seconds": round(self.seconds, 2)}


@dataclass
class Screened:
    hits: list[Hit]  # the list: accepted papers in ranked order
    screening: Screening
    # what the judge accepted (and the rescue kept), whichever mode made the list
    judged: list[Hit] = field(default_factory=list)
    read: list[str] = field(default_factory=list)  # the paper ids the judge read (no decoys)


Progress = Callable[[int, int], None]  # (candidates read, candidates it expects to read)


@dataclass
class Screener:
    judge: Judge
    limit: int
    batch_size: int
    concurrency: int
    count_tokens: Callable[[str], int]
    text_tokens: int
    vectors_of: Callable[[Sequence[Hit]], np.ndarray]
    cache: VerdictCache | None = None
    # (how many, papers to avoid) -> papers drawn from outside the candidates
    decoys_of: Callable[[int, set[str]], list[Hit]] | None = None
    # the offline decision's list, for a judge that accepted a decoy
    offline: Callable[[], list[Hit]] | None = None
    decoys: int = DECOYS
    min_depth: int = MIN_DEPTH
    stop_after_empty: int = STOP_AFTER_EMPTY
    rescue_similarity: float = RESCUE_SIMILARITY  # > 1: no rescue
    certain: float = CERTAIN  # a weak judge's rejection does not remove a paper this probable

    def screen(self, question: str, ranked: Sequence[Hit],
               on_progress: Progress | None = None) -> Screened:
        started = time.monotonic()
        stats = Screening(self.judge.name)
        pool = list(ranked)
        vectors = unit(self.vectors_of(pool)) if pool else np.zeros((0, 1))
        candidates = len(pool)  # decoys join the pool past them
        order = list(range(candidates))  # positions in `pool` not read yet, in reading order
        verdicts: dict[int, Verdict] = {}
        blocks: list[list[int]] = []
        progress = on_progress or (lambda done, expected: None)
        decoys: dict[int, Verdict] = {}
        while order and len(verdicts) < self.limit:
            first = not blocks
            wave = self._next_wave(order, len(verdicts), not first)
            blocks.extend(wave)
            read_wave = self._hide_decoys(pool, wave, stats) if first and self.decoys_of \
                else wave
            progress(len(verdicts), self._expected(len(verdicts), candidates))
            try:
                wave_verdicts = self._read(question, pool, read_wave, stats, candidates)
            except LLMError as exc:
                if self.offline is None:
                    raise
                return self._offline_after(exc, stats, started, pool, verdicts)
            for i, verdict in wave_verdicts.items():
                (decoys if i >= candidates else verdicts)[i] = verdict
            stats.candidates = len(verdicts)
            progress(len(verdicts), self._expected(len(verdicts), candidates))
            stats.stopped = self._stop(verdicts, blocks, order)
            if decoys and any(v.accepted for v in decoys.values()) and self.offline:
                stats.stopped = "weak_judge"  # its verdicts only prune the offline list
            if stats.stopped:
                break
            order = self._reorder(order, vectors, verdicts, candidates)
        stats.stopped = stats.stopped or ("limit" if order else "exhausted")
        stats.decoys_accepted = sum(v.accepted for v in decoys.values())
        judged = kept = self._kept(pool, vectors, verdicts, stats)
        if stats.decoys_accepted and self.offline is not None:
            stats.mode = "combined"
            rejected = {pool[i].paper.paper_id for i, v in verdicts.items() if not v.accepted}
            kept = [h for h in self.offline()
                    if h.paper.paper_id not in rejected or h.probability >= self.certain]
        stats.accepted, stats.seconds = len(kept), time.monotonic() - started
        return Screened(kept, stats, judged, [pool[i].paper.paper_id for i in verdicts])

    def _offline_after(self, failure: LLMError, stats: Screening, started: float,
                       pool: list[Hit], verdicts: dict[int, Verdict]) -> Screened:
        """The offline list, when the judge failed: a model that cannot write the verdict's
        JSON, times out or errors costs the question its screening, never its answer (issue
        45). The verdicts it did give stay in the cache; none of them changes the list."""
        assert self.offline is not None
        kept = self.offline()
        stats.mode, stats.stopped, stats.failure = "offline", "judge_failed", str(failure)
        stats.candidates = len(verdicts)
        stats.accepted, stats.seconds = len(kept), time.monotonic() - started
        return Screened(kept, stats, [], [pool[i].paper.paper_id for i in verdicts])

    def _next_wave(self, order: list[int], read: int, started: bool) -> list[list[int]]:
        """The next batches to read, taken off the front of `order`: MIN_DEPTH candidates at
        first, STOP_AFTER_EMPTY batches after, never past the limit."""
        wanted = (max(self.min_depth, self.batch_size) if not started
                  else self.stop_after_empty * self.batch_size)
        wanted = min(wanted, self.limit - read, len(order))
        taken, order[:] = order[:wanted], order[wanted:]
        return [taken[i:i + self.batch_size] for i in range(0, len(taken), self.batch_size)]

    def _hide_decoys(self, pool: list[Hit], wave: list[list[int]], stats: Screening
                     ) -> list[list[int]]:
        """The wave with a decoy in each of its first batches, at a place its position in
        the batch does not give away; the decoys join `pool` past the candidates."""
        assert self.decoys_of is not None
        drawn = self.decoys_of(self.decoys, {h.paper.paper_id for h in pool})
        out = [list(block) for block in wave]
        for j, decoy in enumerate(drawn[:len(out)]):
            pool.append(decoy)
            block = out[j]
            block.insert(int(decoy.index) % (len(block) + 1), len(pool) - 1)
        stats.decoys = min(len(drawn), len(out))
        return out

    def _expected(self, read: int, available: int) -> int:
        """About how many candidates this screening reads: for the progress line."""
        return min(self.limit, available,
                   max(self.min_depth, read + self.stop_after_empty * self.batch_size))

    def _read(self, question: str, pool: list[Hit], wave: list[list[int]],
              stats: Screening, candidates: int) -> dict[int, Verdict]:
        """The verdicts on the wave's papers (decoys from `candidates` on): the cache's, then
        the judge's (batches at once), kept in the cache."""
        ids = {i: pool[i].paper.paper_id for block in wave for i in block}
        read = {i: self._candidate(pool[i]) for i in ids}
        known = self.cache.get(question, read.values()) if self.cache else {}
        stats.cached += sum(pid in known for i, pid in ids.items() if i < candidates)
        batches = [[read[i] for i in block if ids[i] not in known] for block in wave]
        batches = [b for b in batches if b]
        with ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(batches)))) as run:
            replies: list[BatchReply] = list(run.map(
                lambda batch: self.judge.judge(question, batch), batches))
        fresh: dict[str, Verdict] = {}
        for reply in replies:
            stats.batches += 1
            stats.prompt_tokens += reply.prompt_tokens
            stats.completion_tokens += reply.completion_tokens
            stats.ignored += reply.ignored
            stats.retried += reply.retried
            fresh.update(reply.verdicts)
        if self.cache and fresh:
            self.cache.put(question, {read[i]: fresh[pid] for i, pid in ids.items()
                                      if pid in fresh})
        every = {**known, **fresh}
        return {i: every.get(pid, Verdict(False)) for i, pid in ids.items()}

    def _candidate(self, hit: Hit) -> Candidate:
        paper = hit.paper
        return Candidate(paper.paper_id, paper.title,
                         candidate_text(paper.title, paper.text, self.text_tokens,
                                        self.count_tokens))

    def _stop(self, verdicts: dict[int, Verdict], blocks: list[list[int]],
              order: list[int]) -> str:
        if not any(v.accepted for v in verdicts.values()):
            return "absent"
        last = blocks[-self.stop_after_empty:] if len(verdicts) >= self.min_depth else []
        if last and not any(verdicts[i].accepted for block in last for i in block):
            return "no_more"
        if not order:
            return "exhausted"
        return "limit" if len(verdicts) >= self.limit else ""

    def _reorder(self, order: list[int], vectors: np.ndarray, verdicts: dict[int, Verdict],
                 total: int) -> list[int]:
        accepted = [i for i, v in verdicts.items() if v.accepted]
        rejected = [i for i, v in verdicts.items() if not v.accepted]
        if not accepted or not order:
            return order
        scores = rocchio_scores(vectors[order], order, total, vectors[accepted],
                                vectors[rejected])
        return [order[j] for j in np.argsort(-scores, kind="stable")]

    def _kept(self, pool: list[Hit], vectors: np.ndarray, verdicts: dict[int, Verdict],
              stats: Screening) -> list[Hit]:
        """The accepted papers and the rescued ones, in ranked order, each with its sentence:
        the judge's quote where the abstract holds it, else the extractive best sentence."""
        accepted = sorted(i for i, v in verdicts.items() if v.accepted)
        if not accepted:
            return []
        centre = unit(vectors[accepted].mean(axis=0))
        rescued = sorted(i for i, v in verdicts.items()
                         if not v.accepted and float(vectors[i] @ centre) >= self.rescue_similarity)
        stats.rescued = len(rescued)
        kept = []
        for i in sorted([*accepted, *rescued]):
            hit = pool[i]
            quote = quoted_sentence(hit.paper.text, verdicts[i].quote)
            if quote:
                hit.best_sentence = quote
            kept.append(hit)
        return kept


def quoted_sentence(text: str, quote: str) -> str:
    """The abstract's sentence that the judge's quote is (or is part of), or "" when the
    abstract holds no such words: a quote is shown only as the paper wrote it."""
    wanted = _plain(quote)
    if len(wanted) < 12:
        return ""
    for sentence in split_sentences(text):
        if wanted in _plain(sentence):
            return sentence
    return ""


def _plain(text: str) -> str:
    return " ".join("".join(c.lower() if c.isalnum() else " " for c in text).split())


def depth_limit(choice: str, default: int) -> int | None:
    """--screen / RAGQA_SCREEN: None for off, else the most candidates to read; `default` is
    RAGQA_SCREEN_MAX, what auto reads and the most a number may ask for. A number above it is
    refused, not clamped, by every face alike (the CLI's operator included): the limit bounds
    what one question spends of the operator's LLM, a client of a server must not raise it,
    and a refusal says so where a clamp would read fewer candidates than asked in silence."""
    value = (choice or "auto").strip().lower()
    if value == "off":
        return None
    if value == "auto":
        return default
    if value.isdigit() and int(value) > 0:
        if int(value) > default:
            raise ValueError(f"screen {int(value)} is over the most candidates a question "
                             f"may have read, {default} (RAGQA_SCREEN_MAX): ask for {default} "
                             "or fewer")
        return int(value)
    raise ValueError(f"--screen takes auto, off or a number of candidates, not {choice!r}")



def screener_for(retriever: Retriever, llm: LLM | None, choice: str | None,
                 offline: Callable[[], list[Hit]] | None = None) -> Screener | None:
    """The screener a question gets: the LLM as judge when there is one and screening is not
    off (`choice`: --screen, else RAGQA_SCREEN); None otherwise. `offline`: the question's
    offline list, for a judge found weak."""
    settings = retriever.store.settings
    try:
        limit = depth_limit(choice or settings.screen, settings.screen_max)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if llm is None or limit is None:
        return None
    judge = LLMJudge(llm, settings)
    lexical = retriever.lexical
    # Another endpoint, model or prompt is another judge (hashed: the file holds no address).
    identity = judge_key(judge.name, llm.description, settings.openai_base_url,
                         str(settings.llm_gguf or ""), judge.prompt.template)
    cache = VerdictCache(settings.home / "screening" / "verdicts.sqlite", retriever.store.name,
                         identity)
    return Screener(judge, limit, settings.screen_batch, settings.llm_concurrency,
                    retriever.store.encoder.count_tokens, settings.screen_tokens,
                    lambda hits: retriever.paper_vectors([h.index for h in hits]), cache,
                    decoys_of=(lambda n, avoid: random_papers(lexical, n, avoid)) if lexical
                    else None, offline=offline)


def random_papers(lexical: LexicalIndex, n: int, avoid: set[str]) -> list[Hit]:
    """`n` papers of the collection outside `avoid`, drawn by a seed of `avoid` (the same
    candidates get the same decoys: a run can be repeated). A collection too small to have
    them (every paper is a candidate) gets abstracts on other subjects than machine learning
    (ragqa/data/decoys.tsv: irrigation, tithes, glacial till, ...) for the rest."""
    seed = int(hashlib.sha256("\n".join(sorted(avoid)).encode()).hexdigest()[:8], 16)
    rows = np.random.default_rng(seed).permutation(lexical.size)[:n + len(avoid)]
    ids = lexical.paper_ids_by_index(rows)
    chosen = [int(r) for r, pid in zip(rows, ids, strict=True) if pid not in avoid][:n]
    drawn = [Hit(row, 0.0, 0.0, 0.0, paper=paper)
             for row, paper in zip(chosen, lexical.papers_by_index(chosen), strict=True)]
    others = off_topic_papers()
    start = seed % len(others)
    return drawn + [others[(start + i) % len(others)] for i in range(n - len(drawn))]


def off_topic_papers() -> list[Hit]:
    """The bundled abstracts that answer no machine-learning question."""
    lines = (DATA_DIR / "decoys.tsv").read_text(encoding="utf-8").splitlines()
    return [Hit(i, 0.0, 0.0, 0.0, paper=Paper(f"decoy-{i}", title, text, "decoys.tsv"))
            for i, (title, text) in enumerate(line.split("\t", 1) for line in lines if line)]
