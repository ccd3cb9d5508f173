"""LaTeX and Markdown to plain text, one converter for every format (pylatexenc).

`$\\textbf{EGG}$` reads "EGG", `$\\underline{E}$xpert` "Expert", `$2.13\\times$` "2.13×",
`Schr{\\"o}dinger` "Schrödinger", `**DVPD**` "DVPD", `[code](https://…)` "code". Text that holds
no LaTeX (no backslash, no pair of `$`) skips the parser: it costs ~5-10 ms an abstract, and most
abstracts of a JSON Lines corpus have none. Abstracts are not LaTeX documents: a bare `%` is a
per cent sign, not a comment, and `~5` means "about 5".
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import threading
from collections.abc import Iterator

_SUPERSCRIPT = str.maketrans("0123456789+-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻")
_SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
# Markdown: paired emphasis and code only; a lone "*" (A* search) stays, and so does "_x_":
# in abstracts single underscores belong to identifiers and links more often than to emphasis
# (`snake_case`, `_https://github.com/…/CPO_`), the readers before this one kept them, and
# dropping them moved the calibrated list decision on the seeds (tests/test_summarize.py).
_MD_LINK = re.compile(r"\[([^\]\n]{1,200})\]\((?:https?://|www\.)[^)\s]{1,500}\)")
_MD_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_MD_EMPHASIS = re.compile(r"(?<![\w*])([*])(?=[^\s*_])([^*_\n]{1,200}?)(?<=[^\s*_])\1(?![\w*])")
_MD_CODE = re.compile(r"`([^`\n]{1,200})`")
_BARE_PERCENT = re.compile(r"(?<!\\)%")
# " ~5", "(~1.25)": about; "Table~2" is a LaTeX space. "$\sim$5", "$~$1nm": about too.
_TILDE_NUMBER = re.compile(r"(?<![\w.])~(?=\d)")
_ABOUT_MATH = re.compile(r"\$\s*(?:~|\\sim|\\approx)\s*\$(?=\s*\d)")
_LATEX_HINT = re.compile(r"\\[A-Za-z\"'`^~=.{}&%$#_ ]|\$")
# Superscripts and subscripts of digits: "$^2$" reads "²", "$\mathcal{W}_2$" "W₂"
_SUP = re.compile(r"\^\{?([0-9+-]{1,6})\}?")
_SUB = re.compile(r"(?<=[A-Za-z}])_\{?([0-9]{1,4})\}?(?![A-Za-z0-9])")
_KEEP_TILDE = "\ue000"  # a private-use mark for a "~" that means "about"
# "Ragnhei{\\d}ur": a letter accent with nothing to accent is an export's mangled letter
# (ð written \\dh): read as the letter's plain transliteration, "Ragnheidur".
_EMPTY_ACCENT = re.compile(r"\{\\([dbcuvHkrt])\s*\}")
_HREF = re.compile(r"\\href\{[^{}]*\}\{([^{}]*)\}")
_URL_MACRO = re.compile(r"\\url\{([^{}]*)\}")
# What the fallback removes when pylatexenc fails on a text: \textbf{X} -> X, $...$ -> ...
_WRAP = re.compile(r"\\[A-Za-z]+\{([^{}]*)\}")
_MATH = re.compile(r"\$([^$]*)\$")


FONT_SWITCHES = ("rm", "bf", "it", "em", "sl", "sf", "tt", "sc", "cal", "mit", "bfseries",
                 "itshape", "rmfamily", "sffamily", "ttfamily", "scshape", "upshape", "mdseries",
                 "slshape", "normalfont", "boldmath", "unboldmath", "tiny", "scriptsize",
                 "footnotesize", "small", "normalsize", "large", "Large", "LARGE", "huge",
                 "Huge", "displaystyle", "textstyle", "scriptstyle", "nonumber", "noindent")
# Measured on a real arXiv sample (bench/latex_leftovers.py on
# tests/fixtures/sources/real/arxiv/sample.jsonl.gz): the author macros its abstracts use most.
AUTHOR_MACROS = {
    "msun": "M☉", "Msun": "M☉", "msol": "M☉", "Msol": "M☉", "lsun": "L☉", "Lsun": "L☉",
    "rsun": "R☉", "Rsun": "R☉", "kms": "km/s", "kmps": "km/s", "micron": "μm", "mum": "μm",
    "la": "⟨", "ra": "⟩", "lam": "λ", "eps": "ε", "vep": "ε", "var": "ε", "si": "σ", "al": "α",
    "be": "β", "ga": "γ", "de": "δ", "om": "ω", "Om": "Ω", "R": "ℝ", "N": "ℕ", "Z": "ℤ",
    "Q": "ℚ", "C": "ℂ", "E": "𝔼", "etal": "et al.", "ie": "i.e.", "eg": "e.g.",
    "etc": "etc.", "AA": "Å", "degr": "°", "arcsec": "″", "arcmin": "′",
}


_QUIETED: dict[str, list] = {}  # logger name -> [callers inside, the level it had]
_QUIET_LOCK = threading.Lock()


@contextlib.contextmanager
def quiet_logger(name: str) -> Iterator[None]:
    """A library's logger (and its children) silent while the block runs, its level given back
    after: ragqa changes no logger for good (a program that uses ragqa keeps its own logging).
    Nested and concurrent blocks give back the level it had before the first."""
    logger = logging.getLogger(name)
    with _QUIET_LOCK:
        held = _QUIETED.setdefault(name, [0, logger.level])
        if held[0] == 0:
            held[1] = logger.level
            logger.setLevel(logging.CRITICAL)
        held[0] += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            held[0] -= 1
            if held[0] == 0:
                logger.setLevel(held[1])


@functools.lru_cache(maxsize=1)
def _converter():
    from pylatexenc import latex2text

    db = latex2text.get_default_latex_context_db()
    # Alphabets are letters to a reader: "$\mathcal{F}$" is F (pylatexenc gives 𝓕, which no
    # one types in a question); citations are not text.
    keep = [latex2text.MacroTextSpec(name, discard=False) for name in
            ("textsc", "texttt", "textsf", "textrm", "textnormal", "textup", "textmd",
             "mathcal", "mathbb", "mathbf", "mathrm", "mathit", "mathsf", "mathtt",
             "mathscr", "mathfrak", "boldsymbol", "bm", "operatorname", "text", "mbox")]
    drop = [latex2text.MacroTextSpec(name, discard=True) for name in
            ("cite", "citep", "citet", "ref", "eqref", "label", "thanks")]
    # Old-style font and size switches ("{\\bf v}", "\\it Chandra") change no word.
    switches = [latex2text.MacroTextSpec(name, simplify_repl="") for name in FONT_SWITCHES]
    # Macros arXiv authors define for themselves, read as what they almost always stand for.
    own = [latex2text.MacroTextSpec(name, simplify_repl=text) for name, text in
           AUTHOR_MACROS.items()]
    symbols = [latex2text.MacroTextSpec("sim", simplify_repl="~"),
               latex2text.MacroTextSpec("textasciitilde", simplify_repl="~"),
               latex2text.MacroTextSpec("textasciicircum", simplify_repl="^"),
               latex2text.MacroTextSpec("textasciigrave", simplify_repl="`"),
               latex2text.MacroTextSpec("textbraceleft", simplify_repl="{"),
               latex2text.MacroTextSpec("textbraceright", simplify_repl="}"),
               latex2text.MacroTextSpec("footnote", simplify_repl=" (%(2)s)")]
    db.add_context_category("ragqa", prepend=True,
                            macros=keep + drop + symbols + switches + own)
    # A macro no one defined (an abstract's "\\timestamp") is kept as written, not dropped.
    db.set_unknown_macro_spec(latex2text.MacroTextSpec("", simplify_repl=_unknown_macro))
    return latex2text.LatexNodes2Text(latex_context=db, math_mode="text",
                                      strict_latex_spaces="except-in-equations")


def _unknown_macro(node, *_) -> str:
    """A macro nobody defined (an arXiv author's own "\\XQM", "\\htco"): read as its name, with
    the space after it (LaTeX would swallow that space, a reader should not: "\\choose 2"); one
    applied to a group ("\\note{usually}", an author's own markup) gives way to the group's
    text. A backslash left in stored text is noise to every reader and to BM25."""
    source = getattr(getattr(node, "parsing_state", None), "s", "") or ""
    end = node.pos + node.len if node.pos is not None and node.len is not None else -1
    if 0 <= end < len(source) and source[end] == "{":
        return ""
    return node.macroname + (node.macro_post_space or "")


def strip_markdown(text: str) -> str:
    text = _MD_LINK.sub(r"\1", text)
    previous = None
    while previous != text:
        previous, text = text, _MD_STRONG.sub(r"\2", text)
    text = _MD_EMPHASIS.sub(r"\2", text)
    return _MD_CODE.sub(r"\1", text)


# Math is "$x$" as pandoc reads it: the opening "$" has a non-space on its right, the closing
# one a non-space on its left and no digit after it; so "$37,000 to $81,000" is money. A pair
# that starts with no digit may close before one: "$\\pm$0.1", "$\\sim$5".
_MATH_PAIR = re.compile(r"(?<!\\)\$(?=[^\s$])((?:[^$\\]|\\.)*?)(?<=[^\s\\])\$(?!\d)"
                        r"|(?<!\\)\$(?=[^\s$\d])((?:[^$\\]|\\.)*?)(?<=[^\s\\])\$", re.DOTALL)
_DOLLAR = re.compile(r"(?<!\\)\$")
_DISPLAY = re.compile(r"(?<!\\)\$\$")
# Outside every pair: a "$" before a digit is money ("$5"); any other one is a math delimiter
# the author left unpaired ("0.8\\pm1.7$ and", "$\\nu= 1/2 $"): dropped.
_STRAY_MATH = re.compile(r"(?<!\\)\$(?!\d)")


def _escape_money(text: str) -> str:
    """Every "$" that is no part of a math pair escaped (pylatexenc would open math at it) when
    it is money, dropped when it is an unpaired math delimiter."""
    text = _DISPLAY.sub("$", text)
    out, at = [], 0

    def outside(part: str) -> str:
        if "\\" in text:  # a text with LaTeX: an unpaired "$" not before a digit is math
            part = _STRAY_MATH.sub(" ", part)
        return _DOLLAR.sub(r"\\$", part)

    for match in _MATH_PAIR.finditer(text):
        out.append(outside(text[at:match.start()]))
        out.append(match.group(0))
        at = match.end()
    out.append(outside(text[at:]))
    return "".join(out)


def has_latex(text: str) -> bool:
    match = _LATEX_HINT.search(text)
    if match is None:
        return False
    return match.group(0) != "$" or bool(_MATH_PAIR.search(text)) or "\\" in text


def latex_to_text(text: str) -> str:
    """LaTeX to text, whitespace folded. Never raises: pylatexenc reads unbalanced braces and
    unknown macros leniently; whatever it still cannot read is kept as written."""
    text = _EMPTY_ACCENT.sub(r"\1", _ABOUT_MATH.sub(_KEEP_TILDE, text))
    text = _TILDE_NUMBER.sub(_KEEP_TILDE, _BARE_PERCENT.sub(r"\\%", _escape_money(text)))
    text = _URL_MACRO.sub(r"\1", _HREF.sub(r"\1", text))
    text = _SUP.sub(lambda m: m.group(1).translate(_SUPERSCRIPT), text)
    text = _SUB.sub(lambda m: m.group(1).translate(_SUBSCRIPT), text)
    try:
        # Its warnings about macros it cannot expand are not the user's business.
        with quiet_logger("pylatexenc"):
            plain = _converter().latex_to_text(text)
    except Exception:  # noqa: BLE001 - a parser bug must not lose an abstract
        plain = _fallback(text)
    if "%s" in plain and "%s" not in text:  # a macro without its arguments ("\\frac{a")
        plain = _fallback(text)
    return " ".join(plain.replace(_KEEP_TILDE, "~").split())


def _fallback(text: str) -> str:
    previous = None
    while previous != text:
        previous, text = text, _WRAP.sub(r"\1", text)
    return _MATH.sub(r"\1", text).replace("\\%", "%")


def to_text(text: str) -> str:
    """What a reader sees of a source's text: Markdown emphasis and LaTeX removed, whitespace
    folded."""
    text = strip_markdown(text)
    if has_latex(text):
        return latex_to_text(text)
    return " ".join(text.split())
