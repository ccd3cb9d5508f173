"""Question understanding: what a question asks about, apart from how it asks.

"I'm looking for papers that train models with the data spread over many machines, e.g. cutting
communication costs or tolerating faulty workers?" is a frame ("I'm looking for papers that"), a
topic ("train models with the data spread over many machines") and examples of it ("cutting
communication costs", "tolerating faulty workers"). The dense side embeds the topic and each
example as sub-queries (a frame says nothing about the topic and dilutes its embedding; a long
topic dilutes its examples); BM25 gets every content word.

Pure text work: no heavy imports, so that the CLI's parsing of a question costs nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A leading request frame, matched again and again until none is left ("Please, can you list
# all the papers that study ..."). Each alternative ends where the topic begins.
_FRAMES = [
    r"(?:please|pls|hi|hello|hey)\b[,!]?",
    r"(?:can|could|would|will) you(?: please)?(?: help me)?",
    r"(?:i am|i'm|im|we are|we're) (?:looking|searching|hunting) for",
    r"(?:i|we) (?:want|need|would like|'d like)(?: to (?:find|see|know|read))?",
    r"(?:help me|let me) (?:find|see|know)",
    r"(?:show|give|tell|find|get|bring) (?:me|us)",
    r"(?:summari[sz]e|survey|review|overview)",
    r"(?:an |a )?(?:overview|summary|survey|review) (?:of|on)",
    r"(?:tell me|talk) about",
    r"what(?:'s| is| are) (?:new|happening) (?:in|on|with)",
    r"(?:find|list|show|name|give|identify|retrieve|search for|look for|return|enumerate|"
    r"point me to|collect|gather|fetch)",
    r"(?:what|which) (?:are|is|were) (?:the|some|all)?",
    r"what (?:work|research|literature|studies) (?:is|are|exists?|has been done) (?:there )?"
    r"(?:on|about|regarding|into|in)?",
    r"(?:is|are) there (?:any|some)?",
    r"(?:do|does) (?:any|some) (?:of the )?",
    r"(?:which|what)",
    r"(?:any|all|some|every|the|those|these|other)",
    r"(?:recent|relevant|related|existing|accepted)",
    r"(?:papers?|works?|studies|study|articles?|abstracts?|publications?|research|"
    r"contributions?|submissions?|approaches|methods|literature)"
    r"(?: in (?:this|the) (?:collection|conference|list|set))?",
    r"(?:that|which|who|where|whose)",
    r"(?:are|is|was|were|do|does|did|have|has)",
    r"(?:(?:deal|deals|dealing|work|works|working|concerned|concern|concerns) (?:with|on)|"
    r"(?:focus|focuses|focusing|focused|centre|center|centred|centered) on|look(?:s|ing)? at|"
    r"(?:are |is )?(?:about|on|regarding|concerning|related to|relating to|dealing with)|"
    r"propose|proposes|proposing|present|presents|study|studies|studying|investigate|"
    r"investigates|investigating|explore|explores|exploring|address|addresses|addressing|"
    r"tackle|tackles|tackling|discuss|discusses|cover|covers|consider|considers|examine|"
    r"examines|analy[sz]e|analy[sz]es|introduce|introduces|involve|involves|describe|"
    r"describes|report|reports)",
    r"(?:there|out there|published)",
    r"(?:or|and|and/or)",  # "papers that study or reduce X": the second verb starts the topic
]
_FRAME = re.compile(r"^\s*(?:" + "|".join(_FRAMES) + r")\b[\s,:]*", re.IGNORECASE)
# Where the examples of a topic begin: "..., e.g. A or B", "(such as A, B)", "for example A".
_EXAMPLES = re.compile(
    r"[,;:(\s]\s*(?:e\.\s?g\.|eg\.|i\.\s?e\.|such as|for example|for instance|including|"
    r"in particular|especially|like)\s*,?\s*", re.IGNORECASE)
_ALTERNATIVE = re.compile(r"\s*(?:,\s*(?:or|and)\s+|,\s*|;\s*|\s+or\s+|\s+and/or\s+|/)\s*",
                          re.IGNORECASE)
# An "example" that starts like this continues the sentence instead ("models trained on one
# language, e.g. English, are applied to others"): it goes back into the topic.
_CONTINUATION = re.compile(
    r"^(?:is|are|was|were|be|been|being|has|have|had|which|that|who|whose|where|when|while|"
    r"whereas|to|into|onto|on|in|for|by|with|from|than|so|then|but|and|or|without|across|"
    r"over|under|within|through|rather)\b", re.IGNORECASE)
_TOPIC_JOIN = re.compile(r"\s*,\s*(?:or|and)\s+|\s*,\s*|\s+(?:or|and|and/or)\s+",
                         re.IGNORECASE)
_TRAILING = re.compile(r"[\s?.!,;:)\]]+$")
_WORD = re.compile(r"\w+")
# Words that carry no topic: a sub-query made of these alone is dropped.
_FUNCTION_WORDS = frozenset(re.findall(r"\w+", """
    a an the of in on for to with by from and or as at into via their its his her our your them
    they it this that these those some any all other such e g eg etc ie using use used uses
    based new way ways approach approaches method methods model models paper papers work works
    """))
# A topic of at most this many content words is split at "or" into alternatives.
MAX_SPLIT_WORDS = 6
# Sub-queries at most: the topic plus its alternatives and examples.
MAX_SUBQUERIES = 6


@dataclass(frozen=True)
class Understood:
    """A question taken apart. `topic` is what the dense side embeds first; `subqueries` are
    the topic and its alternatives/examples (the topic first); `lexical` is what BM25 sees."""

    question: str
    topic: str
    subqueries: tuple[str, ...]
    lexical: str


def strip_frame(question: str) -> str:
    """'Which papers are about X?' -> 'X': every leading request frame removed, trailing
    punctuation too. The question itself when nothing of substance would be left."""
    text = question.strip()
    for _ in range(12):
        stripped = _FRAME.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    text = _TRAILING.sub("", text).strip()
    return text if _content_words(text) else _TRAILING.sub("", question.strip())


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _FUNCTION_WORDS]


def _alternatives(text: str) -> list[str]:
    """'A, B or C' -> ['A', 'B', 'C'], keeping only parts that say something."""
    return [part.strip(" ()") for part in _ALTERNATIVE.split(text)
            if len(_content_words(part)) >= 1]


def understand(question: str) -> Understood:
    """Frame, topic, examples. The topic is everything before an "e.g."/"such as" clause; the
    examples and the "or" alternatives of that clause are sub-queries of their own."""
    topic_and_examples = strip_frame(question)
    parts = _EXAMPLES.split(topic_and_examples, maxsplit=1)
    topic = _TRAILING.sub("", parts[0]).strip(" ,;(") or topic_and_examples
    examples: list[str] = []
    if len(parts) > 1:
        for example in _alternatives(_TRAILING.sub("", parts[1])):
            if _CONTINUATION.match(example):
                topic = f"{topic} {example}"
            elif example.lower() not in (e.lower() for e in examples):
                examples.append(example)
    # "X or Y" (or "X and Y": "papers on audio and speech") in a short topic: each one is
    # searched on its own as well; in a long one, "or" joins words inside a description ("the
    # data or computation spread over many machines").
    alternatives = [part.strip() for part in _TOPIC_JOIN.split(topic) if _content_words(part)]
    if len(alternatives) > 1 and len(_content_words(topic)) <= MAX_SPLIT_WORDS:
        examples = [a for a in alternatives if a.lower() != topic.lower()] + examples
    subqueries = [topic, *examples]
    if len(topic) < 3:
        topic = question.strip()
        subqueries = [topic]
    return Understood(question, topic, tuple(subqueries[:MAX_SUBQUERIES]), topic_and_examples)
