"""Decisions: which candidates answer the question.

A claim or a fact question keeps the papers that clear a CutRule (`decide_claim`), and the
papers that hold a rare name it uses. A "which papers" question gets the calibrated
RelevanceModel's list (`decide_list`), less a near miss (a subject no paper names: a word, a
name, or an ML term of several words that no paper writes), plus the papers that state a short
topic word for word when the model's gate finds the topic absent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import replace

from ragqa.index import lexical
from ragqa.index.lexical import LexicalIndex
from ragqa.retrieval.fitted import CoreModel, CutRule, RelevanceModel
from ragqa.retrieval.question import understand, without_chat_lead, without_excluded
from ragqa.retrieval.signals import mark_named
from ragqa.retrieval.types import Hit

# A paper "states" a short topic when it holds every word of one of at most this many words
# (_states_short_topic: "greenhouse tomato irrigation").
KEY_TERM_TOPIC_WORDS = 3
# A list topic of at most this many content words lists nothing when one of its words is used by
# no paper (names_unknown_subject: "protein structure design" over molecule papers, "predicting
# the outcomes of soccer matches" over sports-free game papers). Chosen on the blind near-miss
# rounds 1-2 (80 misses, 80 controls) and bench/lists' 64 real list questions
# (bench/reading/near_miss_words.py): with the name rule, misses caught at 3 / 4 / 5 /
# 6 / 7 / 8 words: 62 / 70 / 76 / 78 / 79 / 79 of 80, controls lost 1 (a "cooking recipes" the
# collection words otherwise) at every size, real list questions silenced 0 up to 7 words and 1
# at 8: 6 keeps a word of margin.
NEAR_MISS_TOPIC_WORDS = 6
_LATIN = re.compile(r"[a-z]")


# ---------------------------------------------------------------- claims: the relevance cut

def decide_claim(index: LexicalIndex, hits: list[Hit], rule: CutRule, names_in: str,
                 cut: bool, follow_up: bool = False) -> list[Hit]:
    """A claim's papers, best first: the candidates by score, those holding a rare name that
    `names_in` uses marked, and (`cut`) those that pass `rule`. A `follow_up` searches among
    papers already found ("which of them ..."): each one that clears the rule on its own
    answers it, however far the best leads."""
    hits.sort(key=lambda h: -h.score)
    mark_named(index, hits, names_in)
    if not cut:
        return hits
    return relevance_cut(hits, replace(rule, max_gap=math.inf) if follow_up else rule)


def keep_decisions(z: Sequence[float], coverage: Sequence[float], rule: CutRule,
                   named: Sequence[bool] | None = None) -> list[bool]:
    """The cut's rule on its two signals (bench/calibrate_cut.py searches its parameters); a
    paper holding a rare name the question uses (`named`) is kept whatever its signals, and
    the others are measured against the best of the rest."""
    named = list(named) if named is not None else [False] * len(z)
    if rule.gate is not None and not any(keep_decisions(z, coverage, rule.gate)) \
            and not any(named):
        return [False] * len(z)
    best = max((zi for zi, ni in zip(z, named, strict=True) if not ni), default=0.0)
    strong = best >= rule.z_strong
    return [ni or ((zi >= rule.z_strong or (zi >= rule.z_weak and ci >= rule.coverage)
                    or (strong and rule.near_best > 0
                        and zi >= max(rule.z_weak, best - rule.near_best)))
                   and zi >= best - rule.max_gap)
            for zi, ci, ni in zip(z, coverage, named, strict=True)]


def relevance_cut(hits: list[Hit], rule: CutRule) -> list[Hit]:
    """Keep the papers that are about the question: none when nothing stands out. The papers
    that hold a name the question uses come first."""
    keep = keep_decisions([h.z for h in hits], [h.coverage for h in hits], rule,
                          [h.named for h in hits])
    kept = [h for h, k in zip(hits, keep, strict=True) if k]
    return sorted(kept, key=lambda h: not h.named)


# ---------------------------------------------------------------- lists

def decide_list(index: LexicalIndex, query: str, hits: list[Hit], model: RelevanceModel,
                word_rules: bool = True) -> list[Hit]:
    """The list for a "which papers" question from its candidates: the calibrated model's,
    less a near miss (names_unknown_subject), plus the papers that state a short topic
    word for word when the model's gate finds the topic absent. The gate judges a topic by
    its best three papers (absent topics still have near papers); a topic one paper of the
    collection holds ("greenhouse tomato irrigation") has no three. `word_rules=False`
    (a machine translation, or a question in another language: its words are not the user's
    English) leaves the model alone."""
    if word_rules and names_absent_subject(index, query):
        return []
    kept = model.keep(hits)
    if not word_rules or any(h.tier == "core" for h in kept):
        return kept
    # The gate doubts the topic: its papers are all tail, but one that states a short topic
    # word for word is core when the model is sure of it.
    # (`hits`: a model of one tier keeps nothing of a doubted topic, so its stated papers are
    # read from the candidates)
    stated = [h for h in (kept or hits) if h.probability >= model.core_floor
              and _states_short_topic(index, query, h.index)]
    for hit in stated:
        hit.tier, hit.doubted = "core", False
    return [*stated, *(h for h in kept if h.tier != "core")]


def recut_core(hits: list[Hit], model: CoreModel) -> list[Hit]:
    """A list whose core papers after the first that `model` doubts are folded into the tail,
    at its top (they stay in the one-tier list: fitted.whole_list reads their probability).
    The first paper stays: a topic the gate passed has its best paper in the answer."""
    core = [h for h in hits if h.tier == "core"]
    if len(core) < 2:
        return hits
    for place, (hit, p) in enumerate(zip(core, model.probabilities(core), strict=True)):
        if place and p < model.threshold:
            hit.tier = "tail"
    return [*(h for h in hits if h.tier == "core"), *(h for h in hits if h.tier != "core")]


def fold_excluded(hits: list[Hit], excluded: Sequence[bool], core_floor: float | None
                  ) -> list[Hit]:
    """A list less what its question says it does not want (question.without_excluded): each
    core paper nearer an excluded part than the asked topic (`excluded`, read by the
    retriever) goes to the folded tail, marked `excluded` (so in no one-tier list: summaries,
    trends, a map's highlight), or out of a list of one tier (`core_floor` None). When every
    core paper went, the best paper left is core only from the core's floor (the gate passed on
    the folded papers' strength); else the list is a doubted one.

    Nothing is fitted: "nearer" is the plain comparison of two cosines. With the exclusions
    already out of the query, on the judged list sets' 11 questions with one (bench/lists:
    acl2022, iclr2018, www2025) it folds 3 more core papers, and 3 on the third blind set's 9:
    all 6 judged not relevant (docs/benchmarks.md, "What a question excludes")."""
    if core_floor is None:
        return [h for h, out in zip(hits, excluded, strict=True) if not out]
    folded = False
    for hit, out in zip(hits, excluded, strict=True):
        if out and hit.tier == "core":
            hit.tier, hit.excluded, folded = "tail", True, True
    if folded and not any(h.tier == "core" for h in hits):
        kept = [h for h in hits if not h.excluded and not h.doubted]
        if kept and kept[0].probability >= core_floor:
            kept[0].tier = "core"
        else:
            for hit in hits:
                hit.doubted = True
    return [*(h for h in hits if h.tier == "core"), *(h for h in hits if h.tier != "core")]


def names_absent_subject(index: LexicalIndex, query: str) -> bool:
    """Whether a "which papers" question is a near miss: its subject is a word
    (names_unknown_subject), a name (names_absent_name) or an ML term of several words
    (names_absent_term) that no paper of the collection writes."""
    return (names_unknown_subject(index, query) or names_absent_name(index, query)
            or names_absent_term(index, query))


def names_unknown_subject(index: LexicalIndex, query: str,
                          words: int = NEAR_MISS_TOPIC_WORDS) -> bool:
    """Whether a "which papers" question names a subject that no paper of the collection
    mentions: a near miss, however close the papers it finds.

    "Protein structure design" finds the molecule papers, close in the embedding space and
    sharing "structure" and "design"; but no paper says "protein". In a part of the question
    of at most NEAR_MISS_TOPIC_WORDS words (the topic, an "or" alternative, an example) every
    word counts, so a word that no paper uses (nor a word that extends it: "molecules" ->
    "molecular") means that part is not there. A near miss is a question whose every short
    part names such a word (and whose topic does, when it is described at length). A topic
    described in more words alone ("training spread over many machines") is the user's own
    wording, which papers rarely share: the calibrated decision alone decides. On the judged
    dev sets this flags four of the twenty absent topics and none of the 64 real ones
    (NEAR_MISS_TOPIC_WORDS)."""
    # Words in another script ("总结关于 full-duplex speech 的论文", a summary's topic) are not
    # the collection's to judge: only the English words count.
    parts = [[g for g in _term_groups(index, sub) if _LATIN.search(g[0])]
             for sub in understand(query).subqueries]
    short = [groups for groups in parts if 0 < len(groups) <= words]
    if not short or not _names_unknown_word(index, parts[0]):
        return False
    return all(_names_unknown_word(index, groups) for groups in short)


def names_absent_term(index: LexicalIndex, query: str,
                      words: int = NEAR_MISS_TOPIC_WORDS) -> bool:
    """Whether a "which papers" question names its subject by an ML term of several words that
    no paper of the collection writes, though papers use each of its words: "batch
    normalization" over papers that normalise and use mini-batches, "graph attention
    networks" over papers on graphs and on attention. A term is known as one from paper titles
    and the abbreviations' long forms (lexical.known_phrases); it is absent when no paper writes
    its words in a row, nor its abbreviation, nor a shorter known term inside it ("social choice
    theory" asks about the social choice the papers write). As with names_unknown_subject, the
    topic and every short part of the question (an alternative, an example) must name
    something absent: start with such a term, or hold a word no paper uses."""
    parts = [(sub, [g for g in _term_groups(index, sub) if _LATIN.search(g[0])])
             for sub in understand(query).subqueries]
    short = [(sub, groups) for sub, groups in parts if 0 < len(groups) <= words]
    if not short or not _names_absent_term(index, parts[0][0]):
        return False
    return all(_names_absent_term(index, sub) or _names_unknown_word(index, groups)
               for sub, groups in short)


def _names_absent_term(index: LexicalIndex, text: str) -> bool:
    """Whether `text` starts with a known term that is absent: a part's first words are its
    subject ("batch normalization in deep networks"); a term later in it most often says
    more of it ("causal discovery with hidden confounders" over papers on latent ones;
    "hashing for fast similarity search" over hashing papers that never write "similarity
    search"). Only a term at the start, on the near-miss rounds' dev halves, silences fewer
    real list topics than any term of the part (bench/reading/term_absence.py, session 38)."""
    known = lexical.known_phrases()
    runs = [[stem for _, stem in run] for run in lexical.compound_runs(text, TERM_BREAKS)]
    # the longest known term the first run of words side by side starts with
    first = next((" ".join(runs[0][:end]) for end in range(len(runs[0]) if runs else 0, 1, -1)
                  if " ".join(runs[0][:end]) in known), None)
    return first is not None and _term_absent(index, first, known)


def _term_absent(index: LexicalIndex, phrase: str, known: frozenset[str]) -> bool:
    """Whether no paper writes the known term `phrase` (stems) though papers use its words. A
    term is written as its abbreviation too, and a term whose words but its last ("Bradley-Terry
    models") or a shorter known term inside it ("social choice theory") a paper writes asks
    about what the paper writes."""
    words = phrase.split(" ")
    if not all(index.document_frequency(w) for w in words) \
            or index.writes_phrase(phrase, loosely=True):
        return False
    if any(index.document_frequency(short)
           for short in lexical.abbreviations_of_phrases().get(phrase, ())):
        return False
    if len(words) > 2 and index.writes_phrase(" ".join(words[:-1]), loosely=True):
        return False
    inside = (" ".join(words[i:i + n]) for n in range(2, len(words))
              for i in range(len(words) - n + 1))
    return not any(term in known and index.writes_phrase(term, loosely=True) for term in inside)


# A name as a user writes it: two capitals (AlphaFold, RLHF), a capital inside a word (spaCy),
# letters with digits (CORD-19, GPT-3), or a capital after the question's first word
# (Minecraft, Kaldi, Vietnamese); names side by side are one name ("Mask R-CNN").
_NAME_TOKEN = re.compile(r"[A-Za-z][\w'’.-]*[\w]")
# Capitalised words that are not names where users write them.
_NOT_NAMES = frozenset({"i", "papers", "paper", "any", "is", "are", "which", "what", "find",
                        "show", "list", "work", "research", "ok"})
# The papers a many-word name is looked for in (by BM25), its words next to one another.
NAME_CANDIDATES = 20


def _is_name(word: str, first: bool) -> bool:
    capitals = sum(c.isupper() for c in word)
    return word.lower() not in _NOT_NAMES and (
        capitals >= 2 or any(c.isupper() for c in word[1:])
        or (capitals and any(c.isdigit() for c in word)) or (not first and word[0].isupper()))


def name_tokens(question: str) -> list[list[str]]:
    """The names a question writes, names side by side joined ("Mask R-CNN"), in groups of
    alternatives ("BERT, RoBERTa or XLNet" is one group of three)."""
    groups: list[list[str]] = []
    end = -1
    for i, match in enumerate(_NAME_TOKEN.finditer(question)):
        word = _KIND_SUFFIX.sub("", match.group(0).rstrip("'’.-"))
        if not _is_name(word, first=i == 0):
            continue
        between = question[end:match.start()] if groups else None
        if between is not None and between.strip() == "":
            groups[-1][-1] += " " + word
        elif between is not None and _ALTERNATIVE.fullmatch(between):
            groups[-1].append(word)
        else:
            groups.append([word])
        end = match.start() + len(word)  # a suffix cut off parts it from the next name
    return groups


_ALTERNATIVE = re.compile(r"\s*(?:,|or|and/or|/)\s*(?:or\s+)?", re.IGNORECASE)
# "BERT-style transformers", "GAN-based": the name is BERT, GAN. (Every lower-case word after a
# hyphen taken as such a suffix, "AI-generated content" asked about AI: it listed Moshi-RAG,
# on "conversational AI", for "Which papers detect AI-generated speech?" over the seeds, and
# five papers for an absent topic of the second blind list set; not kept.)
_KIND_SUFFIX = re.compile(r"-(?:style|like|based|type|inspired|specific|level|free|aware|driven|"
                          r"guided|enhanced|augmented|scale|sized|size|only|related)$",
                          re.IGNORECASE)


def names_absent_name(index: LexicalIndex, question: str) -> bool:
    """Whether a question names something (a method, model, dataset, tool, language: a word
    written as a name) that no paper of the collection mentions: "Which papers use AlphaFold to
    predict protein structures?" over papers on protein structure. The name is what the user
    asks about, however common the rest of the question's words are; of alternatives ("BERT
    or XLNet") every one must be absent. When only the topic's examples name things ("e.g.
    DeFi ... on Ethereum"), every one of those must be absent (docs/benchmarks.md, the second
    blind list set). A name of several words ("Mask R-CNN") must stand in a paper as written,
    its words next to one another."""
    # A chat's lead-in is no name ("OK, separate question: …", "And LSTMs?" names LSTMs).
    bare = without_chat_lead(question)[0]
    groups = name_tokens(bare)
    topic = understand(bare).topic
    in_topic = [g for g in groups if all(_written_in(name, topic) for name in g)]
    if in_topic:
        return any(all(_absent(index, name) for name in group) for group in in_topic)
    # A topic that names nothing, illustrated by named examples: one example the collection
    # lacks ("exploits against DeFi" beside "scammers on Ethereum") is no near miss, all are
    # ("proof assistants such as Coq").
    return bool(groups) and all(all(_absent(index, name) for name in group) for group in groups)


def _written_in(name: str, text: str) -> bool:
    """Whether `name` stands in `text` as a word of its own ("T5", not inside "T5X")."""
    return name_at(name, text) >= 0


def name_at(name: str, text: str) -> int:
    """Where `name` first stands in `text` as a word of its own ("BERT", not inside
    "RoBERTa"), or -1."""
    match = re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)
    return match.start() if match else -1


def _absent(index: LexicalIndex, name: str) -> bool:
    terms = lexical.terms(name)
    if not terms:
        return False
    if len(terms) == 1:  # (a name is no typo: Written keeps only its abbreviation)
        written = lexical.Written(abbreviations=lexical.Written.of(name).abbreviations)
        if all(index.document_frequency(t) == 0
               for t in index.forms(terms[0], written)):
            return True
        return _stems_to_another_word(index, name, terms[0])
    rows = [row for row, _ in index.search(" ".join(terms), NAME_CANDIDATES)] \
        if all(index.document_frequency(t) for t in terms) else []
    return not any(_holds_in_a_row(index, row, terms) for row in rows)


# How many papers holding a name's stem are read for the name as written.
NAME_SURFACE_PAPERS = 200


def _stems_to_another_word(index: LexicalIndex, name: str, stem: str) -> bool:
    """Whether a one-word name only shares its stem with the collection's words: "Grammarly"
    stems to "grammar", which grammar papers hold, but none writes "Grammarly". A name the
    stemmer leaves whole, or only loses a plural of ("GANs"), is what the papers hold."""
    written = name.lower().rstrip("'’s")
    if written == stem or len(written) <= len(stem) or not written.startswith(stem):
        return False
    pattern = re.compile(r"\b" + re.escape(written), re.IGNORECASE)
    rows = [row for row, _ in index.search(name, NAME_SURFACE_PAPERS)]
    return not any(pattern.search(lexical.paper_document(paper))
                   for paper in index.papers_by_index(rows))


def _holds_in_a_row(index: LexicalIndex, row: int, terms: list[str]) -> bool:
    words = lexical.terms(lexical.paper_document(index.papers_by_index([row])[0]))
    n = len(terms)
    return any(words[i:i + n] == terms for i in range(len(words) - n + 1))


def _names_unknown_word(index: LexicalIndex, groups: list[list[str]]) -> bool:
    return any(all(index.document_frequency(t) == 0 for t in group) for group in groups)


def _states_short_topic(index: LexicalIndex, query: str, row: int) -> bool:
    """Whether the paper states a short part of the question (at most KEY_TERM_TOPIC_WORDS
    words: the topic, an alternative, an example): every word of it within a few words of
    one another ("irrigation scheduling for greenhouse tomato crops"); a part of one word,
    twice (a paper about tomatoes says so more than in passing, "like in a sports
    tournament"), or once when the question writes it as a name (a paper that names
    ConceptNet or Gigaword uses it)."""
    paper = index.papers_by_index([row])[0]
    positions: dict[str, list[int]] = {}
    for i, term in enumerate(lexical.terms(lexical.paper_document(paper))):
        positions.setdefault(term, []).append(i)
    named = {t for group in name_tokens(without_excluded(without_chat_lead(query)[0])[0])
             for name in group
             for t in lexical.terms(name)}
    for sub in understand(query).subqueries:
        groups = _term_groups(index, sub)
        found = [sorted(i for t in g for i in positions.get(t, [])) for g in groups]
        if len(groups) == 1 and len(found[0]) >= (1 if named & set(groups[0]) else 2):
            return True
        if 1 < len(groups) <= KEY_TERM_TOPIC_WORDS and _within(found, len(groups) + 2):
            return True
    return False


# Words BM25's short stop list keeps that name no subject: they do not count among a topic's
# words ("estimating blood pressure from sensor time series" is a topic of six words; "model",
# "based" and "help" say how, not what). On the blind near-miss rounds 1-4, 7 and 8
# (bench/reading/near_miss_words.py) the unknown-word rule catches 228 of 272 misses with
# them left out, 211 counting them; controls caught 4 of 272 either way, real list questions
# (64) and chat topics (442) 0 and 2 either way.
NOT_TOPIC_WORDS = frozenset(lexical.terms(
    "from against between through via within without across toward towards onto upon among "
    "amongst under over after before during versus vs than can could would should may might "
    "we our us you your i my its has have had been being were do does did so very also just "
    "all some each both other others more most many much help helps helping based model models "
    # a chat's filler ("song lyrics stuff", "… papers pls"): since session 20, blind round 10
    "stuff things pls plz please thanks thx etc"))


# What ends a run of words that may be an ML term (names_absent_term): the words that name no
# subject, those that only say "find papers", and the question words ("Why Does …", "Do We
# Need …", "Using Kernel …" are no terms, though titles write them); not the nouns that end
# terms ("language model", "kernel methods").
TERM_BREAKS = (NOT_TOPIC_WORDS | lexical.query_stopwords()
               | frozenset(lexical.terms("why when where whether"))) \
    - frozenset(lexical.terms("model method approach"))


def _term_groups(index: LexicalIndex, text: str) -> list[list[str]]:
    """The distinct content words of `text`, each as the collection's words for it
    (`LexicalIndex.forms`: itself, the words that extend a stem no paper uses, an
    abbreviation's long forms, the word a typo stands for) and its American spelling
    ("recognise" is "recognize", stemmed apart). Stems are not stemmed again ("noise" ->
    "nois" -> "noi" made the noise papers' word absent)."""
    groups: dict[str, list[str]] = {}
    written = lexical.Written.of(text)
    for term in lexical.terms(text, query=True):
        if term in groups or term in NOT_TOPIC_WORDS:
            continue
        forms = index.forms(term, written)
        if all(index.document_frequency(t) == 0 for t in forms):
            forms = forms + [t for variant in _american(term)
                             for t in index.forms(variant)]
        groups[term] = forms
    return list(groups.values())


# British endings of stems and their American ones, tried only for a word no paper uses.
_BRITISH = ((re.compile(r"(?<=\w{4})is$"), ""), (re.compile(r"(?<=\w{3})ys$"), "yz"),
            (re.compile(r"(?<=\w{3})our$"), "or"))


def _american(stem: str) -> list[str]:
    """Stems an American spelling of the word would have: "recognis" (recognise) ->
    "recogn" (recognize), "analys" -> "analyz", "behaviour" -> "behavior"."""
    return [pattern.sub(replacement, stem) for pattern, replacement in _BRITISH
            if pattern.search(stem)]


def _within(positions: list[list[int]], window: int) -> bool:
    """Whether one position from each list lies within `window` of the first list's."""
    if not positions or any(not p for p in positions):
        return False
    return any(all(any(abs(j - i) <= window for j in p) for p in positions[1:])
               for i in positions[0])
