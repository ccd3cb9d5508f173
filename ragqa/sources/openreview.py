"""OpenReview notes as its API v2 returns them (`GET /notes`, saved as a JSON array or one note
a line): `id`, `forum`, `content.title.value`, `content.abstract.value`,
`content.authors.value`, `content.venue.value` ("ICLR 2024 poster"), `content.venueid.value`
("ICLR.cc/2024/Conference"), `content.keywords.value`, `pdate`/`cdate` (milliseconds).
API v1 notes (`content.title` a plain string) read the same way.

The venue and year come from `venue` ("ICLR", 2024; the whole label is kept as `venue_label`),
else from `venueid`, `domain` or the invitation (API v1: "ICLR.cc/2019/Conference/-/
Blind_Submission"); the link is the forum page. A forum dump (`GET /notes?forum=`) holds the
submission with its replies: reviews, decisions and comments are counted and skipped.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from ragqa.sources.latex import to_text
from ragqa.sources.paper import MetaValue, Paper, Tally, derive_title, venue_from_header

_VENUE_ID = re.compile(r"^([A-Za-z][\w-]*?)(?:\.cc|\.org|\.io)?/(\d{4})\b")


def is_note(record: dict) -> bool:
    content = record.get("content")
    return isinstance(content, dict) and (
        "title" in content or "abstract" in content or
        (isinstance(record.get("forum"), str) and bool(record.get("invitation") or
                                                       record.get("invitations"))))


def is_reply(record: dict) -> bool:
    """A review, decision or comment of a forum: it replies to another note."""
    replyto = record.get("replyto")
    return isinstance(replyto, str) and bool(replyto) and replyto != record.get("id")


def _invitation(record: dict) -> str:
    invitation = record.get("invitation")
    if isinstance(invitation, str):
        return invitation
    invitations = record.get("invitations")
    if isinstance(invitations, list) and invitations and isinstance(invitations[0], str):
        return invitations[0]
    return ""


def _value(content: dict, name: str) -> object:
    value = content.get(name)
    return value.get("value") if isinstance(value, dict) else value


def _text(content: dict, name: str) -> str:
    value = _value(content, name)
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "; ".join(v.strip() for v in value if v.strip())
    if not isinstance(value, str):
        raise ValueError(f"field 'content.{name}' must be text, not {type(value).__name__}")
    return value.strip()


def _venue_year(content: dict, record: dict) -> tuple[str, int | None, str]:
    label = _text(content, "venue")
    venue, year = venue_from_header(label) if label else ("", None)
    domain = record.get("domain") if isinstance(record.get("domain"), str) else ""
    match = _VENUE_ID.match(_text(content, "venueid") or domain or _invitation(record))
    if match:
        venue = venue if year else match.group(1)
        year = year or int(match.group(2))
    if year is None:
        for stamp in ("pdate", "odate", "cdate", "tcdate"):
            value = record.get(stamp)
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                try:
                    year = dt.datetime.fromtimestamp(value / 1000, dt.timezone.utc).year
                    break
                except (OverflowError, OSError, ValueError):
                    continue
    return venue, year, label


def paper_from_note(record: dict, source: str, line: int,
                    admit: Callable[[str, int | None, list[str]], bool] | None = None
                    ) -> Paper | Tally | None:
    if is_reply(record):
        return Tally("reply", line)
    content = record["content"]
    note_id = record.get("id")
    if not isinstance(note_id, str) or not note_id.strip() or \
            any(ord(ch) < 32 for ch in note_id):
        raise ValueError("OpenReview note needs a text 'id'")
    raw_abstract = _text(content, "abstract")
    if not raw_abstract:
        raise ValueError("note has no text (an empty or missing 'content.abstract')")
    venue, year, label = _venue_year(content, record)
    if admit is not None and not admit(venue, year, []):
        return None
    forum = record.get("forum") if isinstance(record.get("forum"), str) else note_id
    extra: dict[str, MetaValue] = {"source_format": "openreview"}
    for name, key in (("venue", "venue_label"), ("venueid", "venueid"),
                      ("keywords", "keywords"), ("TL;DR", "tldr"), ("TLDR", "tldr")):
        value = label if name == "venue" else _text(content, name)
        if value:
            extra[key] = " ".join(value.split())
    text = to_text(raw_abstract)
    title = to_text(_text(content, "title"))
    return Paper(
        paper_id=note_id.strip(), title=title or derive_title(text), text=text, source=source,
        authors=to_text(_text(content, "authors")), venue=venue, year=year,
        url=f"https://openreview.net/forum?id={forum.strip()}", title_derived=not title,
        line=line, extra=extra,
    )
