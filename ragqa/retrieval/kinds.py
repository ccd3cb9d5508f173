"""Whether a question asks for papers (a list) or for something else (a claim to check, a fact
about one paper, a place in the last answer): a logistic model fitted on labelled questions by
bench/understanding/fit_list_question.py, which writes ragqa/data/list_question_model.json with
its provenance (data, split, figures).

Two parts, summed before the sigmoid:
- the wording, as named features (never positional): a word ("w:papers"), a pair of words
  ("b:has been"), the first one or two words ("first:which", "first2:what has"), the last mark
  ("last:?"), the length in words ("len:4-6") and the two together ("end:.|1-3": a short topic
  typed with a full stop is no claim). Only words common across the labelled sets are features,
  so that a field's own words never decide the form of a question;
- the sense: one weight vector over the question's embedding by the bundled MiniLM (whatever
  embedder the collection uses), for wordings no listed word covers. Each fitted source left
  out in turn is read right 0.978 of the time with it, 0.959 without; a fresh blind set 0.869
  and 0.879 (the phrase rules it replaced: 0.818); `fit_list_question.py --compare`,
  docs/benchmarks.md "Which questions ask for papers".
"""

from __future__ import annotations

import json
import math
import re
import threading
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np

from ragqa.errors import ServiceError
from ragqa.models.encoders import LocalMiniLM, MultilingualE5
from ragqa.resources import DATA_DIR

# Words in any script ("réduit", "переобучение"), and the marks that end or split a question,
# full-width ones read as their ASCII twins.
_TOKEN = re.compile(r"[^\W_]+(?:['-][^\W_]+)*|[?.:!;—]")
_MARKS = str.maketrans({"？": "?", "。": ".", "！": "!", "：": ":", "；": ";", "’": "'"})
# The MiniLM reads 256 tokens: a question is cut to this many characters before it is embedded
# (well past 256 tokens), so that a 100k-character paste costs what a long question does.
MAX_EMBEDDED_CHARS = 4000
_LENGTHS = ((3, "1-3"), (6, "4-6"), (10, "7-10"), (16, "11-16"))


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().translate(_MARKS))


def _length_bin(words: int) -> str:
    return next((label for top, label in _LENGTHS if words <= top), "17+")


def wording_features(text: str) -> set[str]:
    """Every wording feature the question has (each counts once)."""
    toks = tokens(text)
    words = [t for t in toks if t[0].isalnum()]
    out = {f"w:{w}" for w in words}
    out |= {f"b:{a} {b}" for a, b in zip(toks, toks[1:], strict=False)}
    if words:
        out.add(f"first:{words[0]}")
        out.add(f"first2:{' '.join(words[:2])}")
    last = toks[-1] if toks and not toks[-1][0].isalnum() else "word"
    length = _length_bin(len(words))
    out |= {f"last:{last}", f"len:{length}", f"end:{last}|{length}"}
    return out


_ENCODER_LOCK = threading.Lock()
_ENCODERS: list = []


def _encoder() -> LocalMiniLM:
    """One session per process, on one thread (a server runs one request per thread); its
    runs are thread-safe, so only its creation is locked."""
    with _ENCODER_LOCK:
        if not _ENCODERS:
            _ENCODERS.append(LocalMiniLM(threads=1))
        return _ENCODERS[0]


def sense_embedder_id() -> str:
    return LocalMiniLM.embedder_id


def question_vectors(texts: list[str]) -> np.ndarray:
    """The questions' embeddings by the bundled MiniLM, the model's sense features."""
    return _encoder().embed([t[:MAX_EMBEDDED_CHARS] for t in texts]).astype(np.float64)


def _question_vector(text: str) -> np.ndarray:
    return _cached_vector(text[:MAX_EMBEDDED_CHARS])


@lru_cache(maxsize=256)
def _cached_vector(text: str) -> np.ndarray:
    vector = question_vectors([text])[0]
    vector.setflags(write=False)  # shared by every caller of the cache
    return vector


_MULTILINGUAL: list = []


def _multilingual_encoder() -> MultilingualE5:
    """multilingual-e5 (docs/multilingual.md), loaded at the first turn in another language."""
    with _ENCODER_LOCK:
        if not _MULTILINGUAL:
            _MULTILINGUAL.append(MultilingualE5(threads=1))
        return _MULTILINGUAL[0]


def multilingual_question_vectors(texts: list[str]) -> np.ndarray:
    """The texts' embeddings as questions ("query: ") by multilingual-e5: the sense features
    of a model fitted for turns in any language."""
    cut = [t[:MAX_EMBEDDED_CHARS] for t in texts]
    return _multilingual_encoder().embed_queries(cut).astype(np.float64)


def _multilingual_vector(text: str) -> np.ndarray:
    return _cached_multilingual_vector(text[:MAX_EMBEDDED_CHARS])


@lru_cache(maxsize=256)
def _cached_multilingual_vector(text: str) -> np.ndarray:
    vector = multilingual_question_vectors([text])[0]
    vector.setflags(write=False)
    return vector


# The embedders a model's sense weights may be fitted on, each with the question's vector by it.
SENSE_VECTORS = {LocalMiniLM.embedder_id: _question_vector,
                 MultilingualE5.embedder_id: _multilingual_vector}


@dataclass(frozen=True)
class WordingModel:
    """P(yes) = sigmoid(bias + the weights of the question's wording features + the sense
    weights . its MiniLM embedding)."""

    weights: dict[str, float]
    bias: float
    threshold: float
    sense: np.ndarray | None = None

    def logit(self, text: str) -> float:
        z = self.bias + sum(self.weights.get(f, 0.0) for f in wording_features(text))
        if self.sense is not None:
            z += float(_question_vector(text) @ self.sense)
        return z

    def probability(self, text: str) -> float:
        return 1.0 / (1.0 + math.exp(-self.logit(text)))

    def decides(self, text: str) -> bool:
        """A text without a word ("?", "...") asks for nothing."""
        if not any(t[0].isalnum() for t in tokens(text)):
            return False
        return self.probability(text) >= self.threshold

    @classmethod
    def from_json(cls, record: dict) -> WordingModel:
        sense = record.get("sense")
        vector = None
        if sense:
            vector = np.asarray(sense["weights"], dtype=np.float64)
            if sense.get("embedder") != sense_embedder_id() or vector.shape != (384,):
                raise ValueError(f"the list-question model was fitted on {sense.get('embedder')}"
                                 f" vectors of {vector.size} dimensions, not on this MiniLM's: "
                                 "refit it (bench/understanding/fit_list_question.py --write)")
        return cls({k: float(v) for k, v in record["weights"].items()}, float(record["bias"]),
                   float(record["threshold"]), vector)


@dataclass(frozen=True)
class ChoiceModel:
    """One of several kinds: the kind whose score is highest, a score being its bias + its
    weight of each named feature x the feature's value + its sense weights . the text's
    embedding (by the bundled MiniLM, or by multilingual-e5 for a model fitted for turns in any
    language: `embedder`); a multinomial logistic model, features it has no weight for count
    nothing."""

    kinds: tuple[str, ...]
    weights: dict[str, np.ndarray]  # feature name -> one weight per kind
    bias: np.ndarray
    sense: np.ndarray | None = None  # 384 x kinds, the embedding's scale folded in
    embedder: str = LocalMiniLM.embedder_id  # whose vectors `sense` weighs (SENSE_VECTORS)

    def scores(self, features: dict[str, float], text: str) -> np.ndarray:
        z = self.bias.copy()
        for name, value in features.items():
            if name in self.weights:
                z += value * self.weights[name]
        if self.sense is not None:
            z += SENSE_VECTORS[self.embedder](text) @ self.sense
        return z

    def choose(self, features: dict[str, float], text: str) -> str:
        return self.kinds[int(np.argmax(self.scores(features, text)))]

    @classmethod
    def from_json(cls, record: dict) -> ChoiceModel:
        kinds = tuple(record["kinds"])
        weights = {k: np.asarray(v, dtype=np.float64) for k, v in record["weights"].items()}
        if any(w.shape != (len(kinds),) for w in weights.values()):
            raise ValueError("a choice model's weights must give one value per kind")
        sense = record.get("sense")
        matrix, embedder = None, sense_embedder_id()
        if sense:
            matrix, embedder = np.asarray(sense["weights"], dtype=np.float64), sense.get("embedder")
            if embedder not in SENSE_VECTORS or matrix.shape != (384, len(kinds)):
                raise ValueError(f"the choice model was fitted on {embedder} vectors of "
                                 f"{matrix.shape} weights, not on vectors ragqa makes: refit it")
        return cls(kinds, weights, np.asarray(record["bias"], dtype=np.float64), matrix, embedder)


@cache
def choice_model(file_name: str, kinds: tuple[str, ...], cues: frozenset[str]) -> ChoiceModel:
    """A shipped choice model of ragqa/data (the follow-up kind: followup_kind_model.json), which
    must choose among `kinds` and weigh no "cue:" feature the code does not compute (`cues`): a
    cue renamed or a kind added without a refit fails here, never silently."""
    path = DATA_DIR / file_name
    try:
        model = ChoiceModel.from_json(json.loads(path.read_text(encoding="utf-8")))
        unknown = sorted(n for n in model.weights if n.startswith("cue:") and n not in cues)
        if model.kinds != kinds or unknown:
            raise ValueError(f"its kinds {list(model.kinds)} or cues {unknown} are not the code's")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ServiceError(f"the model file {path} is missing or damaged ({exc}): reinstall "
                           "ragqa, or refit it with the bench script its provenance names") from exc
    return model


@cache
def list_question_model() -> WordingModel:
    """The shipped model: does a question ask for the papers on a topic?"""
    record = json.loads((DATA_DIR / "list_question_model.json").read_text(encoding="utf-8"))
    return WordingModel.from_json(record)
