"""Whether a chat turn follows up the last answer, and how: it selects among the last papers
("Which one evaluates on audio?", "Does either use reinforcement learning?"), asks about them
or one of them ("What is its mAP?", "the second one", "the latter"), or leaves them for a new
topic ("What about work on point clouds?").

The decision is a small logistic model over cues of the turn (`CUES`): words that point back
(pronouns, determiners, deictic words), a selecting frame, an ordinal, the wording of a new list
request, and where the turn's own content words occur: in the last answer's papers, against the
rest of the collection. Its weights are fitted on the development half of the blind
conversation sets by bench/reading/fit_followups.py. A selection keeps its content words as the
filter ("evaluates on audio": the papers whose abstract says so).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ragqa.index import lexical
from ragqa.retrieval.question import is_list_question

if TYPE_CHECKING:
    from ragqa.index.lexical import LexicalIndex

# Words that point back at the last answer's papers.
REFERS = re.compile(
    r"\b(?:them|they|these|those|their|theirs|it|its|either|neither|both|the latter|"
    r"the former|(?:this|that|the) (?:paper|work|one|method|model|approach|study|system)|"
    r"the above|of the above)\b", re.IGNORECASE)
# A turn that picks among them: "Which one …", "Which of them …", "Does either …", "Is any of
# these …", "Do any …".
SELECTS = re.compile(
    r"^\s*(?:(?:and|so|ok|okay|now)[,\s]+)?(?:(?:which|what)\s+(?:one|ones|of)\b|"
    r"(?:does|do|is|are|did|was|were|can)\s+(?:any|either|one|some|none|neither)\b)"
    r"|\b(?:any|either|one|some|none|neither|each) of (?:them|these|those|the above)\b",
    re.IGNORECASE)
# "the second one", "the last paper", "the latter".
ORDINAL = re.compile(r"\b(first|second|third|fourth|fifth|last|latter|former|1st|2nd|3rd|4th|"
                     r"5th)\b(?=\s+(?:one|paper|work|of)\b|\s*[?.!,]|$)", re.IGNORECASE)
ORDINALS = {"first": 0, "former": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4,
            "last": -1, "latter": -1, "1st": 0, "2nd": 1, "3rd": 2, "4th": 3, "5th": 4}
# The wording of a request for a new list ("What about papers on X?", "And work on Y?").
_NEW_LIST = re.compile(r"^\s*(?:(?:and|ok|okay|now|also|separately)[,\s]+)*(?:what|how) about\b"
                       r"|\b(?:papers|work|research|studies|anything)\s+(?:on|about|that|which|"
                       r"using|for|in)\b", re.IGNORECASE)
# The words that frame a follow-up rather than say what it is about.
_FRAME_WORDS = re.compile(
    r"\b(?:which|what|one|ones|of|does|do|did|is|are|was|were|any|either|neither|none|some|"
    r"each|and|so|ok|okay|now|tell|me|more|about|the|a|an|paper|papers|work|works|study|"
    r"studies|first|second|third|fourth|fifth|last|latter|former)\b", re.IGNORECASE)

CUES = ("refers", "selects", "ordinal", "new_list", "no_content", "in_last", "lift")


def content_terms(question: str) -> list[str]:
    """The turn's own content words (stemmed): what it says beyond pointing back."""
    text = _FRAME_WORDS.sub(" ", REFERS.sub(" ", question))
    return list(dict.fromkeys(lexical.terms(text, query=True)))


def cues(question: str, last_rows: list[int], index: LexicalIndex | None) -> np.ndarray:
    """The turn's cues (CUES): 0/1 for the wordings; for its content words, the largest share
    of them one of the last papers holds, and the log of how much more often the last papers
    hold them than the whole collection does."""
    terms = content_terms(question)
    out = np.zeros(len(CUES))
    out[0] = bool(REFERS.search(question))
    out[1] = bool(SELECTS.search(question))
    out[2] = bool(ORDINAL.search(question))
    out[3] = bool(_NEW_LIST.search(question)) or is_list_question(question)
    out[4] = not terms
    if terms and index is not None and last_rows and index.size:
        held = index.coverage(terms, last_rows)
        out[5] = float(np.max(held))
        everywhere = np.mean([index.document_frequency(t) for t in terms]) / index.size
        out[6] = math.log((float(np.mean(held)) + 0.01) / (everywhere + 0.01))
    return out


# Fitted by `python bench/reading/fit_followups.py --home DIR` on the development half of
# bench/reading/chats_blind.jsonl (106 turns, 64 follow-ups; a conversation's first question
# after the previous one's papers counts as a switch): 0.991 of the decisions right, 5-fold
# cross-validated.
FOLLOW_WEIGHTS = (2.576, 1.693, 4.257, -3.64, 1.941, 1.108, 0.593)
FOLLOW_BIAS = 0.276


@dataclass(frozen=True)
class Resolution:
    """What a turn does with the last answer's papers: "select" among them, ask "about" them
    (`papers` the ones pointed at: one for an ordinal), or "leave" them (papers empty)."""

    kind: str
    papers: tuple[str, ...] = ()


def follows_up(signals: np.ndarray) -> float:
    """The model's probability that the turn follows up the last answer."""
    z = float(signals @ np.asarray(FOLLOW_WEIGHTS)) + FOLLOW_BIAS
    return 1.0 / (1.0 + math.exp(-z))


def resolve(question: str, last: list[str], index: LexicalIndex | None) -> Resolution:
    """How `question` uses the papers `last` (the last answer's, in its order)."""
    if not last:
        return Resolution("leave")
    rows = [r for r in (index.index_of(pid) for pid in last) if r is not None] if index else []
    if follows_up(cues(question, rows, index)) < 0.5:
        return Resolution("leave")
    ordinal = ORDINAL.search(question)
    if ordinal and not SELECTS.search(question):
        position = ORDINALS[ordinal.group(1).lower()]
        if -len(last) <= position < len(last):
            return Resolution("about", (last[position],))
    if SELECTS.search(question):
        return Resolution("select", tuple(last))
    return Resolution("about", tuple(last))


def selected(question: str, texts: list[str], weights: dict[str, float] | None = None
             ) -> list[int]:
    """Which of the last papers (their titles and abstracts) a selecting turn picks: those
    that hold the most of its content words, each word weighed by `weights` (the
    collection's idf: in "Which of those uses commonsense knowledge like COMET?" the rare
    "COMET" counts most); none when none holds any."""
    terms = set(content_terms(question))
    if not terms:
        return list(range(len(texts)))
    weights = weights or {}
    held = [sum(weights.get(t, 1.0) for t in terms & set(lexical.terms(text))) for text in texts]
    best = max(held, default=0.0)
    return [i for i, n in enumerate(held) if best > 0 and n >= best - 1e-9]


def without_references(question: str) -> str:
    """The turn without the words that point back or select ("Which one evaluates on audio?"
    → "evaluates on audio?"): what to search the last papers for."""
    text = SELECTS.sub(" ", question)
    text = ORDINAL.sub(" ", REFERS.sub(" ", text))
    text = re.sub(r"\b(?:the|of)\s+(?=[?.!,]|\s*$)", " ", text)
    text = " ".join(text.split())
    return text if len(text) >= 3 else question
