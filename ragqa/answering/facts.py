"""Which sentence of an abstract holds what a fact question asks for.

A fact question asks for something of a kind: a figure ("How much faster …?"), a comparison
("How does X compare with Y?"), a condition ("When does … hold?"), a method ("What does …
propose?"), an assumption. The sentence that answers it states a thing of that kind, and shares the
question's own words, read with the abstract's abbreviations both ways ("backpropagation" is
"BP" where the abstract writes "backpropagation (BP)") and symbols as words ("square root",
"times", "at most", "big-O"). `sentence_signals` gives each sentence those signals; the fact
answer (answer.py) adds the cross-encoder's reading and weighs them by name with the model in
ragqa/data/fact_sentence_model.json, which bench/reading/fit_facts.py fits on the development
half of the independent fact sets and writes with its provenance (models/linear.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from ragqa.answering.artifacts import CODE, asks_whether_released, releases
from ragqa.index import lexical
from ragqa.models.linear import shipped_model
from ragqa.retrieval.decide import name_at, name_tokens
from ragqa.sources.paper import PROPOSES, contribution_sentence

# A question that asks for a quantity ("how many", "what speedup", "the largest gain"), and the
# measure it names (`measure`: "speedup" in "What is the speedup of …"). One detector for the
# fact kind below and for the answer's choice of sentences (answer.py).
QUANTITY = re.compile(
    r"\b(?:how (?:many|much|fast|large|long|big|small|well|accurate|often)|by how|"
    r"what(?:'s)? (?:\w+ ){0,3}?(?P<measure>speed-?up|accuracy|error|rate|score|f1|bleu|"
    r"improvement|gain|reduction|percentage|share|fraction|proportion|ratio|number|size|"
    r"perplexity|auc|map|margin|factor|latency|throughput|cost|performance|precision|recall)s?|"
    r"(?:largest|maximum|average|best|overall) (?:\S+ ){0,4}(?:improvement|gain|reduction))\b",
    re.IGNORECASE)
# What a question asks for, by its wording.
ASKS: dict[str, re.Pattern] = {
    "quantity": QUANTITY,
    "comparison": re.compile(r"\b(?:compare[sd]?|comparison|than|outperform\w*|beat\w*|"
                             r"relative to|versus|vs\.?|over the previous|better|worse)\b",
                             re.IGNORECASE),
    "condition": re.compile(r"^\s*(?:when|under what|in what (?:situation|case|setting|regime)s?|"
                            r"for what values?|for which|in which (?:case|setting|situation)s?|"
                            r"at (?:what|which) (?:point|stage|time))\b"
                            r"|\b(?:under what|what conditions?|in what (?:situation|case)s?|"
                            r"when does|when do|when is|when can|what (?:has|needs|must) to hold|"
                            r"what must hold|(?:required|needed|necessary) for)\b", re.IGNORECASE),
    # "Which datasets is it evaluated on?", "To which problem is it applied?"
    "evaluation": re.compile(r"\b(?:(?:which|what) (?:\S+ ){0,6}(?:datasets?|benchmarks?|corpora|"
                             r"corpus|tasks?|games|environments?|languages|domains?|"
                             r"applications?|problems?)|evaluat(?:ed|e|ion)|tested|validated|"
                             r"experiments?|applied|appl(?:y|ies)|used to (?:test|train)|"
                             r"(?:trained|tested|reported) on|results)\b", re.IGNORECASE),
    # What a paper contributes: "What does X propose?", "What training objectives does X
    # introduce?", "How does it work?" ("approach" or "method" alone names a topic as often).
    "method": re.compile(r"\b(?:propos\w*|introduc\w*|present\w*|develop\w*|contribut\w*|"
                         r"how do(?:es)? (?:the|they|it|this) \w+)\b", re.IGNORECASE),
    "assumption": re.compile(r"\bassum\w*\b", re.IGNORECASE),
    "bound": re.compile(r"\b(?:big-?o|bound(?:ed)?|order of|rate of convergence|"
                        r"convergence rate|complexity)\b", re.IGNORECASE),
}
# What a sentence states, by its wording.
_NUMBER_WORDS = (r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|"
                 r"twenty|thirty|forty|fifty|hundred|thousand|half|twice|several)")
# A figure a sentence states: a number with a decimal point or a unit ("2.13×", "85%", "45h",
# "3 layers", "6 out of 8"), a number of two digits or more that is no year, or a factor in
# words ("ten times", "twice"); not the "1)" of an enumeration, nor a number in a name
# ("ResNet-50", "pass@1") or before a verb ("Stage 2 is", "Theorem 1 gives"). One detector for
# the fact answer's signals and its word-overlap scores (answer.py).
FIGURE = re.compile(r"(?<![\w@-])\d(?:[\d,]*\.\d+|[\d,]*\s?(?:×|x\b|%|percent|times|fold|"
                    r"points?\b|[kmb]\b|ms\b|s\b|h\b|hours?\b|(?!(?:is|was|has|does|shows|"
                    r"gives|uses|its|this|thus|as|us)\b)[a-z]{2,}s\b)|\s+out of\s+\d)"
                    r"|(?<![\w@-])(?!(?:19|20)\d\d\b)\d{2,}\b"  # a year is no figure
                    rf"|\b{_NUMBER_WORDS}(?:\s+|-)(?:times|fold|percent)\b|\btwice\b",
                    re.IGNORECASE)
# The unit a quantity question names, and a figure in that unit.
_UNITS = {
    "percent": (re.compile(r"\b(?:percent\w*|share|fraction|proportion|accuracy|error rate)\b|%",
                           re.IGNORECASE),
                re.compile(r"\d\s?(?:%|percent)|percent", re.IGNORECASE)),
    "times": (re.compile(r"\b(?:times|speed-?ups?|faster|slower|fold|how much (?:smaller|larger|"
                         r"less|more|fewer))\b|×", re.IGNORECASE),
              re.compile(rf"\d\s?(?:×|x\b|times|-?fold)|\b{_NUMBER_WORDS}(?:\s+|-)(?:times|fold)\b"
                         r"|\btwice\b", re.IGNORECASE)),
}
# An evaluation or application sentence: where experiments were run, on named things.
_EVALUATES = re.compile(r"\b(?:experiment\w*|evaluat\w*|benchmarks?|datasets?|corpora|tested|"
                        r"results (?:on|from)|appl(?:y|ied|ies)|validat\w*|demonstrat\w* on|"
                        r"(?:train|test)(?:ed|s)? (?:\w+ )?on)\b", re.IGNORECASE)
# Any sentence in which the authors propose something ("we further propose a global-local
# loss", paper.PROPOSES) or name what they proposed ("the proposed method"), not only the
# abstract's first contribution sentence.
_PROPOSED = re.compile(r"\bproposed\b", re.IGNORECASE)
# A name: a capitalised word after a sentence's first (ReClor, MIMIC-CXR, ACE2004, Atari).
_NAME = re.compile(r"(?<=\s)[A-Z][\w-]*")

_COMPARES = re.compile(r"\b(?:than|outperform\w*|surpass\w*|improv\w*|better|worse|lower|"
                       r"higher|fewer|compared|relative|over|beat\w*|gains?|reduc\w*)\b",
                       re.IGNORECASE)
# A condition a sentence states ("only when", "as long as", "≤"): the fact answer's
# "condition" signal, and its quoted condition (answer_span: from here to the clause's end).
# Not "only" alone ("with only 5% of the labels").
_CONDITION = re.compile(r"\b(?:when|whenever|if|unless|as long as|provided(?: that)?|under|"
                        r"only (?:when|if)|in the (?:condition|case|regime|setting)s?(?: of)?|"
                        r"as soon as|once)\b|≤|≥", re.IGNORECASE)
_ASSUMES = re.compile(r"\bassum\w*\b", re.IGNORECASE)
# Symbols as a reader says them.
_SYMBOLS = {"√": " square root ", "×": " times ", "≤": " at most ", "≥": " at least ",
            "≈": " approximately ", "%": " percent ", "∞": " infinity ", "ϵ": " epsilon ",
            "ε": " epsilon ", "ν": " nu ", "λ": " lambda ", "O(": " big O ("}
_ABBREVIATION = re.compile(r"((?:[\w-]+\s+){1,6}?)\(([A-Z][A-Za-z0-9-]{1,9})\)")

# "number": a question only a figure answers (asks_figure) and a sentence with any number in it,
# in words too ("We design two types of attacks" for "How many kinds of attacks …?", "orders of
# magnitude" for "how large are the savings"), where FIGURE sees none. With it, the fact sets'
# first sentence is an answer 0.860 of the time, 5-fold, against 0.853 without (570
# questions; bench/reading/fit_facts.py, --drop number; fact round 9's dev half, session 37).
SIGNALS = ("overlap", "figure", "compares", "condition", "method", "assumption", "first",
           "unit", "evaluation", "proposes", "beyond_title", "asking_clause", "number")

# A question that first says which paper it means and then, after a dash, colon or semicolon,
# what it asks of it ("Kronecker factored posterior over a trained network's weights: which
# alternatives is it compared with?"): the clause with a question word asks; the others name
# the paper, whose sentences restate them (fact round 8's calibrate half, session 35). Read so
# ("asking_clause", and "beyond_title" of the asking words alone), the fact sets' first
# sentence is an answer 0.849 of the time, 5-fold, against 0.824 without (524 questions;
# bench/reading/fit_facts.py, --drop asking_clause on the code before the restriction).
_CLAUSE_BREAK = re.compile(r"\s+(?:--|—|–|-)\s+|\s*[:;]\s+")
_QUESTION_WORDS = frozenset({"what", "which", "how", "when", "where", "who", "whom", "whose",
                             "why"})


def asking_clause(question: str) -> tuple[str, str] | None:
    """(the clause that asks, the rest that names the paper) of a question put in parts, or
    None (one part, or no part with a question word)."""
    parts = _CLAUSE_BREAK.split(question)
    asking = [i for i, part in enumerate(parts)
              if _QUESTION_WORDS & set(re.findall(r"[a-z]+", part.lower()))]
    if len(parts) < 2 or not asking:
        return None
    last = asking[-1]
    return parts[last], " ".join(parts[:last] + parts[last + 1:])


def asked(question: str) -> set[str]:
    """The kinds of thing a question asks for."""
    return {kind for kind, pattern in ASKS.items() if pattern.search(question)}


# Of the quantities a question asks for (QUANTITY), those only a figure answers: "how many",
# "by how much", "how large", "what percentage of"; not "how well", "how often" or "what rate"
# (words may answer those).
_FIGURE_ONLY = frozenset({"many", "much", "large", "big", "small", "fast", "long", "percentage",
                          "number", "fraction", "proportion", "share"})


def asks_figure(question: str) -> bool:
    """Whether the question asks for a figure that only a number can give."""
    for match in QUANTITY.finditer(question):
        first, *rest = match.group(0).lower().split()
        if first == "by" or (first == "how" and rest[0] in _FIGURE_ONLY):
            return True
        if first == "what" and rest == [match.group("measure").lower()] \
                and rest[0] in _FIGURE_ONLY and re.match(r"\s+of\b", question[match.end():], re.I):
            return True
    return False


# Any number, in digits (superscript ones too: LaTeX's "$O(d^2)$" reads "O(d²)"), in words, or
# a growth rate ("O(d)"): a text without one states no figure.
_ANY_NUMBER = re.compile(r"\d|[⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉]|(?-i:\b[OΘΩÕ]\()"
                         r"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
                         r"twelve|\w+teen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|"
                         r"hundreds?|thousands?|millions?|billions?|dozens?|half|halv\w*|"
                         r"twice|double\w*|triple\w*|\w*fold|single|magnitudes?|quarters?|"
                         r"thirds?|linear\w*|quadratic\w*|exponential\w*|logarithmic\w*|"
                         r"several|few)\b", re.IGNORECASE)


def not_stated(question: str, document: str, title: str = "") -> str | None:
    """What the question asks that the paper's title and abstract (`document`) cannot hold, if
    anything: "figure" (a figure asked of a text with no number at all, in digits or words) or
    "code" (whether or where its code is out, asked of a text that does not say it releases
    its code or where to get it: artifacts.asks_whether_released and artifacts.releases, whose
    words for code and release a chat's "which ones have code?" shares), or "name" (named
    things it asks about, a benchmark or a model, that the text never writes, besides those of
    the paper's `title`: unmentioned_names). Issue 46: "the
    abstract does not say", not its nearest sentence. Set on the calibrate half of
    bench/reading/unstated_blind.jsonl (bench/reading/unstated.py): how well a sentence reads
    as the answer did not tell stated from unstated there (balanced accuracy 0.56), while a
    text with no number holds no figure whatever the question."""
    if asks_figure(question) and not _ANY_NUMBER.search(document):
        return "figure"
    if asks_whether_released(question) and not releases(CODE, "", document):
        return "code"
    if unmentioned_names(question, document, title):
        return "name"
    return None


# A question whether the paper does a thing starts with one of these ("Is SafeDrug evaluated on
# MIMIC-III?", "Does it report results on SumMe and TVSum?").
_ASKS_WHETHER = frozenset({"is", "are", "was", "were", "does", "do", "did", "has", "have", "can"})
# A yes/no question's subject, the paper it asks about, stands among its first words ("Is
# SafeDrug evaluated …", "Does the SafeDrug model …"); a name later is what it asks about.
_SUBJECT_WORDS = 4
# Of a name written with a hyphen or a space, a first word this long written alone counts as
# the name ("ImageNet" for "ImageNet-1K", "MIMIC-III" for "the MIMIC-III Dataset").
_NAME_HEAD_CHARS = 3


def unmentioned_names(question: str, document: str, title: str = "") -> list[str]:
    """The named things a question asks about that the paper's title and abstract (`document`)
    never write, when it writes none of them (else the quote answers part of it): of a
    question whether ("Is SafeDrug evaluated on MIMIC-III?"), its names but those of its
    subject (its first words) and of the paper's `title`; of any other, the answers it
    offers, two or more names each before its own question mark ("Which benchmarks is it
    evaluated on? FB15k-237? WN18RR?"; one name before a mark is what a question asks of the
    paper: "How does it compare with GAMENet?").
    English only. A name counts as written leniently (`_written`): a wrong "does not say" hides
    an answer (issue 46, item 4; bench/reading/unstated.py)."""
    words = question.split()
    names = list(dict.fromkeys(name for group in name_tokens(question) for name in group))
    if words and words[0].lower() in _ASKS_WHETHER:
        subject = _Text(" ".join([title, *words[:_SUBJECT_WORDS]]))
        asked = [name for name in names if not _written(name, subject)]
    else:
        asked = _offered(question, names)
    text = _Text(document)
    return asked if asked and not any(_written(name, text) for name in asked) else []


def _offered(question: str, names: list[str]) -> list[str]:
    """The names a question offers as answers: two or more, each right before a question mark,
    with nothing but marks between one's mark and the next ("(BERT? BART?)")."""
    ends = []
    for name in names:
        at = name_at(name, question)
        if at >= 0 and question[at + len(name):].lstrip().startswith("?"):
            ends.append((at, question.index("?", at + len(name)), name))
    ends.sort()
    run = [ends[0]] if ends else []
    for previous, current in zip(ends, ends[1:], strict=False):
        between = question[previous[1] + 1:current[0]]
        run = run + [current] if not any(c.isalnum() for c in between) else [current]
    return [name for _, _, name in run] if len(run) >= 2 else []


class _Text:
    """A text as names are looked for in it: its letters and digits run together, its terms."""

    def __init__(self, text: str) -> None:
        self.bare = _bare(text)
        self.terms = lexical.terms(text.replace("-", " "))
        self.words = {_bare(word) for word in text.split()}


def _written(name: str, text: _Text) -> bool:
    """Whether the text writes the name, leniently: its letters and digits anywhere ("Llama 2"
    for "Llama2", "MS COCO" for "MSCOCO"), its words in a row, the first word of a longer name
    ("ImageNet" for "ImageNet-1K"), an abbreviation's plural without its "s" ("CNN" for
    "CNNs"), or the other side of an ML abbreviation (ml_acronyms.tsv: "PTB" for "Penn
    Treebank", "knowledge distillation" for "KD")."""
    bare = _bare(name)
    terms = lexical.terms(name.replace("-", " "))
    heads = {_bare(name.split()[0]), _bare(name.split("-")[0])} if name.split() else set()
    if not bare or not terms or bare in text.bare or lexical.holds_run(text.terms, terms) \
            or any(len(head) >= _NAME_HEAD_CHARS and head in text.bare for head in heads):
        return True
    if name.endswith("s") and sum(c.isupper() for c in name) >= 2:  # "CNNs": a CNN
        return _written(name[:-1], text)
    long_forms = lexical.long_form_terms().get(name.lower(), ())
    shorts = lexical.abbreviations_of_phrases().get(" ".join(terms), ())
    return any(form and lexical.holds_run(text.terms, list(form)) for form in long_forms) \
        or any(short in text.words for short in shorts)


def _bare(text: str) -> str:
    """The text's letters and digits in lower case, run together ("MIMIC-III" -> "mimiciii")."""
    return "".join(c for c in text.lower() if c.isalnum())


def asks_for_fact(question: str) -> bool:
    """Whether a question asks for a fact (a figure, a comparison, a condition, a dataset, what
    is proposed) rather than for papers."""
    return bool(asked(question))


def _units_asked(question: str) -> list[re.Pattern]:
    return [figure for asks, figure in _UNITS.values() if asks.search(question)]


def _spoken(text: str) -> str:
    for symbol, words in _SYMBOLS.items():
        text = text.replace(symbol, words)
    return text


def abbreviations(text: str) -> dict[str, set[str]]:
    """The abstract's own abbreviations, both ways: "backpropagation (BP)" gives
    {"bp": {"backpropag"}, "backpropag": {"bp"}} (terms as BM25 stems them). The long form is
    the words before the parenthesis whose initials spell the abbreviation, else its last
    word."""
    pairs: dict[str, set[str]] = {}
    for match in _ABBREVIATION.finditer(text):
        words, short = match.group(1).split(), match.group(2)
        initials = short.replace("-", "").lower()
        long_words = next((words[-k:] for k in range(len(words), 0, -1)
                           if "".join(w[0] for w in words[-k:]).lower() == initials), words[-1:])
        short_terms = lexical.terms(short)
        long_terms = lexical.terms(" ".join(long_words))
        for term in short_terms:
            pairs.setdefault(term, set()).update(long_terms)
        for term in long_terms:
            pairs.setdefault(term, set()).update(short_terms)
    return pairs


def _question_terms(question: str, pairs: dict[str, set[str]]) -> set[str]:
    terms = set(lexical.terms(_spoken(question), query=True))
    return terms | {alias for term in terms for alias in pairs.get(term, ())}


def sentence_signals(question: str, sentences: Sequence[str], abstract: str, titles: str
                     ) -> np.ndarray:
    """Sentences x SIGNALS, each row filled by name (the columns in the order of SIGNALS): the
    question's words in each (abbreviations both ways, symbols as words; per square root of its
    length: "overlap") and, for each kind the question asks for, whether
    the sentence states one; whether it is the abstract's first sentence (its background,
    rarely an answer); whether it holds a figure in the unit the question names (a
    percentage, a factor); for a question about datasets or applications, half for an
    evaluation word and half for a name; for a question about what is proposed, whether the
    sentence is the abstract's contribution sentence, and whether it proposes anything; and
    the question's words beyond the titles of the papers being read (`titles`, all of them:
    the words that name one paper must not count for another that mentions it) in it: the
    words that name the paper found the paper, the others say what is asked of it ("In the
    work on learning to defer to unseen experts, which *benchmarks* …": the experiments'
    sentence, not the one that restates the title); and, of a question put in parts
    (asking_clause), the words of the part that asks ("asking_clause"), which alone then
    count as beyond the titles."""
    kinds = asked(question)
    pairs = abbreviations(abstract)
    terms = _question_terms(question, pairs)
    named = set(lexical.terms(_spoken(titles)))
    beyond_title = terms - named - {alias for term in named for alias in pairs.get(term, ())}
    contribution = contribution_sentence(abstract)
    units = _units_asked(question) if kinds & {"quantity", "comparison"} else []
    figure_asked = asks_figure(question)
    clauses = asking_clause(question)
    asks = _question_terms(clauses[0], pairs) - _question_terms(clauses[1], pairs) \
        if clauses else set()
    if clauses:  # the words that name the paper restate it: only the asking ones count
        beyond_title &= asks
    rows = []
    for i, sentence in enumerate(sentences):
        words = set(lexical.terms(_spoken(sentence)))
        rows.append({
            "overlap": len(terms & words) / np.sqrt(len(words) + 5),
            # "How does X compare with Y?" is answered by a figure as often as by words.
            "figure": bool(kinds & {"quantity", "comparison"}) and bool(FIGURE.search(sentence)),
            "compares": "comparison" in kinds and bool(_COMPARES.search(sentence)),
            "condition": "condition" in kinds and bool(_CONDITION.search(sentence)),
            "method": "method" in kinds and sentence == contribution,
            "assumption": "assumption" in kinds and bool(_ASSUMES.search(sentence)),
            "first": i == 0,
            "unit": any(unit.search(sentence) for unit in units),
            "evaluation": "evaluation" in kinds and (bool(_EVALUATES.search(sentence)) +
                                                     bool(_NAME.search(sentence))) / 2,
            "proposes": "method" in kinds and bool(PROPOSES.search(sentence)
                                                   or _PROPOSED.search(sentence)),
            "beyond_title": len(beyond_title & words) / np.sqrt(len(words) + 5),
            "asking_clause": len(asks & words) / np.sqrt(len(words) + 5),
            "number": figure_asked and bool(_ANY_NUMBER.search(sentence))})
    return np.array([[float(row[name]) for name in SIGNALS] for row in rows],
                    dtype=np.float64).reshape(len(sentences), len(SIGNALS))


# The weights of SIGNALS and of the cross-encoder's logit ("cross_encoder"), by name:
# ragqa/data/fact_sentence_model.json, written with its provenance (the fact sets, the split,
# the 5-fold figure) by `python bench/reading/fit_facts.py --home DIR --write`, a conditional
# logit over each question's sentences. The overlap's weight is negative beside
# "beyond_title": of the question's words, those of the titles count against a sentence (they
# restate what the paper is), the others for it.
FACT_SENTENCE_MODEL = "fact_sentence_model.json"


def fact_scores(signals: np.ndarray, cross_encoder: np.ndarray) -> np.ndarray:
    """Each sentence's score: its SIGNALS (a row of `sentence_signals`) and the cross-encoder's
    logit, weighed by the fitted model."""
    weights = shipped_model(FACT_SENTENCE_MODEL).vector([*SIGNALS, "cross_encoder"])
    return signals @ weights[:-1] + weights[-1] * np.asarray(cross_encoder, dtype=np.float64)


# ---------------------------------------------------------------- the answering phrase

_SPAN_FIGURE = re.compile(
    r"(?:(?:up to|over|about|nearly|almost|only|from|by)\s+)?"
    r"(?<![\w.])(?!(?:19|20)\d\d\b)\d(?:[\d,]*\d)?(?:\.\d+)?"
    r"(?:\s?[-–]\s?\d(?:[\d,]*\d)?(?:\.\d+)?)?"
    r"(?:\s?(?:×|x\b|%|percent\b|times\b|-?fold\b|points?\b|pp\b|BLEU\b|F1\b))?"
    r"(?:\s?(?:/|to|out of)\s?\d[\d,]*(?:\.\d+)?\s?(?:×|%|x\b)?)?"
    rf"|\b{_NUMBER_WORDS}(?:\s+|-)(?:times|fold|percent)\b|\btwice\b", re.IGNORECASE)
# The names an evaluation sentence lists: "ACE2004, ACE2005, and GENIA", "Atari 2600".
_SPAN_NAMES = re.compile(r"[A-Z][\w-]*(?: \d+)?(?:(?:,? and |, )[A-Z][\w-]*(?: \d+)?)*")
_COUNT = re.compile(r"\bhow many\b|\bnumber of\b", re.IGNORECASE)
# What a count question counts: "How many tasks …" -> "tasks".
_COUNTED = re.compile(r"\b(?:how many|number of)((?:\s+[A-Za-z][\w-]*){1,3})", re.IGNORECASE)
# A quoted condition, assumption or proposal goes on to its clause's end.
_SPAN_CLAUSE = re.compile(r"[^,;.(]*")
# O(1/√(N)), Õ(d/ε²), Θ(n log n): balanced to two levels of parentheses.
_SPAN_BOUND = re.compile(r"[OΘΩÕ]\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")


_NEXT_WORD = re.compile(r"\s*([A-Za-z][\w-]*)")


def _counts_what(counted: list[str], sentence: str, end: int) -> bool:
    """Whether the figure ending at `end` is followed by a word of what the question counts
    (`counted`: the terms of its next three words, "how many target languages")."""
    following = _NEXT_WORD.match(sentence, end)
    word = lexical.terms(following.group(1)) if following else []
    return bool(word) and word[0] in counted


def answer_span(question: str, sentence: str) -> tuple[int, int] | None:
    """Where in the quoted sentence the asked-for thing is: the figure (one with a unit
    first), the names of what it was evaluated on, the condition clause, the proposed thing,
    the assumption; None when the question asks for none of these or the sentence shows
    none."""
    kinds = asked(question)
    if "bound" in kinds and (match := _SPAN_BOUND.search(sentence)):
        return match.start(), match.end()
    if kinds & {"quantity", "comparison"}:
        figures = [m for m in _SPAN_FIGURE.finditer(sentence) if m.group(0).strip()]
        # A bare count ("278") answers "how many"; elsewhere it is a part of something else
        # ("the range [0, 100]"), and only a figure with a unit, a decimal or a range is one.
        counts = bool(_COUNT.search(question))
        candidates = [m for m in figures if counts or not m.group(0).strip().isdigit()]
        # A count of what is asked first: "278 tasks" for "How many tasks …", not "pass@1".
        counted = _COUNTED.search(question)
        counted_terms = lexical.terms(counted.group(1)) if counted else []
        best = next((m for m in candidates if _counts_what(counted_terms, sentence, m.end())),
                    None) or next(iter(candidates), None)
        if best:
            return best.start(), best.start() + len(best.group(0).rstrip())
    if "evaluation" in kinds and (evaluates := _EVALUATES.search(sentence)):
        names = list(_SPAN_NAMES.finditer(sentence, evaluates.end()))
        if names:
            most = max(names, key=lambda m: m.group(0).count(",") + m.group(0).count(" and "))
            return most.start(), most.end()
    for kind, states in (("condition", _CONDITION), ("assumption", _ASSUMES)):
        if kind in kinds and (match := states.search(sentence)):
            return match.start(), _clause_end(sentence, match.end())
    if "method" in kinds and (match := PROPOSES.search(sentence)) \
            and (end := _clause_end(sentence, match.end())) > match.end():
        return match.end(), end
    return None


def _clause_end(sentence: str, start: int) -> int:
    """Where the clause going on from `start` ends: after its last word (a bold span with a
    space inside it renders as text)."""
    return len(sentence[:_SPAN_CLAUSE.match(sentence, start).end()].rstrip())
