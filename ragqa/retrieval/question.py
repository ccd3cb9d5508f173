"""Question understanding: what a question asks about, apart from how it asks, and what kind
of question it is.

"I'm looking for papers that train models with the data spread over many machines, e.g. cutting
communication costs or tolerating faulty workers?" is a frame ("I'm looking for papers that"), a
topic ("train models with the data spread over many machines") and examples of it ("cutting
communication costs", "tolerating faulty workers"). The dense side embeds the topic and each
example as sub-queries (a frame says nothing about the topic and dilutes its embedding; a long
topic dilutes its examples); BM25 gets every content word.

The kind: a list question ("which papers ...", a bare topic) wants every matching paper; a
claim or a fact question (one about one paper, too) wants the papers that hold it. A question
in another language has its own frames, and only its Latin-script words for BM25.

Text work, with one exception: whether a question asks for papers is a fitted model that reads
the question's MiniLM embedding too (retrieval/kinds.py, loaded at its first use).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ragqa.retrieval.kinds import list_question_model

# "What's (out) there on …", "What do you have about …": a request for papers.
_WHATS_THERE = (r"what(?:'s| is| do you have| have you got)(?: out)? (?:there |in here |here )?"
                r"(?:on|about|for|regarding)")
# Words that announce a new topic in a chat ("different question", "switching gears", "on
# another note"): the chat's rule that such a turn leaves the last papers (ANNOUNCES, anywhere
# in a turn: answering/followups.py) and the lead-in a topic loses before a mark (_CHAT_LEAD;
# its older lead words, which a space may end, and the request frames' few are still lists of
# their own). Singular only: "Which one handles new topics?" selects, "new directions in
# continual learning" is a topic.
ANNOUNCEMENT = (r"(?:(?:different|another|new|separate|unrelated)\s+"
                r"(?:thing|question|q|topic|subject|area|direction|query)"
                r"|switch(?:ing)?\s+(?:topics?|gears|subjects?)"
                r"|chang(?:e|ing)\s+(?:the\s+)?(?:topic|subject|gears)"
                r"|something\s+(?:else|different)|unrelated|moving on|on another note)")
# A request to the tool ("Summarize the papers on X"), a frame only before the papers are named:
# after them it is what the papers do ("Which papers summarize dialogues?": issue 45).
_REQUEST_VERBS = r"(?:summari[sz]e|survey|review|overview)"
# A leading request frame, matched again and again until none is left ("Please, can you list
# all the papers that study ..."). Each alternative ends where the topic begins.
_FRAMES = [
    r"(?:please|pls|hi|hello|hey)\b[,!]?",
    # a chat's turn to a new topic: "Now, anything on X?", "OK, separate question: …";
    # "next" and "then" only before a mark or a request ("next token prediction" is a topic)
    r"(?:now|ok|okay|so|also|alright|separately|(?:a )?(?:separate|another|new|"
    r"different) (?:question|topic)|switching (?:topics?|gears))\b(?![-'’])[,:!]?",
    r"(?:next|then)(?:\s*[,:;!—–]|(?=\s+(?:papers?|works?|anything|any|what|which|show|"
    r"is there|are there)\b))",
    r"(?:what|how) about",
    _WHATS_THERE,
    r"(?:can|could|would|will) you(?: please)?(?: help me)?",
    r"(?:i am|i'm|im|we are|we're) (?:looking|searching|hunting) for",
    r"(?:i|we) (?:want|need|would like|'d like)(?: to (?:find|see|know|read))?",
    r"(?:help me|let me) (?:find|see|know)",
    r"(?:show|give|tell|find|get|bring) (?:me|us)",
    r"(?P<survey>(?:an |a )?(?:overview|summary|survey|review) (?:of|on))",
    r"(?P<request>" + _REQUEST_VERBS + ")",
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
    r"(?:anything|something|stuff|things?)(?: (?:new|else|interesting|relevant))?",
    r"(?:any|all|some|every|the|those|these|other)",
    r"(?:recent|relevant|related|existing|accepted)",
    r"(?P<papers>papers?|works?|studies|study|articles?|abstracts?|publications?|research|"
    r"contributions?|submissions?|approaches|methods|literature)"
    r"(?: in (?:this|the) (?:collection|conference|list|set))?",
    r"(?:that|which|who|where|whose|anyone|anybody|someone)(?: here)?",
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
# One frame at a time; once the papers are named (its `papers` alternative), or a survey of
# something asked for ("Survey of review helpfulness prediction"), a request verb is the
# topic's ("Which papers summarize dialogues?": issue 45), so the frames end there.
_FRAME = re.compile(r"^\s*(?:" + "|".join(_FRAMES) + r")\b[\s,:]*", re.IGNORECASE)
# Where the examples of a topic begin: "..., e.g. A or B", "(such as A, B)", "for example A".
_EXAMPLES = re.compile(
    r"[,;:(\s]\s*(?:e\.\s?g\.|eg\.|i\.\s?e\.|such as|for example|for instance|including|"
    r"in particular|especially|like)\s*,?\s*", re.IGNORECASE)
_ALTERNATIVE = re.compile(r"\s*(?:,\s*(?:or|and)\s+|,\s*|;\s*|\s+or\s+|\s+and/or\s+|/)\s*",
                          re.IGNORECASE)
# A topic asked as a question of its own, then told more of: "crowd counting papers? like
# estimating how many ppl are in an image", "captioning papers? image, video, anything that
# generates descriptions"; or named, then given examples after a dash ("attack txs on chain -
# DeFi hacks, bridge exploits etc"; since session 35). What follows describes the topic as
# examples do.
_ASKED_THEN_TOLD = re.compile(r"\?\s+(?=\S)")
_TOLD_AFTER_DASH = re.compile(r"\s+(?:--?|—|–)\s+(?=\S)")
_DASH_AT_END = re.compile(r"\s(?:--?|—|–)\s*$")  # the second of a pair setting off an aside
# A clause after a comma that only gestures at examples ("node embeddings, deepwalk-ish
# stuff"): a word hedged by its suffix, or a vague word; such a clause is the topic's examples,
# never a part of the topic all its papers must hold (round 17's calibrate half, session 35).
_HEDGE_SUFFIXES = ("-ish", "-style", "-esque")
_VAGUE_WORDS = frozenset({"etc", "stuff"})
# An "example" that starts like this continues the sentence instead ("models trained on one
# language, e.g. English, are applied to others"): it goes back into the topic.
_CONTINUATION = re.compile(
    r"^(?:is|are|was|were|be|been|being|has|have|had|which|that|who|whose|where|when|while|"
    r"whereas|to|into|onto|on|in|for|by|with|from|than|so|then|but|and|or|without|across|"
    r"over|under|within|through|rather)\b", re.IGNORECASE)
_TOPIC_JOIN = re.compile(r"\s*,\s*(?:or|and)\s+|\s*,\s*|\s+(?:or|and|and/or|/)\s+",
                         re.IGNORECASE)
_TRAILING = re.compile(r"[\s?.!,;:)\]]+$")
_WORD = re.compile(r"\w+")
_WORD_OR_HYPHENED = re.compile(r"\w+(?:-\w+)*")
# Words that carry no topic: a sub-query made of these alone is dropped.
_FUNCTION_WORDS = frozenset(re.findall(r"\w+", """
    a an the of in on for to with by from and or as at into via their its his her our your them
    they it this that these those some any all other such e g eg etc ie using use used uses
    based new way ways approach approaches method methods model models paper papers work works
    kind sort thing things stuff
    """))
# A topic of at most this many content words is split at "or" into alternatives.
MAX_SPLIT_WORDS = 6
# What follows a short topic's question mark describes it in this many content words at least,
# unless it gives examples ("protein folding? thanks" and "GAN papers? only theoretical ones"
# are no descriptions; "graph matching? finding which nodes of two graphs correspond" is).
MIN_TOLD_WORDS = 4
# Sub-queries at most: the topic plus its alternatives and examples.
MAX_SUBQUERIES = 6


# What a question says it does not want (issue 45: a word of two senses read in the sense the
# rest of the question gives): "… — not teacher-student knowledge distillation", "… rather than
# defending against them", "I don't mean information diffusion …", and, in a sentence after
# the first, "Visual question answering is not what I'm after", "… channel codes don't count".
# A "not" counts only where a clause starts ("phrases that do not appear in it" asks for them),
# and not as "not only", "not just", "not surprisingly" …; "excluding", "as opposed to" and
# "other than" only after a mark ("methods for excluding outliers", "languages other than
# English" ask for them). English only: other languages' exclusions stay in their topic.
_NOT_AN_EXCLUSION = (r"(?!\s+(?:only|just|merely|necessarily|limited|least|always|all|too|so|as|"
                     r"yet|sure|even|mind|really|surprisingly|unexpectedly|unlike|to|quite|"
                     r"exactly|counting|including)\b)")
_WANT = r"(?:mean|meant|want|need|after|looking\s+for|interested\s+in)\b"
_MARK = r"(?:[—–;:(,]|\s-\s|\s--\s?)"
_EXCLUDED_AFTER = re.compile(
    r"(?:\s*" + _MARK + r"\s*(?:but\s+|and\s+)?|(?:^|(?<=[.?!]))\s*(?:but\s+)?)"
    r"(?:not|never)\b" + _NOT_AN_EXCLUSION + r"\s*"
    r"|\s+but\s+not\b" + _NOT_AN_EXCLUSION + r"\s*"
    r"|\s*,?\s*\b(?:rather than|instead of)\s+"
    r"|\s*" + _MARK + r"\s*(?:as opposed to|excluding|other than)\s+"
    r"|(?:^|(?<=[.?!,;—–]))\s*(?:but\s+)?(?:i|we)\s+(?:do not|don't|dont)\s+" + _WANT
    + r"(?!\s+to\b)\s*",
    re.IGNORECASE)
_EXCLUDED_BEFORE = re.compile(
    r"\s+(?:(?:is|are)\s*(?:not|n't)|isn't|aren't)\s+what\s+(?:i|we)(?:'m|'re|\s+am|\s+are)?\s+"
    + _WANT + r"|\s+(?:do|does)\s*(?:not|n't)\s+count\b", re.IGNORECASE)
_SENTENCE_END = re.compile(
    r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bal)(?<!\bvs)(?<!\bcf)[.?!](?:\s|$)")
# Where an excluded part ends: its sentence's end, a dash (a closing one goes with it), a
# semicolon; or where the question turns back to what it asks: "… not pruning, but
# distillation", "not adversarial robustness, I mean distribution shift".
_CLAUSE_END = re.compile(_SENTENCE_END.pattern + r"|(?P<dash>\s[—–]\s|\s-{1,2}\s)|;\s"
                         r"|(?P<turn>,?\s+(?:but|(?:i|we)\s+mean)\b(?!\s+not\b)\s*)",
                         re.IGNORECASE)
_BRACKET_END = re.compile(_SENTENCE_END.pattern + r"|\)")
# Exclusions read from one question, at most.
MAX_EXCLUSIONS = 3
# Words that ask but say nothing of what: a question left with only these keeps its exclusions.
_ASKING_WORDS = frozenset({"which", "what", "who", "how", "where", "when", "why", "is", "are",
                           "do", "does", "did", "one", "ones", "there", "anything", "any"})


def without_excluded(question: str) -> tuple[str, list[str]]:
    """'X — not Y.' -> ('X.', ['Y']): the question without what it says it does not want, and
    those parts (each as written). An exclusion inside brackets ends at the closing one; a
    question that would be left with nothing of its own keeps them all ("Never that one.")."""
    text, excluded = question, []
    for _ in range(MAX_EXCLUSIONS):
        after = _EXCLUDED_AFTER.search(text)
        if after:
            part, text = _cut_after(text, after)
        else:
            before = _EXCLUDED_BEFORE.search(text)
            ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, before.start())] \
                if before else []
            if not ends:  # none, or in the first sentence ("… models don't count letters")
                break
            part = text[ends[-1]:before.start()]
            text = text[:ends[-1]] + text[before.end():].lstrip(" .!?")
        part = part.strip(" ,;:.?!")
        if part.count(")") > part.count("("):
            part = part.rstrip(")")
        if _content_words(part):
            excluded.append(part)
    if not [w for w in _content_words(text) if w not in _ASKING_WORDS]:
        return question.strip(), []
    return text.strip(), excluded


def _cut_after(text: str, cue: re.Match) -> tuple[str, str]:
    """The part a cue ("— not", "rather than", …) excludes, and the text without it."""
    before_it = text[:cue.start()] + cue.group(0)
    bracketed = before_it.count("(") > before_it.count(")")
    end = (_BRACKET_END if bracketed else _CLAUSE_END).search(text, cue.end())
    stop = end.start() if end else len(text)
    join = " "
    opened_by_dash = bool(re.match(r"\s*(?:[—–]|\s-|--)", cue.group(0)))
    sentence_start = not text[:cue.start()].strip() or text[:cue.start()].rstrip()[-1] in ".?!"
    if end and end.group(0) == ")" and "(" in cue.group(0):
        stop = end.end()  # "(not VQA)" goes whole
    elif end and end.lastgroup == "dash" and opened_by_dash:
        stop = end.end()  # "— not surveys —" too
    elif end and end.lastgroup == "turn":
        stop, join = end.end(), ", "  # "not pruning, but distillation": what is asked stays
    elif end and sentence_start and end.lastgroup is None:
        stop = end.end()  # "… X. Not Y. …": the sentence goes with its full stop
    rest = text[stop:].lstrip()
    head = text[:cue.start()].rstrip()
    if head[-1:] in (".", "?", "!"):
        join = " "
    joined = head + ("" if not rest or rest[0] in ".,;:?!)" else join if head else "") + rest
    return text[cue.end():end.start() if end else len(text)], joined.strip()


@dataclass(frozen=True)
class Understood:
    """A question taken apart. `topic` is what the dense side embeds first; `subqueries` are
    the topic and its alternatives/examples (the topic first); `lexical` is what BM25 sees;
    `excluded`, what the question says it does not want (each part and its "or"
    alternatives), which none of the others holds."""

    question: str
    topic: str
    subqueries: tuple[str, ...]
    lexical: str
    excluded: tuple[str, ...] = ()


def strip_frame(question: str) -> str:
    """'Which papers are about X?' -> 'X': every leading request frame removed, trailing
    punctuation too. The question itself when nothing of substance would be left."""
    bare = without_chat_lead(question.strip())[0]
    text = _TRAILING_REQUEST.sub("", bare) if _content_words(bare) \
        else question.strip()
    named = False  # the papers named yet ("Which papers …"): request verbs are topic after
    for _ in range(12):
        frame = _FRAME.match(text)
        if not frame or named and frame.group("request"):
            break
        named = named or bool(frame.group("papers") or frame.group("survey"))
        text = text[frame.end():]
    text = _TRAILING.sub("", text).strip()
    return text if _content_words(text) else _TRAILING.sub("", question.strip())


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _FUNCTION_WORDS]


def _alternatives(text: str) -> list[str]:
    """'A, B or C' -> ['A', 'B', 'C'], keeping only parts that say something."""
    return [part.strip(" ()") for part in _ALTERNATIVE.split(text)
            if len(_content_words(part)) >= 1]


def _asked_then_told(text: str) -> list[str] | None:
    """[topic, what describes it] of a short topic asked as a question and then told more of
    ("crowd counting papers? like estimating how many ppl are in an image" -> ["crowd counting",
    "estimating how many ppl are in an image"]), or None. A longer question before the mark is
    a description of its own: the whole text stays the topic."""
    parts = _ASKED_THEN_TOLD.split(text, maxsplit=1)
    after_mark = len(parts) > 1
    if not after_mark:
        parts = _told_after(text)
        if parts is None:
            return None
    topic = strip_frame(parts[0])
    if not 0 < len(_content_words(topic)) <= MAX_SPLIT_WORDS:
        return None
    told = _EXAMPLES.split(" " + parts[1], maxsplit=1)  # "like …", "e.g. …": the examples
    described = strip_frame(" ".join(part.strip() for part in told if part.strip()))
    # What describes the topic: examples ("like …", "a, b, c") or a description in words of
    # its own; not a narrowing ("only theoretical ones", "which ones are fastest") or thanks.
    if not after_mark:  # after a dash or comma: examples only, not a clause that goes on
        examples = ("," in described or _hedged(described)) and \
            not _CONTINUATION.match(described)
        return [topic, _unhedged(described)] if examples else None
    if len(told) > 1 or "," in described or _hedged(described) or (
            len(_content_words(described)) >= MIN_TOLD_WORDS
            and not _CONTINUATION.match(described)):
        return [topic, _unhedged(described)]
    return None


def _told_after(text: str) -> list[str] | None:
    """[topic, what follows] of a topic told more of after one dash ("attack txs on chain -
    DeFi hacks, bridge exploits etc"; two dashes set off an aside) or, in words that only
    gesture at examples, after its last comma ("node embeddings, deepwalk-ish stuff")."""
    dashes = _TOLD_AFTER_DASH.split(text)
    if len(dashes) == 2 and not _DASH_AT_END.search(text):
        return dashes
    head, comma, tail = text.rpartition(",")
    return [head, tail] if comma and len(dashes) == 1 and _hedged(tail) else None


def _unhedged(text: str) -> str:
    """The examples without their hedges ("svrg-ish, deepwalk-style stuff" -> "svrg,
    deepwalk")."""
    def plain(word: re.Match) -> str:
        w = word.group(0)
        if w.lower() in _VAGUE_WORDS:
            return ""
        return next((w[:-len(s)] for s in _HEDGE_SUFFIXES if w.lower().endswith(s)), w)
    return " ".join(_WORD_OR_HYPHENED.sub(plain, text).split())


def _hedged(text: str) -> bool:
    """Whether a clause only gestures at examples ("svrg-ish", "LDA-style", "etc", "stuff")."""
    words = _WORD_OR_HYPHENED.findall(text.lower())
    return any(w.endswith(_HEDGE_SUFFIXES) or w in _VAGUE_WORDS for w in words)


def understand(question: str) -> Understood:
    """Frame, topic, examples, exclusions. The topic is everything before an "e.g."/"such as"
    clause; the examples and the "or" alternatives of that clause are sub-queries of their own.
    What the question says it does not want is in none of them (`excluded`)."""
    asked, excluded = without_excluded(question)
    topic_and_examples = strip_frame(asked)
    told = _asked_then_told(topic_and_examples)
    parts = told or _EXAMPLES.split(topic_and_examples, maxsplit=1)
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
        topic = asked
        subqueries = [topic]
    excluded_parts = dict.fromkeys(
        p for part in excluded for p in [part, *(
            _alternatives(part) if len(_content_words(part)) <= MAX_SPLIT_WORDS else ())])
    # (BM25 reads examples told without their hedges: no paper writes "deepwalk-ish stuff")
    lexical = _unhedged(topic_and_examples) if told and _hedged(topic_and_examples) \
        else topic_and_examples
    return Understood(question, topic, tuple(subqueries[:MAX_SUBQUERIES]), lexical,
                      tuple(excluded_parts))


# ---------------------------------------------------------------- the kind of question

_QUESTION_FRAME = re.compile(
    r"^\s*(?:(?:which|what|list|find|show(?: me)?|are there|is there|give me)\s+)?"
    r"(?:(?:all|any|the)\s+)?(?:papers?|works?|studies|articles|abstracts|research)\s+"
    r"(?:(?:do|does|are|is|that|which)\s+)?"
    r"(?:(?:deal|deals|dealing|work|works|working)\s+(?:with|on)|about|on|in|for|of|study|"
    r"studies|address|addresses|tackle|tackles|focus(?:es)? on|propose|proposes|use|uses|"
    r"involve|involves|cover|covers|concern|concerns|discuss|discusses|do|does|)\s*",
    re.IGNORECASE,
)
# "What does the DiffPool paper propose?", "How fast is the method of the paper on …": a question
# about one paper, not a request for a list.
_ONE_PAPER = re.compile(
    r"^\s*(?:what|how|which|who|when|where|why)\s+(?:\w+\s+){0,3}?(?:does|do|did|is|was|are)\s+"
    r"(?:the|this|that|its)\s+(?:[^?]{0,60}?\s)?(?:paper|work|study|article|method|approach|"
    r"model|system)\b(?!s)", re.IGNORECASE)
# "What does the paper on X introduce?" -> X: the description of the one paper asked about.
_ONE_PAPER_FRAME = re.compile(
    r"^\s*what\s+(?:does|did|do|is)\s+the\s+(?:paper|work|study|article)\s+"
    r"(?:on|about|that studies|which studies|studying|for|of)\s+(.+?)\s+"
    r"(?:propose|proposes|introduce|introduces|present|presents|contribute|contributes|show|"
    r"shows|find|finds|achieve|achieves)\b\W*$", re.IGNORECASE)


def topic_of(question: str) -> str:
    """'Which papers do full-duplex speech?' -> 'full-duplex speech': the frame of a "which
    papers" question says nothing about the topic and dilutes its embedding. A list question is
    taken apart by `understand` (its topic, without the examples); a claim keeps its words."""
    if is_list_question(question):
        return understand(question).topic
    described = described_paper(question)
    if described:
        return described
    topic = _QUESTION_FRAME.sub("", question, count=1).strip().rstrip("?.! ")
    return topic if len(topic) >= 3 else question.strip()


def described_paper(question: str) -> str | None:
    """"What does the paper on the training dynamics of wide networks introduce?" -> what
    describes the one paper asked about, which is what to search for it by (None if the
    question is not put so)."""
    described = _ONE_PAPER_FRAME.match(question)
    return described.group(1) if described and len(described.group(1).split()) >= 2 else None


# "…, what do you have?", "… — any papers?", "X? which papers study that": a topic followed
# by the request.
_TRAILING_REQUEST = re.compile(
    r"(?:(?:[,;:—–?.!-]|\s--)\s*(?:so\s+|and\s+)?(?:what do you have|what have you got|anything|"
    r"any papers|papers|what's there|(?:which|what|any) (?:papers|work|research|studies)"
    r"(?: (?:look at|looks at|study|studies|explore|explores|address|addresses|cover|covers|"
    r"examine|examines|on|about|tackle|tackles|do|does|try|tries|trying)(?: to explain)?"
    r"(?: (?:that|this|it|them|those))?| (?:do|have) you (?:have|got)| are there)?"
    r"|anything (?:on|about) (?:that|this|it|these|those|them))"
    # "DST papers pls", "crowd counting papers": the papers asked for, after their topic
    r"|(?<=\w)\s+(?:papers?(?:\s+(?:pls|plz|please))?|pls|plz|please))\s*[?.!]?\s*$"
    # "… here?", "… in this collection": where, not what
    r"|\s+(?:in\s+)?(?:here|in this (?:collection|conference|list|set)|at this conference)"
    r"\s*[?.!]*\s*$",
    re.IGNORECASE)
ANNOUNCES = re.compile(r"\b" + ANNOUNCEMENT + r"\b|\bother\s+(?:topic|subject)s?\b",
                       re.IGNORECASE)
# The words for a place in a list ("the second one", "the latter"): one vocabulary for every
# pattern that reads a place (here and answering/followups.py, answering/chat.py).
ORDINAL_WORDS = "first|second|third|fourth|fifth|sixth|last|latter|former|1st|2nd|3rd|4th|5th|6th"

# Words that point back at the last answer's papers: pronouns, "this paper", a definite noun
# for what a paper has ("what's the task exactly", "how many models had the problem"), and a
# fragment that continues the last question ("on what kind of graphs?"). One detector: its
# `plural` words ("them", "they", "these", "those") point at all the papers the last answer
# cited, its `singular` ones ("it", "its", "this paper") at one (`points_at_several`,
# `replace_pointer`).
REFERS = re.compile(
    r"\b(?:(?P<plural>them|they|these|those|their|of the above|the above)|"
    r"(?P<singular>it|its|(?:this|that) (?:paper|work|one|method|model)|the paper)|"
    r"theirs|either|neither|both|the latter|the former|(?:this|that) (?:approach|study|system)|"
    r"the (?:work|one|method|model|approach|study|system)|"
    r"the (?:problem|task|fix|trick|idea|setup|setting|dataset|data set|"
    r"benchmark|results?|experiments?|authors?|findings?|architecture|algorithm|framework|"
    r"objective|loss|evaluation|baselines?|(?:main |key |big )?(?:takeaway|point|upshot|"
    r"bottom line|gist))(?! of\b))\b"
    r"|\b(?:about|behind|of|on|for|with|in|from)\s+(?:that|this)\s*[?.!]*\s*$"
    r"|^\s*(?:and\s+)?(?:on|in|for|with|from|against|by|over|at)\s+(?:what|which|how)\b",
    re.IGNORECASE)


def points_at_several(text: str) -> bool:
    """Whether the text points back with a plural word ("them", "those", "the above")."""
    return any(match.group("plural") for match in REFERS.finditer(text))


def replace_pointer(text: str, replacement: Callable[[re.Match], str], plural: bool) -> str:
    """The text with its first plural (or singular) pointing word replaced by what
    `replacement` makes of its match; the text itself when it has none."""
    group = "plural" if plural else "singular"
    match = next((m for m in REFERS.finditer(text) if m.group(group)), None)
    return text[:match.start()] + replacement(match) + text[match.end():] if match else text


# "the second one", "the last paper", "the latter", "the 2nd do", "#2", "[3]", "number two":
# a place in the last answer's list (its citation numbers). Not "first-order" or "the second
# moment": an ordinal word is followed by a word for a paper, a verb or the sentence's end.
# "#2", "[3]", "number two", "paper 2": a place by its number (the one group: the number).
PLACE_BY_NUMBER = r"(?:\[|#|\bno\.\s?|\bnumber\s+|\bpaper\s+|\bitem\s+)(\d|one|two|three|" \
    r"four|five|six)\b\]?"
ORDINAL = re.compile(
    r"\b(" + ORDINAL_WORDS + r")\b"
    r"(?=\s+(?:one|paper|work|of|study|article|entry|result)\b|\s*[?.!,;:]|\s+[—–-]\s|$"
    r"|\s+(?:do|does|did|is|was|say|says|propose|proposes|use|uses|about|show|shows|find|finds|"
    r"achieve|achieves|report|reports|introduce|introduces|present|presents|have|has|cover|"
    r"covers|evaluate|evaluates|handle|handles|mean|means|focus|focuses)\b)"
    r"|" + PLACE_BY_NUMBER,
    re.IGNORECASE)
ORDINALS = {"first": 0, "former": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4,
            "sixth": 5, "last": -1, "latter": -1, "1st": 0, "2nd": 1, "3rd": 2, "4th": 3,
            "5th": 4, "6th": 5, "one": 0, "two": 1, "three": 2, "four": 3, "five": 4, "six": 5}
# A chat's lead-in to a new topic, before the question proper: "OK, separate question: …",
# "Now, which papers …", "And X?", "cool. different q - X?" (an acknowledgement, "next",
# "then" or any announcement only before a mark: "great apes", "next token prediction",
# "Next-generation sequencing" and "new direction in X" are topics).
# Interjections in lower case ("hmm ok, …") lead in before a space too; acknowledgements,
# "right", "well", "totally different" only before a mark, alone or in a row ("cool thanks.
# …"; since session 34, round 16's calibrate half).
_ACKNOWLEDGED = (r"(?:then|next|cool|great|thanks|thank you|thx|nice|got it|perfect|"
                 r"interesting|right|well|yes|yeah|sure|(?:totally|completely|entirely) "
                 r"different)")
_CHAT_LEAD = re.compile(
    r"^\W*(?:(?:and|ok|okay|now|so|also|alright|separately|btw|but|by the way|"
    r"(?-i:hmm+|hm|um+|uh|oh|ah)|"  # in lower case: "HMM for speech", "Oh et al." are names
    r"something (?:else|different|new)|(?:on )?a different note|(?:a |one )?(?:separate|"
    r"another|new|different|other|unrelated) (?:question|topic|thing)|switching (?:topics?|"
    r"gears)|changing (?:the )?(?:topic|subject))(?:\s-\s|[\s,:;.!—–])+"
    r"|(?:" + _ACKNOWLEDGED + r"\s+)*(?:" + _ACKNOWLEDGED + "|" + ANNOUNCEMENT
    + r")(?:\s*[,:;.!—–]+|\s+-+)\s*)+", re.IGNORECASE)
# "What about X?" asks for X what the chat asked before; offline, that is papers on X.
_WHAT_ABOUT = re.compile(r"^\W*(?:what|how) about\b\s*", re.IGNORECASE)
# …unless X points back at papers already shown ("what about its mAP?", "how about the first",
# "what about #2"): REFERS or ORDINAL below.


def without_chat_lead(question: str) -> tuple[str, bool]:
    """The question without a chat's lead-in ("OK, different question: X?" -> "X?"), and
    whether it was put as "what about X?"."""
    text = _CHAT_LEAD.sub("", question, count=1)
    bare = _WHAT_ABOUT.sub("", text, count=1)
    return bare, bare != text


def is_list_question(question: str) -> bool:
    """Does the question ask for the papers on a topic ("Which papers …", "I need methods
    that …", "Has anyone tried …", a bare topic)? A claim, a fact question or a follow-up
    about papers already shown does not. The fitted wording model decides
    (retrieval/kinds.py: bench/understanding/fit_list_question.py); a question about one paper
    ("What does the DiffPool paper propose?") is a fact question before it."""
    if _ONE_PAPER.search(question):
        return False
    bare, what_about = without_chat_lead(question)
    if what_about and (REFERS.search(bare) or ORDINAL.search(bare)):  # "how about those?"
        return False
    return list_question_model().decides(question)


# ---------------------------------------------------------------- questions in other languages

# Words of a question in another language that BM25 can use: Latin-script words, acronyms and
# names ("哪些论文研究 full-duplex speech?" -> "full-duplex speech").
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'+.][A-Za-z0-9]+)*")
# "Which papers" in the languages the translated dev questions are in (Chinese, Japanese,
# German) and a few more: a list question (the English _LIST_QUESTION cannot read them).
_FOREIGN_LIST_QUESTION = re.compile(
    r"哪些|哪几|有什么论文|有什么研究|什么论文|列出|列举|找出|找一下|相关的?论文|的论文|的研究"
    r"|どの論文|どんな論文|論文を|論文は|論文が|研究は|一覧"
    r"|어떤 논문|논문"
    r"|\b(?:welche|gibt es|liste|finde|quels|quelles|cuáles|qué artículos|quais)\b",
    re.IGNORECASE)
# The frame of a "which papers" question in those languages, taken off for a second query
# vector of the topic alone ("哪些论文研究脉冲神经网络？" -> "脉冲神经网络"), as topic_of does in
# English.
_FOREIGN_FRAME = re.compile(
    r"^(?:我在找|我想找|请|帮我)?(?:列出|列举|找一下|找出|找)?(?:有没有|有哪些|哪些|是否有)?"
    r"(?:论文|研究|工作)?(?:在|是|是关于|关于|研究|涉及|提出了?|做|用|处理)?"
    r"|(?:的|相关的)?(?:论文|研究|工作)(?:有哪些|是哪些)?[？?。.！!]*$"
    r"|[？?。.！!]+$"
    r"|(?:を|に)?(?:研究している|扱っている|関する|提案している)?(?:論文|研究)(?:はどれですか|を挙げてください"
    r"|を探しています)?[？?。.]*$"
    r"|^(?:welche|nenne|finde)\s+(?:die\s+)?(?:arbeiten|papers?|studien)\s+"
    r"(?:befassen sich mit|beschäftigen sich mit|untersuchen|handeln von|nutzen|erzeugen|"
    r"erkennen|schlagen)?\s*", re.IGNORECASE)


def foreign_topic(question: str) -> str:
    """A question in another language without its "which papers" frame (the question itself
    when nothing is left)."""
    topic = question.strip()
    for _ in range(3):
        stripped = _FOREIGN_FRAME.sub("", topic).strip()
        if stripped == topic:
            break
        topic = stripped
    return topic if len(topic) >= 2 else question.strip()


def latin_words(question: str) -> str:
    """The Latin-script words of a question written in another script, for BM25."""
    return " ".join(_LATIN_WORD.findall(question))


def is_foreign_list_question(question: str) -> bool:
    """A list request in another language: its own "which papers" words, or what the fitted
    model reads as one and is not put as a question. The model learnt English questions only:
    "Wie viel schneller als PyTorch ist EGG …?" reads to it as a request, while a topic typed
    as search terms ("脉冲神经网络") carries no question mark."""
    if _FOREIGN_LIST_QUESTION.search(question):
        return True
    return not question.rstrip().endswith(("?", "？")) and is_list_question(question)
