"""The `Paper` record every layer passes around, and what every reader derives from a source's
text the same way: ids from text, links, titles derived from an abstract, a venue from a header.
Bad input is a `CorpusError` (ragqa/errors.py), located at a file and line."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field

from ragqa.sources.latex import to_text
from ragqa.text import split_sentences

MetaValue = str | int | float | bool

# The longest text and title a paper keeps, in characters as the source wrote them (before LaTeX
# becomes text); longer ones are cut there, at a word, and counted (the "cut" tally). arXiv caps
# an abstract at 1,920 characters: 64 Ki is a whole paper's body, not an abstract. Unbounded, one
# 20 MB "abstract" took 1.6 GB to ingest (converted, chunked and embedded in full).
MAX_TEXT_CHARS = 64 * 1024
MAX_TITLE_CHARS = 1024


@dataclass(frozen=True)
class Paper:
    paper_id: str
    title: str
    text: str
    source: str  # file name + 1-based position, e.g. "000_5a03819fc22e34a3.txt#4"
    authors: str = ""
    venue: str = ""
    year: int | None = None
    url: str = ""
    title_derived: bool = False
    line: int = 0  # where the record starts in its file, for messages
    extra: dict[str, MetaValue] = field(default_factory=dict)
    # The file's resolved path: which file a paper came from, where `source` only names it
    # (two folders may each hold a "corpus.jsonl.gz"). Internal: not in the JSON output.
    source_path: str = ""
    # Ids an earlier version of ragqa gave this paper: a collection that holds it under one of
    # them keeps that id (index/ingest.py `keep_stored_ids`). Internal, like source_path.
    former_ids: tuple[str, ...] = ()

    @functools.cached_property  # asked once per chunk: recomputed, a 10 MB paper was quadratic
    def content_hash(self) -> str:
        """Changes whenever what is embedded or shown changes; not when the paper only moves."""
        payload = json.dumps(
            [self.title, self.text, self.authors, self.venue, self.year, self.url,
             sorted(self.extra.items())],
            ensure_ascii=False, default=str,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    @property
    def code_urls(self) -> list[str]:
        raw = self.extra.get("code_urls", "")
        return [u for u in str(raw).split() if u]


class Tally:
    """A record read and counted, not an error: an entry that is no paper (skipped), or a quirk
    real libraries are full of that ragqa read through. `kind` is one of TALLIES."""

    def __init__(self, kind: str, line: int = 0, key: str = "") -> None:
        assert kind in TALLIES, kind
        self.kind, self.line, self.key = kind, line, key


# kind -> (how the summary names it, whether the record is kept as a paper)
TALLIES: dict[str, tuple[str, bool]] = {
    "without_abstract": ("without an abstract", False),
    "placeholder_abstract": ("with a placeholder abstract (\"Not Available\")", False),
    "duplicate": ("of a paper read before", False),
    "reply": ("OpenReview replies (reviews, decisions, comments)", False),
    "empty_key": ("with an empty key", True),
    "duplicate_key": ("with a key another entry has too", True),
    "repeated_field": ("with a repeated field (its first value read)", True),
    "cut": (f"with a text over {MAX_TEXT_CHARS:,} characters or a title over "
            f"{MAX_TITLE_CHARS:,} (cut there)", True),
}


def cut_text(value: str, limit: int) -> str:
    """`value`, or its first `limit` characters ended at a word and marked "…" as cut."""
    if len(value) <= limit:
        return value
    head = value[:limit - 1]
    space = head.rfind(" ", limit // 2)  # a word boundary, unless the text has none near
    return (head[:space] if space > 0 else head).rstrip() + "…"


def bounded_fields(record: dict, limit: int = MAX_TEXT_CHARS) -> tuple[dict, bool]:
    """`record` with every text value over its limit cut (`cut_text`): a `title` (also an
    OpenReview `content.title.value`) at MAX_TITLE_CHARS, any other text at MAX_TEXT_CHARS;
    and whether any was. A record with nothing to cut is returned as it is, not copied."""
    changed: dict = {}
    for key, value in record.items():
        own = MAX_TITLE_CHARS if key == "title" else limit
        if isinstance(value, str) and len(value) > own:
            changed[key] = cut_text(value, own)
        elif isinstance(value, dict):
            inner, was_cut = bounded_fields(value, own)
            if was_cut:
                changed[key] = inner
    return ({**record, **changed}, True) if changed else (record, False)


def tally_summary(tallies: dict[str, int]) -> str:
    """One line for a read's tallies: "Skipped 40 entries without an abstract, 3 of a paper
    read before; read through 37 entries with an empty key"."""
    def part(kept: bool) -> str:
        kinds = [k for k in TALLIES if tallies.get(k) and TALLIES[k][1] == kept]
        return ", ".join(f"{tallies[k]} {_noun(tallies[k]) if i == 0 and k != 'reply' else ''}"
                         f"{TALLIES[k][0]}" for i, k in enumerate(kinds))
    parts = [f"{verb} {text}" for verb, text in (("skipped", part(False)),
                                                  ("read through", part(True))) if text]
    return "; ".join(parts)[:1].upper() + "; ".join(parts)[1:]


def _noun(count: int) -> str:
    return "entry " if count == 1 else "entries "


# ---------------------------------------------------------------- ids and text normalisation

def normalise_text(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


def text_id(text: str) -> str:
    """The id of a record that has none of its own: same abstract, same id.

    Hashed from the text as the source wrote it (before LaTeX and Markdown become text): the ids
    of collections built before the converter, of saved chats and of the judged sets
    (bench/lists/seeds.qrels.tsv, tests/fixtures/seed_lists.json) stay valid; only the stored
    text of a paper with marks changes, and its content hash re-embeds it once, in place."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()[:16]


# An arXiv id, new style (2301.00001) or old (hep-th/9901001, math.GT/0309136), version dropped.
_ARXIV_ID = re.compile(r"^(?:arxiv:\s*)?(\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?$",
                       re.IGNORECASE)
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_DOI = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)?(10\.\d{4,9}/\S+)$", re.IGNORECASE)
_OPENREVIEW_URL = re.compile(r"openreview\.net/(?:forum|pdf)\?id=([\w-]+)")


def arxiv_id(value: str) -> str | None:
    """"arXiv:2301.00001v2" -> "2301.00001"; None for what is no arXiv id."""
    match = _ARXIV_ID.match(value.strip())
    return match.group(1) if match else None


def doi_of(value: str) -> str | None:
    """A DOI as written anywhere ("https://doi.org/10.1/X", "doi:10.1/x") -> "10.1/x" (DOIs are
    case-insensitive); None for what is none."""
    match = _DOI.match("".join(value.split()))
    return match.group(1).lower().rstrip(".") if match else None


def openreview_id(url: str) -> str | None:
    match = _OPENREVIEW_URL.search(url)
    return match.group(1) if match else None


def arxiv_of_doi(doi: str) -> str | None:
    """The arXiv id of arXiv's own DOI ("10.48550/arXiv.2301.00001"), else None."""
    match = _ARXIV_DOI.match(doi_of(doi) or "")
    return arxiv_id(match.group(1)) if match else None


def identified_id(*, arxiv: str = "", doi: str = "", openreview: str = "") -> str | None:
    """The id a paper's source says identifies it: its arXiv id (also from an arXiv DOI, so the
    arXiv snapshot's record and a library's entry of one paper are one paper), its OpenReview id,
    its DOI; None when it names none."""
    found = (arxiv_id(arxiv) if arxiv else None) or arxiv_of_doi(doi)
    return found or (openreview.strip() or None) or doi_of(doi)


def entry_id(title: str, text: str, year: int | None) -> str:
    """The id of an entry that names no identifier: its title, text and year hashed, so that
    book chapters sharing the book's blurb are different papers."""
    return text_id(f"{title}\n{text}\n{year or ''}")


_URL = re.compile(r"https?://[^\s<>()\[\]{}\"']+")


def extract_urls(text: str) -> list[str]:
    # Trailing punctuation and Markdown emphasis (`_https://x/CPO_.`) are not part of a link.
    return [u.rstrip(".,;:!?*_`'\"”’。，；") for u in _URL.findall(text)]


# ---------------------------------------------------------------- derived titles

def strip_marks(text: str) -> str:
    """Markdown emphasis and LaTeX removed: `**DVPD**`, `$\\textbf{EGG}$`, `$2.13\\times$` read
    "DVPD", "EGG", "2.13×" (one converter for every format: `ragqa.sources.latex`)."""
    return to_text(text)


# The authors' own proposal: "we propose", "this work introduces", "here we present", "we
# further develop a novel"; what follows the match is what they propose. Not "we extend", "we
# generalize" or "we build on": what follows those is what the work builds on (with them, 518
# of the 32,749 derived titles changed, most for the worse: session 32; without "build on",
# "On recent work" is no title). One detector for an abstract's contribution sentence and
# derived title (below) and for the fact answer's "proposes" signal and quoted method
# (answering/facts.py).
PROPOSES = re.compile(
    r"\b(?:we|this (?:paper|work)|here we)\s+(?:\w+\s+){0,2}?"
    r"(?:introduce|present|propose|develop|release|build(?!s?\s+(?:on|upon)\b)|design|"
    r"construct|call|name)s?\b\s*(?:a new |a novel |the novel )?",
    re.IGNORECASE,
)
_NAMED = re.compile(r"\b(?:called|named|dubbed|termed|coined)\s+", re.IGNORECASE)
# A proposal that points back names nothing of its own.
_POINTING = frozenset({"this", "these", "that", "those", "it", "them", "such"})
# A derived title's length, and the words a contribution or subject phrase may have.
TITLE_CHARS = 80
_PHRASE_WORDS = 9
# Where the noun phrase of "we propose a … " ends.
_CLAUSE_END = re.compile(r"[,;:.(]|\s(?:that|which|whose|where|to|by|using|via|together|and "
                         r"(?:a|an|the|show|demonstrate|evaluate|prove)|as a|in order)\s",
                         re.IGNORECASE)
_ARTICLE = re.compile(r"^(?:a|an|the|our|two|three|new|novel)\s+(?:new\s+|novel\s+)?",
                      re.IGNORECASE)
# The verb of an abstract's first sentence, where its subject ends.
_FIRST_VERB = re.compile(
    r"\s(?:is|are|was|were|has|have|had|can|could|may|might|must|will|would|remains?|"
    r"shows?|enables?|requires?|relies|rely|struggles?|suffers?|achieves?|provides?|"
    r"allows?|offers?|plays?|poses?|faces?|depends?|often|typically|commonly|increasingly|"
    r"usually)\b", re.IGNORECASE)
# Bounded and without nested quantifiers: a long unclosed "(" must not backtrack for minutes.
_ACRONYM_CANDIDATE = re.compile(r"\(([^()\s]{2,40}(?: [A-Z][\w-]{0,40})?)\)")
_NAME_TOKEN = re.compile(r"^[^\s,;:()]+")
# Titles come from an abstract's start. Scanning all of a 10 MB "abstract" took minutes: every
# unnamed "we propose" re-read the text after it (quadratic).
_TITLE_SCAN = 20_000


def _find_acronym(text: str) -> str | None:
    """The first "(XYZ)" in text that reads as a name: two capitals or a capital and a digit."""
    for match in _ACRONYM_CANDIDATE.finditer(text):
        inner = match.group(1)
        if sum(ch.isupper() for ch in inner) >= 2 or (
                any(ch.isupper() for ch in inner) and any(ch.isdigit() for ch in inner)):
            return inner
    return None


def _looks_like_name(token: str, followed_by: str) -> bool:
    core = token.strip(".-")
    if len(core) < 2 or not any(ch.isalpha() for ch in core):
        return False
    if any(ch.isupper() for ch in core[1:]) or any(ch.isdigit() for ch in core):
        return True
    if not core.isascii() and "-" in core:  # e.g. τ-Voice
        return True
    # A single capitalised word directly followed by "," or "(" after "we introduce".
    return core[0].isupper() and followed_by[:1] in (",", "(")


def _name_after(phrase: str) -> str | None:
    phrase = phrase.lstrip()
    clause = re.split(r",|;|\.\s| which | that | to | for |: ", phrase, maxsplit=1)[0]
    acronym = _find_acronym(clause)
    if acronym:
        return acronym
    token = _NAME_TOKEN.match(phrase)
    if token and _looks_like_name(token.group(0), phrase[token.end():]):
        return token.group(0).rstrip(".")
    # "a unified framework: adaptive ... gradients (A2SG)": the name follows a colon.
    head = re.split(r"\.\s", phrase, maxsplit=1)[0][:200]
    if ":" in head:
        acronym = _find_acronym(head.split(":", 1)[1].split(",")[0])
        if acronym:
            return acronym
    return None


def derive_title(text: str, max_words: int = 10) -> str:
    """A short human title for an abstract that has none: the system it names ("We introduce
    τ-Voice, …"), else its contribution ("We propose a goal-oriented clarification framework
    that …" → "Goal-oriented clarification framework"), else the subject of its first sentence
    ("Predictive coding (PC) is …" → "Predictive coding (PC)"), else its first words. Never a
    whole long sentence: at most `max_words` words and TITLE_CHARS characters."""
    plain = strip_marks(text[:_TITLE_SCAN])
    for pattern in (PROPOSES, _NAMED):
        for match in pattern.finditer(plain):
            name = _name_after(plain[match.end():])
            if name:
                return name
    first_sentence = re.split(r"(?<=[.!?])\s", plain, maxsplit=1)[0].rstrip(".")
    phrase = _contribution(plain) or _subject(first_sentence)
    if phrase:
        return phrase
    words = first_sentence.split() or plain.split() or ["Untitled"]
    if len(words) <= max_words and len(first_sentence) <= TITLE_CHARS:
        return " ".join(words)
    return _shorten(" ".join(words[:max_words])) + "…"


def contribution_sentence(text: str) -> str | None:
    """The sentence that states what the abstract contributes ("We propose …", "This work
    introduces …"), or None."""
    return next((s for s in split_sentences(text) if PROPOSES.search(s)), None)


def _contribution(plain: str) -> str | None:
    """The noun phrase after the first "we propose / this work introduces …", if it reads as
    one: "a low-overhead compatibility certificate for learned operator pairs, …" →
    "Low-overhead compatibility certificate for learned operator pairs"."""
    match = PROPOSES.search(plain)
    if not match:
        return None
    phrase = _CLAUSE_END.split(plain[match.end():].lstrip(), maxsplit=1)[0]
    phrase = _ARTICLE.sub("", phrase).strip(" :-")
    words = phrase.split()
    if not 2 <= len(words) <= _PHRASE_WORDS or not words[0][:1].isalpha() \
            or words[0].lower() in _POINTING:  # "we extend this work in two directions"
        return None
    return _shorten(phrase[:1].upper() + phrase[1:])


def _subject(sentence: str) -> str | None:
    """What the first sentence is about: the words before its verb ("Reinforcement
    fine-tuning (RFT) has shown promise …" → "Reinforcement fine-tuning (RFT)")."""
    head = _FIRST_VERB.split(sentence, maxsplit=1)
    if len(head) < 2:
        return None
    words = head[0].split()
    if not 2 <= len(words) <= _PHRASE_WORDS or re.search(r"\b(?:we|our|this|these)\b",
                                                          head[0], re.IGNORECASE):
        return None
    return _shorten(head[0].strip(" ,;:"))


def _shorten(title: str) -> str:
    """At most TITLE_CHARS characters, cut at a word."""
    if len(title) <= TITLE_CHARS:
        return title
    return title[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(",;:")


# ---------------------------------------------------------------- venues

# "ICML 2026 Papers", "NeurIPS 2025 Accepted Papers", "ACL 2024 论文", "ICLR 2026 (oral)",
# "Accepted papers at EMNLP 2023", "NeurIPS'25"
_HEADER_VENUE = re.compile(r"([A-Za-z][A-Za-z&\-]*)\s*(?:'?(\d{4})|'(\d{2}))(?!\d)")


def venue_from_header(header: str) -> tuple[str, int | None]:
    match = _HEADER_VENUE.search(header)
    if not match:
        return header.strip(), None
    return match.group(1), int(match.group(2) or f"20{match.group(3)}")

