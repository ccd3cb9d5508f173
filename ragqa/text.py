"""Untrusted text (abstracts, titles, LLM answers, error messages) made inert for a terminal:
an abstract must not be able to move the cursor or rewrite the user's screen; for Markdown that
a viewer renders (no link, image or HTML can come of it); for a spreadsheet (no formula). Kept
apart from render.py so that what needs only this (error lines, JSON output) does not import
rich."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Whole escape sequences (CSI, 7-bit or the one-character C1 form, and OSC), so that their
# parameters ("[2J", "]52;c;...") do not stay behind as text once ESC is dropped.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,2048}(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")


# What a terminal acts on that json.dumps(ensure_ascii=False) leaves raw (it escapes only
# U+0000-U+001F): DEL, the C1 controls (U+009B is a one-character CSI), bidi overrides.
_JSON_RAW_CONTROL = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_text(payload: Any, indent: int | None = None) -> str:
    """JSON for stdout: every control character escaped as \\uXXXX (the same data to a parser;
    inert in a terminal). Outside strings JSON is ASCII, so the substitution stays in them."""
    text = json.dumps(payload, ensure_ascii=False, indent=indent, default=str)
    return _JSON_RAW_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def safe(text: str) -> str:
    """Drop escape sequences and control characters (ESC, BEL, C1, bidi overrides); keep
    newlines and tabs."""
    return _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", text))


def clean_question(text: str) -> str:
    """A question as typed, minus what a terminal or a paste may have slipped into it:
    escape sequences, control characters, runs of whitespace (they would only add noise to
    retrieval). Empty when nothing is left."""
    return " ".join(safe(text).split())


# What cuts sentences: a snapshot records it, since the terms of the sentences it keeps are only
# good for the splitter that cut them. Change it with _CONTINUES or sentencex's pin.
SENTENCE_SPLITTER = "sentencex 1.0.32; a plain lower-case word continues (1)"


def sentence_splitter() -> str:
    return SENTENCE_SPLITTER


# Where a long abstract's chunks may be cut: after . ! or ? and a space, before what starts a
# sentence. Not split_sentences: chunks keep the cuts their vectors were made with, and every
# model fitted on those vectors (the list decision, the claims' cut); new cuts would re-embed
# every long abstract of every collection and move all of them. Linear (no backtracking).
_CHUNK_CUT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[$*τ])")


def chunk_pieces(text: str) -> list[str]:
    """A long abstract in the pieces its chunks are packed from (ingest.chunker)."""
    return [s.strip() for s in _CHUNK_CUT.split(text) if s.strip()]


# A piece that starts with a plain lower-case word goes on the sentence before it: in abstracts
# it follows a stray full stop (scanned papers' "it. is", a typo's "algorithm. called"). A name
# that starts in lower case ("k-means", "t-SNE", "mBERT", "word2vec", "iPhone") starts a
# sentence of its own.
_CONTINUES = re.compile(r"\s*[a-z]+(?![\w-])")


def split_sentences(text: str) -> list[str]:
    """The sentences of a text, each an exact part of it, stripped. Cut by sentencex (a
    maintained library, Rust, any script: "。" ends a sentence), chosen by
    bench/understanding/sentence_splitters.py against sentences cut by hand (docs/benchmarks.md,
    "Sentences"); the regular expression before it broke "et al. (2017)", "e.g. BERT" and
    "Fig. 3" and never cut Chinese. Linear: a megabyte splits in milliseconds."""
    from sentencex import segment

    sentences: list[str] = []
    for piece in segment("en", text):
        if sentences and (not piece.strip() or _CONTINUES.match(piece)):
            sentences[-1] += piece
        else:
            sentences.append(piece)
    return [s.strip() for s in sentences if s.strip()]


def public_endpoint(url: str) -> str:
    """An endpoint as people may see it: scheme, host, port and path, never the user name,
    password, query or fragment (`http://alice:KEY@host/v1?api-key=KEY` -> `http://host/v1`).
    Every answer, log line, saved chat, page and `doctor` shows endpoints through this. A plain
    URL stays as it was, trailing slash aside (it is part of existing indexes' embedder ids)."""
    if not url or not any(mark in url for mark in "@?#"):
        return url.rstrip("/")
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", "")
                      ).rstrip("/")


# Markdown made of untrusted text (a model's answer, a title, a question) is text by
# construction: every character that can open a link, a link definition, an image, an autolink,
# raw HTML, an entity, a code span or a footnote is escaped, whatever the text's layout, so no
# renderer can make any of them. Backslash escapes where CommonMark and Python-Markdown both
# honour them; entities for the rest (Python-Markdown shows the backslash of `\<` or `\|`, and
# marko reads an escaped backtick in a link's text as a code span's).
# `](` gets its parenthesis escaped too, so that no text search finds a link's opening in it.
_MD_ESCAPES = {c: "\\" + c for c in "\\*_{}[]"} | {
    "&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;", "^": "&#94;", "~": "&#126;",
    "`": "&#96;", "](": "\\]\\("}
# A citation (`[1]`, `[2, 5]`) stays as it is, for people and tools that read the file: it could
# only be a link through a definition of its label, and none can come of escaped text. One that
# would be a definition itself (`[1]:`) or a link's text (`[1](`, `[1][`) is escaped.
_MD_SPECIAL = re.compile(r"(?P<citation>\[[0-9]+(?:, ?[0-9]+)*\](?![:(\[]))"
                         r"|\]\(|[\\`*_{}\[\]&<>|^~]")
# What opens a block at a line's start (a heading, a list, a setext underline, a definition):
# harmless, but the model's text must not restructure the document that ragqa writes around it.
_MD_LINE_START = re.compile(r"^(?:(?P<mark>[-+#])|(?P<entity>[=:])|(?P<number>\d+)(?P<dot>[.)]))")
# The `#`s that end a heading's line are no part of its text: every one of them escaped.
_MD_LINE_END = re.compile(r"#+$")
_LINE_BREAK = re.compile(r"\r\n?|\n")  # as CommonMark ends lines
_WEB_URL = re.compile(r"^https?://\S+$", re.IGNORECASE)


def _inert_line(line: str) -> str:
    """One line of text as Markdown that renders as exactly that text (its spaces folded: a
    leading indent would make a code block, which shows escapes as they are)."""
    text = _MD_SPECIAL.sub(lambda m: m["citation"] or _MD_ESCAPES[m.group()],
                           " ".join(line.split()))
    text = _MD_LINE_END.sub(lambda m: "\\#" * len(m.group()), text)
    return _MD_LINE_START.sub(_escaped_line_start, text, count=1)


def _escaped_line_start(match: re.Match) -> str:
    if match["mark"]:
        return "\\" + match["mark"]
    if match["entity"]:
        return f"&#{ord(match['entity'])};"
    return match["number"] + "\\" + match["dot"]


def inert_markdown(text: str) -> str:
    """Untrusted text as Markdown that every renderer shows as that text and nothing else: no
    link, image, HTML, entity or heading can come of it (`<` is written `&lt;`, `[x]` `\\[x\\]`;
    a citation, `[1]`, stays). Each line becomes a paragraph of its own, so that a model's
    list keeps its lines without being a Markdown list."""
    lines = (_inert_line(safe(line)) for line in _LINE_BREAK.split(text or ""))
    return "\n\n".join(line for line in lines if line)


def inert_markdown_line(text: str) -> str:
    """`inert_markdown` on one line (a heading, a list item, a link's text): line breaks become
    spaces."""
    return _inert_line(safe(_LINE_BREAK.sub(" ", text or "")))


# A cell that a spreadsheet runs as a formula: `=`, `+`, `-`, `@`, a tab or a carriage return
# first (OWASP's list), after any `'`s (so that reading back can tell ragqa's `'` from the text's).
_FORMULA_START = re.compile(r"^'*[=+\-@\t\r]")


def spreadsheet_cell(value: str) -> str:
    """A CSV cell that no spreadsheet runs: `'` before a would-be formula, as OWASP recommends
    (the spreadsheet shows the text, without the `'`). `spreadsheet_text` undoes it exactly."""
    return "'" + value if _FORMULA_START.match(value) else value


def spreadsheet_text(cell: str) -> str:
    """The text of a cell `spreadsheet_cell` wrote (any other cell as it is)."""
    return cell[1:] if cell.startswith("'") and _FORMULA_START.match(cell) else cell


def web_url(url: str) -> str:
    """`url` when it is an http(s) address, else "": exports link only web pages (never a
    `javascript:` or `data:` URL that a record carried)."""
    url = (url or "").strip()
    return url if _WEB_URL.match(url) else ""
