"""Untrusted text (abstracts, titles, LLM answers, error messages) made inert for a terminal:
an abstract must not be able to move the cursor or rewrite the user's screen. Kept apart from
render.py so that what needs only this (error lines, JSON output) does not import rich."""

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


# A sentence ends at . ! or ? followed by space and what starts a sentence in an abstract. Linear
# (no backtracking), so a megabyte abstract splits in milliseconds.
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[$*τ])")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


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


# A Markdown link or image whose target is not a web page: `[x](javascript:...)`, `](data:...)`.
_NON_WEB_LINK = re.compile(r"\]\((?!\s*<?https?://)", re.IGNORECASE)
# A link reference definition, `[x]: javascript:...`, at the start of a line.
_LINK_DEFINITION = re.compile(r"^(\s{0,3}\[[^\]\n]+\]):", re.MULTILINE)
_WEB_URL = re.compile(r"^https?://\S+$", re.IGNORECASE)


def inert_markdown(text: str) -> str:
    """Untrusted text (a title, an abstract's sentence, a question, an LLM's answer) made safe to
    put in Markdown that a viewer may render as HTML: no tag (`<` is written `&lt;`, which shows
    as "<"), no link or image to anything but an http(s) page (the `](` that would open one is
    escaped). Everything else, ragqa's own Markdown included, stays as it is."""
    text = _NON_WEB_LINK.sub(r"]\\(", text.replace("<", "&lt;"))
    return _LINK_DEFINITION.sub(r"\1\\:", text)


def web_url(url: str) -> str:
    """`url` when it is an http(s) address, else "": exports link only web pages (never a
    `javascript:` or `data:` URL that a record carried)."""
    url = (url or "").strip()
    return url if _WEB_URL.match(url) else ""
