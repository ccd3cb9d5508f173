"""What real models write for a citation, read and normalised to ragqa's `[n]`.

Models cite in many styles besides `[1]`: `[Source 1]`, `[Paper 2]`, `【1】`, `[1†source]`,
`[^1]` footnotes, `[1][2]`, a trailing `Sources: 1, 3`, or a bare `(1)`. They also echo the
`<sources>` block of the prompt and write their own references list; ragqa's checked references
replace both. `normalise_citations` turns all of these into `[n]` groups that
`answer.check_citations` then checks (numbers that name no source are dropped and counted there).

A bare `(1)` is the ambiguous one: "(1) we encode, (2) we decode" is an enumeration, "(2023)" a
year, "Eq. (3)" an equation. It is read as a citation only when it sits at the end of a clause,
every number in it names a source, nothing before it makes it an equation, figure or step, and
the model never uses `(n)` as an enumeration marker in the same text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

_GROUP = r"\d{1,6}(?:\s*[-–]\s*\d{1,6})?(?:\s*(?:,|;|and|&)\s*\d{1,6}(?:\s*[-–]\s*\d{1,6})?)*"
_LABEL = r"(?:sources?|papers?|docs?|documents?|refs?|references?|abstracts?|articles?|s)"
# "Source 1, Source 3": a label may precede every number of a group
_LABELLED_GROUP = (r"\d{1,6}(?:\s*[-–]\s*\d{1,6})?(?:\s*(?:,|;|and|&)\s*(?:" + _LABEL
                   + r"\s*[:#]?\s*)?\d{1,6}(?:\s*[-–]\s*\d{1,6})?)*")
# A labelled citation in any bracket (its group of numbers: the one group that matched):
# [Source 1], [Paper 2], [Sources 1, 3], [source: 2], [S1], [1†source], [1†L3-L5], [#2];
# 【1】, 【1†source】, 【Source 1】; (Source 1), (Papers 1 and 3), (see source 2).
_LABELLED = re.compile(r"\[\s*(?:" + _LABEL + r"\s*[:#]?\s*|#\s*)?(" + _LABELLED_GROUP
                       + r")\s*(?:†[^\]\n]*)?\]"
                       r"|【\s*(?:" + _LABEL + r"\s*[:#]?\s*)?(" + _LABELLED_GROUP
                       + r")\s*(?:†[^】\n]*)?】"
                       r"|\(\s*(?:see\s+)?" + _LABEL + r"\s*[:#]?\s*(" + _LABELLED_GROUP
                       + r")\s*\)", re.IGNORECASE)
# [^1] footnote marks (the footnote definitions "[^1]: ..." are a references list)
_FOOTNOTE = re.compile(r"\[\^\s*(\d{1,6})\s*\]")
_FOOTNOTE_DEFINITION = re.compile(r"^\s*\[\^\s*\d{1,6}\s*\]\s*:.*$", re.MULTILINE)
# "... speech. Sources: 1, 3" / "(Sources: [1], [3])" / "Source: 2" after a claim, on its line
# (each number whole, one way to read each gap: no catastrophic backtracking)
_SOURCE_NUMBER = r"\[?\d{1,6}(?!\d)\]?"
_TRAILING_SOURCES = re.compile(
    r"\(?\b(?:sources?|references?|citations?|cited)[ \t]*:[ \t]*(" + _SOURCE_NUMBER
    + r"(?:(?:[ \t]*(?:[,;&]|\band\b)[ \t]*|[ \t]+)" + _SOURCE_NUMBER + r")*)\)?"
    r"(?=[ \t]*[.;]?[ \t]*$)", re.IGNORECASE | re.MULTILINE)
# A bare (1), (1, 3), (2-4)
_BARE_PAREN = re.compile(r"\((" + _GROUP + r")\)")
# Words before a "(n)" that make it an equation, a figure, a step or a list position.
_NOT_A_CITATION_BEFORE = re.compile(
    r"(?:\b(?:eqs?|equations?|formula|table|tab|figs?|figure|section|sec|step|steps|stage|"
    r"item|items|point|points|case|cases|option|line|algorithm|alg|theorem|lemma|appendix|"
    r"chapter|part|phase|level|rule|type)\.?|[=<>+\-*/^×])\s*$", re.IGNORECASE)
# After a citation: the end of a clause (a punctuation mark, a line's end, another citation, a
# conjunction that starts the next clause).
_CLAUSE_END = re.compile(r"[ \t]*(?:[.;,:!?)]|$|\[|\(|(?:and|while|whereas|but|or)\b)",
                         re.MULTILINE)
_AFTER_ANOTHER = re.compile(r"\(\d{1,6}\)\s*(?:,|and|or|&)?\s*$")
# A heading that opens a references list the model wrote itself.
_REFERENCES_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*|__)?\s*(?:references?|sources?|sources? used|citations?|"
    r"bibliography|works cited|cited (?:papers|sources))\s*(?:\*\*|__)?\s*:?\s*(?:\*\*|__)?\s*$",
    re.IGNORECASE)
# A line of such a list: "[1] Moshi-RAG", "1. τ-Voice (…)", "- [2]: …", "Source 1: …"
_REFERENCE_LINE = re.compile(
    r"^\s*(?:[-*•]\s*)?(?:\[\^?\s*\d{1,6}\s*\]|【\s*\d{1,6}[^】]*】|\d{1,6}[.):]|"
    + _LABEL + r"\s*\d{1,6}\s*[:.)-])", re.IGNORECASE)
# "Sources: [1] Moshi-RAG; [2] τ-Voice" on one line: a references list too
_REFERENCES_INLINE = re.compile(
    r"^[ \t]*(?:\*\*)?(?:references?|sources?)[ \t]*:?(?:\*\*)?[ \t]*:?[ \t]*\[\d{1,6}\][ \t]*\S*"
    r"[^\W\d].*$",
    re.IGNORECASE | re.MULTILINE)
_ECHOED_SOURCES = re.compile(r"<\s*sources\s*>.*?(?:<\s*/\s*sources\s*>|\Z)", re.DOTALL | re.I)
_ECHOED_SOURCE = re.compile(r"<\s*source\b[^>]*>.*?(?:<\s*/\s*source\s*>|\Z)", re.DOTALL | re.I)
_ADJACENT = re.compile(r"\[(" + _GROUP + r")\][ \t]*(?:,[ \t]*)?\[(" + _GROUP + r")\]")
_NUMBER = re.compile(r"\d{1,6}")


def _bracket(group: str) -> str:
    """'1 and 3' / '1; 3' / '1 & 3' as the `[1, 3]` that check_citations reads."""
    group = re.sub(r"\b" + _LABEL + r"\b\s*[:#]?", "", group, flags=re.IGNORECASE)
    group = re.sub(r"\s*(?:,|;|\band\b|&)\s*", ", ", group.strip())
    return "[" + re.sub(r"\s*[-–]\s*", "-", group) + "]"


def _numbers(group: str) -> list[int]:
    return [int(x) for x in _NUMBER.findall(group)]


def _starts_reference_list(after: list[str]) -> bool:
    """Whether the first non-empty line after a "References" heading is a reference: a heading
    alone is a word of the answer ("Reference"), not the model's list."""
    following = next((line for line in after if line.strip()), "")
    return bool(_REFERENCE_LINE.match(following))


def remove_model_references(text: str) -> str:
    """Without an echoed `<sources>` block, the model's own references list or footnote
    definitions: ragqa's checked references replace them."""
    text = _ECHOED_SOURCES.sub("", text)
    text = _ECHOED_SOURCE.sub("", text)
    text = _FOOTNOTE_DEFINITION.sub("", text)
    text = _REFERENCES_INLINE.sub("", text)
    kept: list[str] = []
    in_list = False
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if _REFERENCES_HEADING.match(line) and _starts_reference_list(lines[i + 1:]):
            in_list = True
            continue
        if in_list and (not line.strip() or _REFERENCE_LINE.match(line)):
            continue
        in_list = False
        kept.append(line)
    return "\n".join(kept).strip()


def _enumerates(text: str) -> bool:
    """True when the text uses "(n)" as an enumeration marker: "(1) we …, (2) we …"."""
    return bool(re.search(r"(?:^|[:;,])[ \t]*\(\d{1,2}\)\s+[^\W\d_]", text, re.MULTILINE))


def _bare_citations(text: str, sources: int) -> str:
    if _enumerates(text):
        return text

    accepted = False  # the decision for the "(n)" just before: "steps (1) and (2)" share it

    def rewrite(match: re.Match) -> str:
        nonlocal accepted
        numbers = _numbers(match.group(1))
        before = text[max(0, match.start() - 80):match.start()]  # the words just before
        if _AFTER_ANOTHER.search(before):
            pass  # "(1) and (2)": as the first one was read
        elif not numbers or not all(1 <= n <= sources for n in numbers):
            accepted = False  # a year, a count, a number that names no source
        else:
            accepted = bool(before.strip()) and not before.rstrip().endswith(":") and \
                not _NOT_A_CITATION_BEFORE.search(before) and \
                bool(_CLAUSE_END.match(text, match.end()))
        if accepted and numbers and all(1 <= n <= sources for n in numbers):
            return _bracket(match.group(1))
        return match.group(0)

    return _BARE_PAREN.sub(rewrite, text)


def normalise_citations(text: str, sources: int) -> str:
    """The model's text with every citation style it used written as `[n]` groups, adjacent
    groups merged (`[1][2]` -> `[1, 2]`), and its own references list removed. `sources` is
    how many sources the prompt numbered (a bare `(n)` beyond it is no citation)."""
    text = remove_model_references(text)
    text = _FOOTNOTE.sub(lambda m: f"[{m.group(1)}]", text)
    text = _LABELLED.sub(lambda m: _bracket(next(g for g in m.groups() if g)), text)
    text = _TRAILING_SOURCES.sub(lambda m: _bracket(", ".join(map(str, _numbers(m.group(1))))),
                                 text)
    text = _bare_citations(text, sources)
    previous = None
    while previous != text:
        previous, text = text, _ADJACENT.sub(
            lambda m: "[" + _bracket(m.group(1))[1:-1] + ", " + _bracket(m.group(2))[1:-1] + "]",
            text)
    return text


# ---------------------------------------------------------------- what an answer says

_ABSTAINS = re.compile(
    r"\b(?:none of the (?:\w+ )?(?:sources|papers|abstracts|documents|provided)|"
    r"no (?:\w+ )?(?:source|paper|abstract|document)s? (?:\w+ ){0,3}?(?:address|discuss|mention|"
    r"cover|stud|answer|support|provide|contain|describe)|"
    r"(?:do|does|did) not (?:\w+ )?(?:mention|discuss|address|provide|contain|cover|describe|"
    r"answer|support)|not (?:mentioned|discussed|addressed|covered|provided|answered) (?:in|by)|"
    r"(?:cannot|can't|can not|unable to) (?:be )?(?:answer|find|determine|found|answered)|"
    r"no (?:relevant |such )?information|there (?:is|are) no (?:\w+ )?(?:paper|source|"
    r"information|abstract|mention))", re.IGNORECASE)
_CITATIONS_ONLY = re.compile(r"\[[\d\s,;–-]*\]")
_ONLY_A_NUMBER = re.compile(r"(?=[^\d]*\d)[\s\d.,:%×x+\-–~≈()]*", re.IGNORECASE)


_LATIN_SCRIPT = {"English", "French", "German", "Spanish", "Portuguese", "Italian"}
_ENGLISH_WORDS = {"the", "and", "of", "is", "are", "which", "with", "for", "to", "that", "this",
                  "by", "its", "their", "both", "from", "on", "as", "an"}


def _reads_english(text: str) -> bool:
    """English for sure: three or more of its commonest words (a French answer full of English
    technical terms is not)."""
    return len(set(re.findall(r"[a-z]+", text.lower())) & _ENGLISH_WORDS) >= 3


def abstains(text: str) -> bool:
    """The text says that nothing in the sources answers the question."""
    return bool(_ABSTAINS.search(text))


def states_fact(sentence: str) -> bool:
    """A sentence that claims something (and so needs a citation): not a heading, a lead-in
    ("Here are the papers:", "共有 3 篇论文涉及“…”："), a question back, or an abstention."""
    text = _CITATIONS_ONLY.sub("", sentence).strip().strip("*_#> ").strip()
    if not text or text.endswith((":", "?", "：", "？")) or abstains(text):
        return False
    words = re.findall(r"\w+", text)
    return len(words) >= 4 or bool(re.search(r"\d", text))


def degenerate_reason(text: str, language: str, detect: Callable[[str], str],
                      titles: Sequence[str] = ()) -> str:
    """Why the model's answer cannot be shown as an answer, or '' when it can: empty, only
    citations, only a number, only the sources' `titles` and numbers under a lead-in ("The
    papers are:\n1. [1] [τ-Voice]"), or in another language than the question's."""
    if not text.strip():
        return "it was empty"
    words = _CITATIONS_ONLY.sub("", text)
    if not re.sub(r"[\W_]+", "", words):
        return "it was only citations"
    if _ONLY_A_NUMBER.fullmatch(words.strip().strip("*_`")):
        return "it was only a number"
    named = words
    for title in sorted(filter(None, titles), key=len, reverse=True):
        named = named.replace(title, "")
    said = [line for line in named.splitlines() if not line.rstrip().endswith(":")]
    if titles and not re.sub(r"[\W\d_]+", "", "".join(said)):
        return "it named papers and said nothing about them"
    letters = [ch for ch in words if ch.isalpha()]
    if len(letters) >= 12:
        written = detect(words)
        if language == "English":
            # letters of another script than Latin or Greek (a "τ-Voice" is still English)
            foreign = sum(1 for ch in letters if ord(ch) > 0x24F and not 0x370 <= ord(ch) < 0x400)
            if written != "English" and foreign >= 0.5 * len(letters):
                return f"it was written in {written}, not English"
        elif written != language and not (written in _LATIN_SCRIPT and language in _LATIN_SCRIPT
                                          and (written != "English" or not _reads_english(words))):
            # Romance languages share their small words: only English, or another script,
            # is told apart for sure
            return f"it was written in {written}, not {language}"
    return ""
