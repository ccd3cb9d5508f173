"""The artifacts a paper releases besides its method (its code, a new dataset; not its
"contribution", the proposal answer.py quotes) and how many of a thing it covers ("lots of
languages", "several cores"): selections the words cannot make. A chat's "which ones
have code available?", "does either release annotated data?", "which ones put out new
datasets?" ask for it, and the words alone cannot answer: nearly every abstract of a list writes
"dataset" (the benchmarks it evaluates on) or "code" (code generation, codes), while the paper
that releases its code writes a URL or "our code is publicly available", and the one that makes
a dataset writes "we construct two large-scale conversation datasets" or "a new corpus".

On the select turns of blind chat rounds 1-11 that ask for either (28, on the writers' lists;
bench/reading/select_eval.py), these rules pick right for 26 against 25 for the words, and
for the two of round 11 that failed on the lists ragqa showed.
"""

from __future__ import annotations

import re

CODE = "code"
DATASET = "dataset"

# A turn asking for released code: "code", "implementation", a repository, "open source"; not
# code as a field's subject ("code-switching", "code search", "source code summarization",
# "generates code", "repair buggy code", "works on source code"), nor codes that are no
# software ("hash codes for", "binary codes").
_CODE_WORDS = r"code|codes|implementation"
_REPOSITORY = r"github|gitlab|repos?|repositor(?:y|ies)|open[- ]?source[sd]?"
_RELEASE_WORDS = (r"release[sd]?|releasing|available|public(?:ly)?|download\w*|shared?|"
                  r"accessible|online|publish\w*|provide[sd]?")
# A word for code, a repository or a release: one detector, each word of one kind (its group).
_ARTIFACT_WORD = re.compile(rf"\b(?:(?P<code>{_CODE_WORDS})|(?P<repository>{_REPOSITORY})|"
                            rf"(?P<release>{_RELEASE_WORDS}))\b", re.I)


def _names(question: str, *kinds: str) -> bool:
    """Whether the question writes a word of these kinds ("code", "repository", "release")."""
    return any(match.group(kind) for match in _ARTIFACT_WORD.finditer(question) for kind in kinds)


_CODE_TOPIC = re.compile(
    r"\bcode[- ](?:switch|mix|search|complet|generat|summar|clone|review|smell)|"
    r"\bsource code\s+(?:summar|generat)|\b(?:generat|writ|complet|synthes|summar|translat|"
    r"understand|repair|search|analy[sz])\w*\s+(?:\w+\s+){0,2}?code\b|"
    r"\b(?:works?|working|focus\w*)\s+(?:on|with)\s+(?:source\s+)?code\b", re.I)
_OTHER_CODES = re.compile(r"\b(?:hash|binary|error[- ]correcting)\s+codes?\b|"
                          r"\bcodes?\s+(?:for|of)\b", re.I)
# …or whether or where it is out, said with a word of release, even where "code of" would read
# as another code ("is the code of X released?", "where can I find their implementation?"); not
# "what does their implementation need access to?" (fact round 4).
_ASKS_RELEASED = re.compile(
    rf"\b(?:{_CODE_WORDS})s?\b[^.?!]{{0,80}}\b(?:{_RELEASE_WORDS})\b"
    rf"|\b(?:{_RELEASE_WORDS})\b[^.?!]{{0,80}}\b(?:{_CODE_WORDS})s?\b"
    rf"|\bwhere\b[^.?!]{{0,30}}\b(?:{_CODE_WORDS}|repo|repository)s?\b", re.I)
# A turn asking for a new dataset: a verb of making (or "new") a few words before a word for data
# ("put out new datasets", "release annotated data", "introduce their own dataset").
_ASKS_DATASET = re.compile(
    r"\b(?:new|novel|release[sd]?|releasing|introduc\w*|build\w*|buil[td]|creat\w*|collect\w*|"
    r"construct\w*|put(?:s|ting)? out|shar\w*|curat\w*|annotated|present\w*|propos\w*|"
    r"contribut\w*|mak\w*|made|publish\w*|gather\w*|compil\w*|provid\w*|comes? with|offer\w*)"
    r"\s+(?:[\w-]+\s+){0,3}?(?:data ?sets?|corpus|corpora|benchmarks?|treebanks?|data|"
    r"resources?)\b", re.I)

# A paper releasing its code: where to get it (a URL, a package, "upon request"), or "the code
# is (publicly) available", "we release our implementation", "open-sourced".
_WHERE_TO_GET = re.compile(r"https?://|\bgithub\b|\bgitlab\b|\bbitbucket\b|\bwww\.|"
                           r"\.(?:io|com|org|net)/|\bpypi\b|\bpip install\b|\bupon request\b",
                           re.I)
_CODE_AVAILABLE = re.compile(
    r"\b(?:code|codes|implementation|source|software|toolkit|library|package|models?|system|tool|"
    r"framework|resources?|scripts?)\b[^.;]{0,80}?\b(?:is|are|will be|has been|have been|be|"
    r"been)\s+(?:[\w-]+\s+){0,3}?(?:available|released|public|accessible|open[- ]sourced?)"
    r"|\b(?:we|our)\s+(?:\w+\s+){0,2}(?:release|open[- ]source|make (?:\w+ ){0,3}(?:publicly |"
    r"freely )?available)\w*[^.;]{0,60}?\b(?:code|implementation|source|software|toolkit|"
    r"library|package)|\bopen[- ]source[sd]?\b|\bpublicly available (?:code|implementation|"
    r"software|toolkit|library)", re.I)
_DATA_WORD = r"(?:data ?sets?|corpus|corpora|benchmarks?|treebanks?|test ?suites?|lexicons?)"
# A paper making a dataset: "we construct two large-scale conversation datasets", "a new corpus",
# "our dataset", "release them as a public benchmark"; not "on benchmark datasets" or
# "large-scale benchmark" (what it evaluates on).
_MAKES_DATA = re.compile(
    r"\b(?:we|our|this paper|this work|the authors)\b[^.;]{0,40}?\b(?:introduc|present|propos|"
    r"releas|construct|build|built|creat|collect|curat|develop|annotat|compil|contribut|publish|"
    r"gather|crowdsourc|assembl|design|provide|make|made)\w*\b[^.;]{0,50}?\b" + _DATA_WORD +
    r"\b|\b(?:new|novel|first|newly (?:\w+ed|built)|our|publicly available|freely available)\s+"
    r"(?:[\w-]+\s+){0,4}?" + _DATA_WORD + r"\b(?! (?:such as|like))"
    r"|\b(?:releas|publish|shar)\w*\s+(?:[\w-]+\s+){0,3}?as\s+(?:an?\s+)?(?:[\w-]+\s+){0,2}?"
    + _DATA_WORD + r"\b", re.I)
# …or a title naming one: "SCCD: A Session-based Dataset for …", "A Corpus of …".
_DATA_TITLE = re.compile(r"(?:^|:\s*)(?:an?|the)\s+(?:[\w-]+\s+){0,5}?(?:data ?set|corpus|"
                         r"treebank|test ?suite)\b|\b(?:data ?set|corpus|treebank)\s+(?:for|of)\b",
                         re.I)


def asked_artifact(question: str) -> str | None:
    """CODE or DATASET when a selecting turn asks which papers release code or make a dataset,
    else None."""
    if _CODE_TOPIC.search(question):
        return DATASET if _ASKS_DATASET.search(question) else None
    if _names(question, "code", "repository") and not _OTHER_CODES.search(question) \
            or _ASKS_RELEASED.search(question) and not _ASKS_DATASET.search(question):
        return CODE
    if _ASKS_DATASET.search(question):
        return DATASET
    return None


# Of a question about one paper, one that asks whether or where its code is out: a word of
# release ("is the code of X released?"), a repository ("is it open source?"), a model said to
# be released ("Is the DATE model released?"), or code as the last word of a short question
# ("is there code?"); never code as its subject ("How does CodeT5 do on summarizing source
# code?", "… code model outputs …").
_CODE_LAST = re.compile(r"\b(?:code|codes|implementations?)\W*$", re.I)
_MODEL_RELEASED = re.compile(r"\b(?:models?|tools?|weights)\b[^.?!]{0,80}\b(?:released?|"
                             r"public(?:ly)? available|downloadable|open[- ]?sourced?)\b", re.I)
# A question of this many words at most that ends in "code" asks for nothing else.
SHORT_QUESTION_WORDS = 6


def asks_whether_released(question: str) -> bool:
    """Whether a question about a paper asks whether or where its code is out."""
    if _CODE_TOPIC.search(question):
        return False
    short = len(question.split()) <= SHORT_QUESTION_WORDS and _CODE_LAST.search(question)
    return bool(_ASKS_RELEASED.search(question) or _names(question, "repository")
                or _MODEL_RELEASED.search(question) or short)


def without_artifact(question: str) -> str:
    """The turn without its words for code, a repository or a release ("is the code for X
    available?" -> "is the for X ?"), or for a new dataset: they ask about the papers already
    shown, never for a topic of their own."""
    artifact = asked_artifact(question)
    if artifact == CODE:
        return _ARTIFACT_WORD.sub(" ", question)
    if artifact == DATASET:
        return _ASKS_DATASET.sub(" ", question)
    return question


def releases(artifact: str, title: str, abstract: str) -> bool:
    """Whether the paper (title, abstract) says it releases its code (CODE) or makes a dataset
    (DATASET)."""
    if artifact == CODE:
        return bool(_WHERE_TO_GET.search(abstract) or _CODE_AVAILABLE.search(abstract))
    return bool(_MAKES_DATA.search(abstract) or _DATA_TITLE.search(title))


# "lots of languages", "several sign languages at once", "multiple cores": how many of a thing a
# paper covers, not the thing (every paper of a list on sign language translation writes "sign
# language"). Not "how many …", which asks for the number.
_ASKS_MANY = re.compile(
    r"(?<!how )\b(?:lots of|a lot of|many|several|multiple|various|numerous|dozens of|"
    r"hundreds of|a (?:wide |broad )?range of|a bunch of|a variety of)\s+((?:[\w-]+\s+){0,2}?"
    r"[\w-]+s)\b", re.I)
_NUMBER = (r"(?:\d[\d,.]*\+?|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
           r"fifteen|twenty|thirty|forty|fifty|hundreds?|thousands?|dozens?)")
_MANY_WORDS = r"(?:many|several|multiple|various|numerous|a myriad of|a range of|a variety of)"


def asked_many(question: str) -> str | None:
    """The thing a selecting turn asks for many of ("which one covers lots of creoles at
    once?" -> "creoles"), or None."""
    match = _ASKS_MANY.search(question)
    return match.group(1).split()[-1] if match else None


def covers_many(thing: str, title: str, abstract: str) -> int:
    """How plainly a paper covers many of `thing` (a plural noun): 2 for a count of them ("41
    Creole languages", "27 languages"), 1 for "many", "several", "multiple" of them or a
    "multi-" word of them ("multilingual" for languages), else 0."""
    text = f"{title}. {abstract}"
    singular = thing.lower().rstrip("s")
    stem = re.escape(singular[:max(4, len(singular) - 2)])  # "creole" -> "creo", "cores" -> "core"
    between = r"\s+(?:[\w-]+\s+){0,2}?"
    if re.search(r"\b" + _NUMBER + between + stem + r"\w*", text, re.I):
        return 2
    if re.search(r"\b" + _MANY_WORDS + between + stem + r"\w*", text, re.I):
        return 1
    multi = "lingual" if singular == "language" else stem
    return int(bool(re.search(r"\bmulti-?" + multi, text, re.I)))
