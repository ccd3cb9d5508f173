"""Conversations: follow-ups become standalone questions, every turn is an `ask` with checked
citations, and sessions persist under the data folder.

Citation numbers restart with every turn: each turn's answer, like `ask`, cites [1]..[k] and
carries its own references, so a turn reads correctly on its own (in JSON, in a saved
transcript) and never points at a paper retrieved for another question.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ragqa.answering.answer import Answer, Citation, answer_question, quote_lines
from ragqa.answering.followups import (
    ZH_ORDINAL,
    Resolution,
    content_terms,
    list_place,
    resolve,
    without_references,
)
from ragqa.answering.messages import joined, message, shown_topic
from ragqa.errors import UserError
from ragqa.models.language import detect_language
from ragqa.prompts import load_prompt
from ragqa.retrieval.question import ORDINAL, points_at_several, replace_pointer, topic_of
from ragqa.screening.feedback import refine
from ragqa.screening.screen import Progress
from ragqa.sources.export import reference_link
from ragqa.text import inert_markdown, inert_markdown_line

if TYPE_CHECKING:
    from ragqa.config import Settings
    from ragqa.index.lexical import LexicalIndex
    from ragqa.models import LLM
    from ragqa.retrieval.retriever import Retriever

# How the offline standalone question names the papers in their place (followups.py decides
# what a turn refers to).
# (the place: question.ORDINAL, with its "the" and the noun after it: "the second one")
_PLACE_NOUNS = (" one", " paper", " of them", " of these", " of those")
_FRAME = re.compile(r"^\s*(?:and\s+)?(?:which|what)\s+(?:of\s+(?:them|these|those)|ones?)\s+",
                    re.I)
# The same in Chinese: "它们是如何表示张量的？", "这篇论文提出了什么？", "第一篇用了什么数据？",
# "其中哪些使用了扩散模型？" (the selecting frame, 其中 = "of them", is kept as "X 中").
_ZH_PLURAL_REF = re.compile(r"这些论文|这些工作|这些方法|上述论文|以上论文|它们|他们|这些")
_ZH_SINGULAR_REF = re.compile(r"这篇论文|这篇工作|该论文|该工作|这篇|它")
_ZH_REF = {True: _ZH_PLURAL_REF, False: _ZH_SINGULAR_REF}
_ZH_FRAME = re.compile(r"^\s*(?:那么|那)?(?:其中|它们之中|它们中|这些论文中|这些中)[，,]?\s*")


# The folded papers a selection looks among at most, the most probable first: a list's tail
# runs to dozens of papers, less and less about its topic (a bound, not fitted).
FOLDED_SELECTED = 10


@dataclass
class Turn:
    question: str
    standalone: str
    answer: dict  # the `ask --json` object of this turn
    cited_ids: list[str] = field(default_factory=list)


@dataclass
class Session:
    session_id: str
    collection: str
    created: float
    turns: list[Turn] = field(default_factory=list)
    # SHA-256 of the secret that a session started over HTTP gave its client: only that client
    # continues it over HTTP. Empty for the CLI's sessions (the data folder's owner).
    owner: str = ""

    def owned_by(self, secret: str | None) -> bool:
        """Whether `secret` is this session's (always False for a session with no owner)."""
        return bool(self.owner) and hmac.compare_digest(secret_digest(secret or ""), self.owner)

    @property
    def last_cited(self) -> list[str]:
        """The papers of the latest turn that cited any ("them" after an answer that found
        nothing still means the papers before it)."""
        return next((t.cited_ids for t in reversed(self.turns) if t.cited_ids), [])

    @property
    def last_listed(self) -> list[str]:
        """The papers of the latest turn that cited several: what "which one …" chooses among
        after a turn about one of them ("the second one", then "which of those two …")."""
        return next((t.cited_ids for t in reversed(self.turns) if len(t.cited_ids) > 1), [])

    @property
    def last_list(self) -> list[str]:
        """What "which one …" or "the second one" after the last answer reads in: its papers
        when they are a list of their own (one paper shown, more folded: "machine teaching",
        then "the one with human subjects"; round 16's dev half), else `last_listed`."""
        cited = self.last_cited
        return cited if cited and self.folded_below(cited) else self.last_listed

    def list_narrowed(self, papers: Sequence[str]) -> tuple[str, ...]:
        """The list a selection narrowed to `papers`: the papers of the turn that cited before
        the one that cited them, when it holds them and more ("which of them use routing?" gave
        two of six; "the LoRA one?" may mean the sixth)."""
        cited = [t.cited_ids for t in self.turns if t.cited_ids]
        chosen = set(papers)
        for last, before in zip(reversed(cited), list(reversed(cited))[1:], strict=False):
            if set(last) == chosen:
                return tuple(before) if chosen < set(before) else ()
        return ()

    def folded_below(self, papers: Sequence[str]) -> tuple[str, ...]:
        """The papers the turn that cited `papers` folded below them (its list's less certain
        tail, in its order, its first FOLDED_SELECTED; not those its question excluded):
        where a selection none of them holds looks next ("which one uses control variates?"
        after a list that showed one paper and folded three)."""
        chosen = set(papers)
        for turn in reversed(self.turns):
            if turn.cited_ids and set(turn.cited_ids) == chosen:
                folded = [p["paper_id"] for p in turn.answer.get("papers", [])
                          if p.get("tier") == "tail" and not p.get("excluded")]
                return tuple(folded[:FOLDED_SELECTED])
        return ()

    def list_topic(self, papers: Sequence[str]) -> str:
        """The question that listed `papers`: of the latest turns whose answers all hold them
        (its papers shown or folded; a selection's narrowing included), the earliest. What a
        selection none of those papers holds searches again ("the one on network data" after
        "any kernel stein discrepancy papers?" showed one paper; round 16's dev half)."""
        chosen, topic = set(papers), ""
        for turn in reversed(self.turns):
            held = {*turn.cited_ids, *(p["paper_id"] for p in turn.answer.get("papers", []))}
            if chosen and chosen <= held:
                topic = turn.standalone
            elif topic:
                break
        return topic

    def title_of(self, paper_id: str) -> str:
        for turn in reversed(self.turns):
            for citation in turn.answer["citations"]:
                if citation["paper_id"] == paper_id:
                    return citation["title"]
        return paper_id


# ---------------------------------------------------------------- persistence

def sessions_dir(settings: Settings) -> Path:
    return settings.home / "chats"


def secret_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_session(collection: str) -> Session:
    """A session whose id cannot be guessed: its time (for sorting and the CLI's prefixes) and
    128 random bits."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Session(f"{stamp}-{secrets.token_hex(16)}", collection, time.time())


def new_owned_session(collection: str) -> tuple[Session, str]:
    """A session that only the holder of the returned secret continues over HTTP."""
    session, secret = new_session(collection), secrets.token_urlsafe(32)
    session.owner = secret_digest(secret)
    return session, secret


def save_session(settings: Settings, session: Session) -> Path:
    folder = sessions_dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session.session_id}.json"
    started = not path.exists()
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(asdict(session), ensure_ascii=False, indent=1), encoding="utf-8")
    os.replace(tmp, path)  # a crash mid-write never leaves half a session
    if started:  # the store is bounded when a session starts: not at every turn
        prune_sessions(settings, keep=path.name)
    return path


def prune_sessions(settings: Settings, keep: str = "") -> int:
    """Remove the saved sessions beyond RAGQA_CHAT_MAX_SESSIONS, least recently continued (saved)
    first, and those not continued for RAGQA_CHAT_SESSION_DAYS; never the file named `keep`.
    Unbounded, every session ever started stayed (a server's clients start many). Returns how
    many were removed."""
    dated: list[tuple[float, str]] = []
    try:
        with os.scandir(sessions_dir(settings)) as entries:
            for entry in entries:
                if entry.name.endswith(".json") and entry.name != keep:
                    with contextlib.suppress(FileNotFoundError):  # another process removed it
                        dated.append((entry.stat().st_mtime, entry.path))
    except FileNotFoundError:
        return 0
    dated.sort(reverse=True)  # the most recently continued first
    room = settings.chat_max_sessions - (1 if keep else 0)
    days = settings.chat_session_days
    oldest = time.time() - days * 86400 if days else None
    removed = 0
    for rank, (touched, path) in enumerate(dated):
        if rank >= room or (oldest is not None and touched < oldest):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed += 1
    return removed


# A session id as ragqa writes one (new_session): the name of its file in chats/, never a path.
_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")


def load_session(settings: Settings, session_id: str | None, exact: bool = False) -> Session:
    """A saved session by id: its file, opened by name, the folder not listed (every turn over
    HTTP finds its session so: listing 50,000 sessions took 0.8 s a turn). Unless `exact`, also
    a unique start of an id, and the most recent session when id is None (the CLI's `--resume`,
    once a chat): those list the folder."""
    folder = sessions_dir(settings)
    path = folder / f"{session_id}.json" if session_id and _SESSION_ID.fullmatch(session_id) \
        else None
    if path is None or not path.is_file():
        path = None if exact else _find_session(folder, session_id)
    if path is None:
        what = f"session {session_id!r}" if session_id else "a saved session"
        raise ValueError(f"no {what} to resume (ragqa chat --list shows them)")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        turns = [Turn(**t) for t in raw.pop("turns")]
        return Session(**raw, turns=turns)
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"session file {path} is damaged ({type(exc).__name__})") from None


def _find_session(folder: Path, prefix: str | None) -> Path | None:
    """The one session whose id starts with `prefix`, or the most recently saved one."""
    if not folder.is_dir():
        return None
    if prefix:
        found = [p for p in folder.glob("*.json") if p.stem.startswith(prefix)]
        if len(found) > 1:
            raise ValueError(f"{prefix!r} matches several sessions")
        return found[0] if found else None
    dated = []
    for path in folder.glob("*.json"):
        with contextlib.suppress(FileNotFoundError):  # removed meanwhile
            dated.append((path.stat().st_mtime, path))
    return max(dated)[1] if dated else None


def list_sessions(settings: Settings) -> list[dict]:
    folder = sessions_dir(settings)
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a damaged file is not a session; --resume of it says so
        first = raw["turns"][0]["question"] if raw["turns"] else ""
        out.append({"session_id": raw["session_id"], "collection": raw["collection"],
                    "turns": len(raw["turns"]), "first_question": first,
                    "created": time.strftime("%Y-%m-%d %H:%M", time.localtime(raw["created"]))})
    return out


# ---------------------------------------------------------------- follow-ups

def referenced_papers(question: str, session: Session, index: LexicalIndex | None = None
                      ) -> Resolution:
    """What a turn does with the last answer's papers (followups.resolve: the fitted follow-up
    kind model, after the rule for an announced new topic; a turn in another language, Chinese
    included, by the multilingual one)."""
    cited = session.last_cited
    if not cited:
        place = list_place(question)
        # "the second one?" when no answer has listed a paper: said, not searched as a topic
        return Resolution("beyond", place=place) \
            if place is not None and not content_terms(question) else Resolution("leave")
    listed = session.last_list
    resolution = resolve(question, cited, index, len(listed))
    if resolution.selecting and len(cited) < 2 and listed and listed != cited:
        # A choice among one paper is none: it picks among the last list again.
        resolution = Resolution("select", tuple(listed))
    if resolution.selecting and not points_at_several(question):
        # (not when the turn points at them: "does either of those two …" means those two;
        # "the one with …" points at none)
        return replace(resolution, wider=session.list_narrowed(resolution.papers),
                       folded=session.folded_below(resolution.papers),
                       topic=session.list_topic(resolution.papers))
    place = resolution.place if resolution.place is not None else \
        list_place(question) if resolution.kind != "leave" else None
    if place is None or -len(cited) <= place < len(cited) or resolution.selecting:
        return resolution
    if -len(listed) <= place < len(listed):
        # "the second one" after an answer of one paper: the second of the last list.
        return Resolution("about", (listed[place],))
    # "the fifth one" after three papers: no paper of them, nor a new search for the words.
    return Resolution("beyond", place=place)


def strip_references(question: str) -> str:
    """The follow-up without the words that point back: what to search among the papers."""
    if detect_language(question) != "Chinese":
        return without_references(question)
    text = _ZH_FRAME.sub("", question)
    for pattern in (ZH_ORDINAL, _ZH_PLURAL_REF, _ZH_SINGULAR_REF):
        text = pattern.sub("", text)
    text = " ".join(text.split())
    return text if len(text) >= 3 else question


def _place_span(question: str) -> tuple[int, int] | None:
    """Where a turn names a place in the last list, with its "the" and its noun ("what does
    the second one propose?" -> "the second one"), or None."""
    match = ORDINAL.search(question)
    if not match:
        return None
    start, end = match.span()
    if question[:start].lower().endswith("the "):
        start -= len("the ")
    after = question[end:].lower()
    noun = next((n for n in _PLACE_NOUNS if after.startswith(n)
                 and not after[len(n):len(n) + 1].isalnum()), "")
    return start, end + len(noun)


def offline_standalone(question: str, session: Session, papers: list[str]) -> str:
    """Spell out the papers a follow-up refers to, so the question reads alone (in the
    follow-up's language: the frame comes from the message catalogue, the titles as written)."""
    language = detect_language(question)
    names = [session.title_of(pid) for pid in papers]
    subject = message("chat.one_paper" if len(names) == 1 else "chat.papers", language,
                      names=joined(names, language))
    chinese = language == "Chinese"
    rest = (_ZH_FRAME if chinese else _FRAME).sub("", question)
    if rest != question:  # "Which of them uses X?" -> "Which of the papers A and B uses X?"
        return message("chat.which_of", language, subject=subject, rest=rest)
    # Chinese sets Latin names apart from the characters that follow them: "论文 CEITNet 提出了…"
    spaced = (lambda m: subject if m.end() == len(m.string) or not m.string[m.end()].isalnum()
              else subject + " ") if chinese else (lambda m: subject)
    if chinese:
        replaced = ZH_ORDINAL.sub(spaced, question)
    else:
        start, end = _place_span(question) or (0, 0)
        replaced = question[:start] + subject + question[end:] if end else question
    for plural in (True, False):
        if replaced == question:
            replaced = _ZH_REF[plural].sub(spaced, question, count=1) if chinese \
                else replace_pointer(question, spaced, plural)
    return replaced


def history_text(session: Session, budget_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """The latest turns that fit the token budget, oldest first; older turns are dropped."""
    lines: list[str] = []
    used = 0
    for turn in reversed(session.turns):
        block = f"User: {turn.standalone}\nAssistant: {turn.answer['answer']}"
        cost = count_tokens(block)
        if used + cost > budget_tokens:
            break
        lines.insert(0, block)
        used += cost
    return "\n\n".join(lines)


@dataclass
class Condensed:
    standalone: str  # shown to the user, and what the answer answers
    query: str  # what retrieval searches for
    # The earlier papers it refers to, to answer from (None: it searches the collection).
    referred: Resolution | None = None


def condense(question: str, session: Session, llm: LLM | None, settings: Settings,
             count_tokens: Callable[[str], int], index: LexicalIndex | None = None
             ) -> Condensed:
    if not session.turns:
        return Condensed(question, question)
    resolution = referenced_papers(question, session, index)
    if resolution.kind == "beyond":
        return Condensed(question, question, resolution)
    if llm is not None:
        history = history_text(session, settings.chat_memory_tokens, count_tokens)
        standalone = llm.complete(load_prompt("condense", settings).fill(
            history=history, question=question)).text.strip() or question
        # The condensed question names what it refers to; only a selection keeps to the
        # earlier list, so that screening reads those papers and no others.
        return Condensed(standalone, standalone,
                         resolution if resolution.selecting and resolution.papers else None)
    if not resolution.papers:
        return Condensed(question, question)
    return Condensed(offline_standalone(question, session, list(resolution.papers)),
                     strip_references(question), resolution)


# ---------------------------------------------------------------- marks: the user as the judge

_MARK_WORDS = ("/more", "/not")
# Candidates a marked question is re-ranked over (its offline ranking, no cut).
MARK_CANDIDATES = 400


@dataclass
class Marks:
    more: list[int]
    rejected: list[int]


def parse_marks(message_text: str) -> Marks | None:
    """"/more 2 5 /not 3" -> the numbers marked; None when the message is no marking. A
    marking with anything else than numbers is a UserError that says the form."""
    words = message_text.split()
    if not words or words[0].lower() not in _MARK_WORDS:
        return None
    marks, current = Marks([], []), None
    for word in words:
        if word.lower() in _MARK_WORDS:
            current = marks.more if word.lower() == "/more" else marks.rejected
        elif word.strip(",").isdigit() and current is not None:
            current.append(int(word.strip(",")))
        else:
            raise UserError(f"marks take the numbers of the last list, e.g. /more 2 5 /not 3 "
                            f"(not {word!r})")
    if not marks.more and not marks.rejected:
        raise UserError("name the papers: /more 2 5 marks [2] and [5] relevant, /not 3 not")
    return marks


def refine_with_marks(session: Session, marks: Marks, retriever: Retriever) -> Answer:
    """The last list re-ranked by the user's marks (screening.feedback.refine): the papers
    marked relevant first, those marked not relevant gone, the rest re-ordered by their
    closeness to the marked ones and extended with the next candidates. No model is asked:
    this is the offline judge. Marks add up over rounds on the same question."""
    last = session.turns[-1] if session.turns else None
    listed = {c["n"]: c["paper_id"] for c in (last.answer["citations"] if last else [])}
    if not listed and last is not None and any(
            p.get("tier") == "tail" for p in last.answer.get("papers", [])):
        raise UserError("the last answer folded all its papers: /more alone lists them, "
                        "numbered, to mark")
    if not listed:
        raise UserError("/more and /not mark papers of the last list: ask a question first")
    unknown = sorted(n for n in [*marks.more, *marks.rejected] if n not in listed)
    if unknown:
        raise UserError(f"no [{unknown[0]}] in the last list (it has [1] to [{len(listed)}])")
    earlier = last.answer.get("marks") or {}
    question = earlier.get("question") or last.standalone
    more = set(earlier.get("more", [])) | {listed[n] for n in marks.more}
    rejected = (set(earlier.get("not", [])) - {listed[n] for n in marks.more}) \
        | {listed[n] for n in marks.rejected}
    more -= {listed[n] for n in marks.rejected}
    language = detect_language(question)
    search = retriever.search if language == "English" else retriever.search_foreign
    ranked = search(question, k=MARK_CANDIDATES, cut=False).hits
    # The list the marks re-cut: the last answer's papers less the candidates it offered for
    # review (those join it only when marked relevant).
    offered = {p["paper_id"] for p in last.answer.get("papers", []) if p.get("tier") == "review"}
    confirmed, kept, review = refine(ranked, retriever.paper_vectors([h.index for h in ranked]),
                                     more, rejected, set(listed.values()) - offered)
    for hit in review:
        hit.tier = "review"
    citations: list[Citation] = []
    line = "- **{title}**: {sentence} [{n}]"
    lines = quote_lines([(h, h.best_sentence) for h in [*confirmed, *kept]], line, citations)
    if review:  # numbered on from the list, so that they can be marked; never part of it
        lines += ["", message("marks.review", language, count=len(review)), ""]
        lines += quote_lines([(h, h.best_sentence) for h in review], line, citations)
    header = message("marks.header", language, more=len(more), rejected=len(rejected),
                     topic=shown_topic(topic_of(question), language), unjudged=len(kept))
    return Answer(question, "extractive", header + "\n\n" + "\n".join(lines), citations, [],
                  0, [*confirmed, *kept, *review], retriever.total_papers, question, language,
                  marks={"question": question, "more": sorted(more), "not": sorted(rejected)})


def no_such_place(question: str, session: Session, referred: Resolution,
                  retriever: Retriever) -> Answer:
    """"the fifth one" after a list of three: said, with how many there were, rather than an
    answer about another paper."""
    language = detect_language(question)
    count = max(len(session.last_cited), len(session.last_list))
    assert referred.place is not None
    number = referred.place + 1 if referred.place >= 0 else 1
    text = message("chat.no_such_place", language, count=count, number=number) if count \
        else message("chat.nothing_listed", language, number=number)
    return Answer(question, "extractive", text, [], [], 0, [], retriever.total_papers,
                  question, language)


def unfold_last(session: Session, retriever: Retriever) -> Answer:
    """The last list with its less certain papers (its folded tail) listed and cited below the
    answer: chat's `/more` alone. Extractive: the tail is ragqa's own, no model reads it."""
    last = session.turns[-1] if session.turns else None
    if last is None or not any(p.get("tier") == "tail" for p in last.answer.get("papers", [])):
        raise UserError("/more alone lists what the last list folded; it folded nothing "
                        "(/more 2 5 marks papers of it relevant)")
    return answer_question(retriever, last.standalone, llm=None,
                           query=last.answer.get("retrieval_query") or None, unfold=True)


def _record(session: Session, question: str, answer: Answer) -> tuple[Answer, Turn]:
    record = {**answer.as_json(), "question": question}
    turn = Turn(question, answer.question, record, [c.paper_id for c in answer.citations])
    session.turns.append(turn)
    return answer, turn


# ---------------------------------------------------------------- a turn

def ask_in_session(session: Session, question: str, retriever: Retriever, llm: LLM | None,
                   on_token: Callable[[str], None] | None = None, screen: str | None = None,
                   on_screen: Progress | None = None) -> tuple[Answer, Turn]:
    if question.strip().lower() == "/more":  # the last list again, its folded tail listed
        return _record(session, question, unfold_last(session, retriever))
    marks = parse_marks(question)
    if marks is not None:
        return _record(session, question, refine_with_marks(session, marks, retriever))
    settings = retriever.store.settings
    condensed = condense(question, session, llm, settings, retriever.store.encoder.count_tokens,
                         retriever.lexical)
    referred = condensed.referred
    if referred is not None and referred.kind == "beyond":
        return _record(session, question, no_such_place(question, session, referred, retriever))
    answer = answer_question(retriever, condensed.standalone, llm=llm, on_token=on_token,
                             query=condensed.query, screen=screen, on_screen=on_screen,
                             referred=referred)
    record = {**answer.as_json(), "question": question}
    turn = Turn(question, condensed.standalone, record, [c.paper_id for c in answer.citations])
    session.turns.append(turn)
    return answer, turn


def transcript_markdown(session: Session, urls: dict[str, str] | None = None) -> str:
    """The session as Markdown: each turn's question, answer and its own references, each
    title linked to `urls[paper_id]` when the paper has a web page. Every text the user, a
    model or a paper wrote is inert (text only: no link, image or HTML can come of it)."""
    urls = urls or {}
    parts = [f"# ragqa chat {session.session_id}", "",
             f"Collection: {inert_markdown_line(session.collection)}", ""]
    for number, turn in enumerate(session.turns, start=1):
        parts += _turn_markdown(number, turn, urls)
    return "\n".join(parts)


def _turn_markdown(number: int, turn: Turn, urls: dict[str, str]) -> list[str]:
    language = turn.answer.get("language", "English")
    parts = [f"## {number}. {inert_markdown_line(turn.question)}", ""]
    if turn.standalone != turn.question:
        standalone = message("chat.standalone", language, question=turn.standalone)
        parts += [f"*{inert_markdown_line(standalone)}*", ""]
    parts += [inert_markdown(turn.answer["answer"]), ""]
    if turn.answer["citations"]:
        parts += [message("chat.references", language), ""]
        parts += [f"- [{c['n']}] {reference_link(c['title'], urls.get(c['paper_id'], ''))} "
                  f"({inert_markdown_line(c['source'])}, id {inert_markdown_line(c['paper_id'])})"
                  for c in turn.answer["citations"]]
        parts.append("")
    return parts


def cited_paper_ids(session: Session) -> list[str]:
    """Every paper the session's answers cited, in order of first citation."""
    seen: dict[str, None] = {}
    for turn in session.turns:
        for citation in turn.answer.get("citations", []):
            seen.setdefault(citation["paper_id"], None)
    return list(seen)
