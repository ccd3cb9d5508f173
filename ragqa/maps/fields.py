"""A map's themes named after research fields: the field whose description sits nearest a
theme's papers, among the fields of data/research_fields.tsv.

A region of a conference's map holds several subjects, and the phrases its papers share name
one of them ("Reinforcement learning and lower bound") or what every paper says ("Neural
networks", "State-of-the-art methods"). A reader names such a region by its field. Each field's
description is embedded with the collection's own encoder (as a query, as a question would be)
and compared with each theme's mean vector. A field near every theme ("Language models" on a
map of NLP papers) names none of them: a field's score is its cosine with the theme less
HUB_WEIGHT times its mean cosine over the themes named together. The best field names the theme,
with the next one when it scores within SECOND_WITHIN and shares no word with the first
("Reinforcement learning and multi-armed bandits").

Judged blind against the papers' own phrases on eight held-out maps (46 themes; `python
bench/maps/field_naming.py`, docs/benchmarks.md "Names from research fields"): accepted 0.54
against 0.39. The weights below were chosen on three development rounds of the session's
prototypes (bench/README.md, session 31).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragqa.models import Encoder
from ragqa.resources import DATA_DIR

FIELDS_FILE = DATA_DIR / "research_fields.tsv"
# Chosen by reading the names of the development maps at 0.5, 0.75 and 1.0 (bench/README.md,
# session 31: 0.5 left hubs such as "Prompting and in-context learning" naming NLP regions of
# 2020, 1.0 picked narrow fields on a single theme's chance closeness), not fitted.
HUB_WEIGHT = 0.75
# A second field joins the first when its score is this close (in the scores above: on maps of
# five themes or more about 0.023 in cosine, more on maps of one or two themes) among the five
# next best; the value the development rounds judged (bench/README.md, session 31), not fitted.
SECOND_WITHIN = 0.02
SECOND_AMONG = 5
# Words two fields' names may share and still be two subjects ("Semi-supervised learning" and
# "Self-supervised learning"); any other shared word makes the second a part of the first
# ("Reinforcement learning" and "Deep reinforcement learning").
_SOFT_WORDS = frozenset({"and", "of", "the", "in", "for", "learning", "models"})


@dataclass(frozen=True)
class Field:
    name: str
    description: str


@functools.cache
def research_fields() -> tuple[Field, ...]:
    fields = []
    for line in FIELDS_FILE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, description = line.split("\t")
            fields.append(Field(name, description))
    return tuple(fields)


_VECTORS: dict[str, np.ndarray] = {}


def field_vectors(encoder: Encoder) -> np.ndarray:
    """The fields' descriptions embedded by `encoder`, unit length (kept per embedder). Raises
    the encoder's errors (EmbeddingError for a remote embedder that fails)."""
    key = encoder.embedder_id
    if key not in _VECTORS:
        vectors = np.asarray(encoder.embed_queries([f.description for f in research_fields()]),
                             dtype=np.float64)
        _VECTORS[key] = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True),
                                             1e-12)
    return _VECTORS[key]


def field_names(vectors: np.ndarray, groups: Sequence[np.ndarray], fields: np.ndarray
                ) -> list[str]:
    """A field name for each group of rows of `vectors` (unit paper vectors), the groups named
    together (a map's themes, or one theme's sub-themes); no two groups get one name."""
    names = [f.name for f in research_fields()]
    centres = np.array([vectors[g].mean(axis=0) for g in groups])
    centres /= np.maximum(np.linalg.norm(centres, axis=1, keepdims=True), 1e-12)
    near = centres @ fields.T
    scores = near - HUB_WEIGHT * near.mean(axis=0, keepdims=True)
    given: set[str] = set()
    out = [""] * len(groups)
    # The group its field fits best is named first: a later one sharing its field takes a
    # second field to tell the two apart.
    for g in sorted(range(len(groups)), key=lambda g: -scores[g].max()):
        out[g] = _group_name(scores[g], names, given)
        given.add(out[g].lower())
    return out


def _group_name(scores: np.ndarray, names: list[str], given: set[str]) -> str:
    """The best field, with a second as near; a name already given takes another second."""
    order = [int(i) for i in np.argsort(-scores)]
    first = order[0]
    others = [b for b in order[1:] if not _words(names[b]) & _words(names[first])]
    close = next((b for b in others[:SECOND_AMONG]
                  if scores[b] >= scores[first] - SECOND_WITHIN), None)
    name = joined(names[first], names[close] if close is not None else None)
    if name.lower() not in given:
        return name
    for other in others:
        name = joined(names[first], names[other])
        if name.lower() not in given:
            return name
    return f"{names[first]} ({len(given) + 1})"  # more themes than pairs of fields


def _words(name: str) -> set[str]:
    return set(name.lower().replace(",", " ").split()) - _SOFT_WORDS


def joined(first: str, second: str | None) -> str:
    """Two fields' names as one ("Stochastic optimization and Gaussian processes")."""
    if second is None:
        return first
    # "Vision and language, multimodal learning": a comma where either name has its own "and".
    # A name keeps the capital of a name or acronym ("Gaussian processes", "NLP"), which its
    # description writes with one too.
    word = second.split()[0]
    description = {f.name: f.description for f in research_fields()}[second]
    kept = word.isupper() or word in description.split()
    later = second if kept else second[0].lower() + second[1:]
    return f"{first}, {later}" if " and " in first + second else f"{first} and {later}"
