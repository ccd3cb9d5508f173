"""The map of a collection: every paper's point, its theme, the themes' names and places.

A map is computed once per state of the collection (the BM25 snapshot's fingerprint) and kept
beside the snapshots, in `maps/` of the collection's local folder. When papers were added
since the last map, they are placed among their neighbours on it (`layout.place`) instead of
laying everything out again, up to RELAYOUT_SHARE of the map; removed papers just leave it.
Themes are regions of the map (maps.regions: the points grouped where the layout puts them),
as many as the summaries' rule gives the collection, and are named after the research field
nearest their papers (maps.fields; by the summaries' namer, from the papers' own phrases, when
the fields cannot be embedded); a paper placed later takes the theme of its neighbours on the
map. Papers far from every group are in no theme (`regions.NOISE`); a collection of
SUBTHEMES_FROM papers or more has sub-themes inside its larger themes, named among their
siblings by the summaries' namer.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragqa.answering.messages import message
from ragqa.answering.summarize import OTHER, choose_themes, theme_names
from ragqa.errors import EmbeddingError, require_extra
from ragqa.index.store import local_dir
from ragqa.maps.fields import field_names, field_vectors
from ragqa.maps.layout import fit_layout, method_name, place
from ragqa.maps.regions import NOISE, apart, label_by_neighbours, map_regions, split_regions
from ragqa.sources.paper import Paper

if TYPE_CHECKING:
    from ragqa.retrieval.retriever import Retriever

# Papers added since the last layout are placed on it while they are at most this share of the
# map; beyond it the map is laid out again. A placed paper keeps fewer of its neighbours than a
# laid-out one (0.33 against 0.40 of its 10 nearest, bench/maps/placing.py), and papers placed
# among each other drift from where a layout would put them: a tenth of the map is the bound
# chosen, not fitted.
RELAYOUT_SHARE = 0.10
# A theme is named from its most central papers: naming all 37,932 papers of `scale` took 239 s,
# its themes' 400 most central ones 3.6 s, with names on the same subjects (2 of 9 word for
# word; "Gene expression and stem cells" / "Stem cells and transcription factors"):
# bench/maps/naming.py.
NAMING_PAPERS = 400
# Sub-themes: a collection this large is too many papers for ten names at full view (the page
# shows the sub-themes' names when zoomed in); within it, a theme of SPLIT_FROM papers or more is
# cut into as many regions as the summaries' rule gives its papers. Chosen, not fitted: 2,000 is
# the size at which the new user of issue 48 could no longer read the map.
SUBTHEMES_FROM = 2_000
SPLIT_FROM = 200
CACHE_VERSION = 4  # raise it when the layout, the themes or their names are made differently
KEEP_MAPS = 2  # cached maps kept per collection: the newest ones

Progress = Callable[[str], None]


@dataclass
class MapTheme:
    name: str
    size: int
    x: float  # where its label goes: the member nearest the middle of its points
    y: float
    parent: int = NOISE  # a sub-theme's theme


@dataclass
class CollectionMap:
    state: str  # the snapshot fingerprint this map is of
    method: str
    papers: list[Paper]
    points: np.ndarray  # (n, 2) in the unit square
    theme_of: np.ndarray  # each paper's index into `themes`, NOISE when apart from all
    themes: list[MapTheme]
    subtheme_of: np.ndarray  # each paper's index into `subthemes`, NOISE where none
    subthemes: list[MapTheme]
    placed: int = 0  # papers placed among their neighbours since the last layout
    seconds: float = 0.0  # what computing it took (0 when read from the cache)
    named_by: str = "fields"  # how the themes were named: "fields", or "phrases" (maps.fields)


def collection_map(retriever: Retriever, progress: Progress | None = None) -> CollectionMap:
    """The map of the collection as it is now: read from the cache, extended with the papers
    added since, or computed."""
    require_extra("openTSNE", "maps", "the map of a collection")
    say = progress or (lambda text: None)
    index = retriever.lexical
    papers = index.all_papers() if index is not None else []
    state = index.fingerprint if index is not None else ""
    folder = maps_folder(retriever)
    if not papers:
        none = np.zeros(0, dtype=np.int64)
        return CollectionMap(state, "", [], np.zeros((0, 2)), none, [], none, [])
    cached = _read(folder, state)
    if cached is not None:
        return _assemble({**cached, "seconds": 0.0}, papers, state)
    started = time.perf_counter()
    ids = [p.paper_id for p in papers]
    say(f"Reading {len(ids):,} vectors")
    vectors = _unit(retriever.store.paper_vectors(ids))
    latest = _read_latest(folder)
    data = _extended(latest, ids, vectors) if latest is not None else None
    if data is None:
        data = _computed(papers, vectors, say, _fields(retriever, say))
    elif data.get("named_by") != "fields":
        _renamed_by_fields(data, papers, vectors, _fields(retriever, say))
    data["state"] = state
    data["seconds"] = time.perf_counter() - started
    _write(folder, state, data)
    return _assemble(data, papers, state)


# ------------------------------------------------------------------ computing

def _fields(retriever: Retriever, say: Progress) -> np.ndarray | None:
    """The research fields as the collection's encoder embeds them; None (the themes are
    named from their papers' phrases, and named again by fields when the map is next extended)
    when a remote embedder fails, with a notice."""
    try:
        return field_vectors(retriever.store.encoder)
    except EmbeddingError as exc:
        say(message("notice.map_fields_failed", reason=str(exc)))
        return None


def _theme_names(papers: Sequence[Paper], vectors: np.ndarray, themes: list[np.ndarray],
                 fields: np.ndarray | None) -> tuple[list[str], str]:
    """The themes' names and how they were made: "fields", or "phrases" when there are no
    field vectors of the papers' dimension (a remote model whose vectors changed size)."""
    if fields is not None and themes and fields.shape[1] == vectors.shape[1]:
        return field_names(vectors, themes, fields), "fields"
    return _names(papers, vectors, themes), "phrases"


def _renamed_by_fields(data: dict, papers: Sequence[Paper], vectors: np.ndarray,
                       fields: np.ndarray | None) -> None:
    """An extended map whose themes were named from phrases (the fields could not be embedded
    then) named by fields, now that they can."""
    labels = data["labels"]
    themes = [np.flatnonzero(labels == t) for t in range(len(data["names"]))]
    if fields is not None and all(len(members) for members in themes):
        data["names"], data["named_by"] = _theme_names(papers, vectors, themes, fields)


def _computed(papers: Sequence[Paper], vectors: np.ndarray, say: Progress,
              fields: np.ndarray | None = None) -> dict:
    n = len(papers)
    points = fit_layout(vectors, progress=say)
    say(f"Grouping {n:,} papers into themes")
    labels = map_regions(points, len(np.unique(choose_themes(vectors))))
    labels[apart(points)] = NOISE
    labels = _by_size(labels)
    sub, parents = _subthemes(points, vectors, labels) if n >= SUBTHEMES_FROM else (
        np.full(n, NOISE, dtype=np.int64), [])
    say("Naming the themes")
    themes = [np.flatnonzero(labels == t) for t in range(int(labels.max()) + 1)]
    names, named_by = _theme_names(papers, vectors, themes, fields)
    subnames = [""] * len(parents)
    for theme in sorted(set(parents)):
        siblings = [j for j, parent in enumerate(parents) if parent == theme]
        found = _names(papers, vectors, [np.flatnonzero(sub == j) for j in siblings])
        for j, name in zip(siblings, found, strict=True):
            subnames[j] = name
    centres = _centres(vectors, labels, len(names))
    return {"ids": [p.paper_id for p in papers], "points": points, "labels": labels,
            "names": names, "named_by": named_by, "centres": centres, "placed": 0,
            "sublabels": sub,
            "subparents": np.array(parents, dtype=np.int64), "subnames": subnames,
            "split": n >= SUBTHEMES_FROM, "method": method_name(n)}


def _by_size(labels: np.ndarray) -> np.ndarray:
    """The labels renumbered, the largest theme 0; NOISE stays."""
    themed = labels[labels != NOISE]
    counts = np.bincount(themed) if len(themed) else np.zeros(0, dtype=np.int64)
    ranked = sorted(range(len(counts)), key=lambda label: (-counts[label], label))
    order = {old: new for new, old in enumerate(ranked)} | {NOISE: NOISE}
    return np.array([order[int(label)] for label in labels], dtype=np.int64)


def _subthemes(points: np.ndarray, vectors: np.ndarray, labels: np.ndarray
               ) -> tuple[np.ndarray, list[int]]:
    counts = {}
    for theme in range(int(labels.max()) + 1 if len(labels) else 0):
        members = np.flatnonzero(labels == theme)
        if len(members) >= SPLIT_FROM:
            counts[theme] = len(np.unique(choose_themes(vectors[members])))
    return split_regions(points, labels, counts)


def _names(papers: Sequence[Paper], vectors: np.ndarray,
           groups_of: Sequence[np.ndarray]) -> list[str]:
    """A name for each group of rows (a theme's papers), from its most central papers."""
    groups = []
    for members in groups_of:
        centre = vectors[members].mean(axis=0)
        central = members[np.argsort(-(vectors[members] @ centre))][:NAMING_PAPERS]
        groups.append([papers[i] for i in central])
    return [message("summary.other") if name == OTHER else name
            for name in theme_names(groups)]


def _centres(vectors: np.ndarray, labels: np.ndarray, count: int) -> np.ndarray:
    centres = np.zeros((count, vectors.shape[1] if vectors.ndim == 2 else 0))
    for label in range(count):
        mean = vectors[labels == label].mean(axis=0)
        centres[label] = mean / (np.linalg.norm(mean) or 1.0)
    return centres


def _extended(latest: dict, ids: list[str], vectors: np.ndarray) -> dict | None:
    """The latest map with the papers added since placed on it and the removed ones gone;
    None when too much changed (or nothing of it is left) to keep it."""
    old_index = {pid: i for i, pid in enumerate(latest["ids"])}
    kept = [i for i, pid in enumerate(ids) if pid in old_index]
    new = [i for i, pid in enumerate(ids) if pid not in old_index]
    placed = int(latest["placed"]) + len(new)
    if not kept or len(latest["centres"]) == 0 or len(ids) < 2 \
            or placed > RELAYOUT_SHARE * len(ids) or vectors.shape[1] != latest["centres"].shape[1]:
        return None
    if len(ids) >= SUBTHEMES_FROM and not latest.get("split"):
        return None  # grown to the size that has sub-themes: laid out again to make them
    points = np.zeros((len(ids), 2))
    labels = np.zeros(len(ids), dtype=np.int64)
    sub = np.full(len(ids), NOISE, dtype=np.int64)
    source = np.array([old_index[ids[i]] for i in kept])
    points[kept] = latest["points"][source]
    labels[kept] = latest["labels"][source]
    sub[kept] = latest["sublabels"][source]
    parents = np.asarray(latest["subparents"], dtype=np.int64)
    if new:
        points[new] = place(vectors[new], vectors[kept], points[kept])
        labels[new] = label_by_neighbours(points[new], points[kept], labels[kept])
        sub[new] = _placed_subthemes(points, labels, sub, kept, new)
    return {"ids": ids, "points": points, "labels": labels, "names": list(latest["names"]),
            "named_by": str(latest.get("named_by", "phrases")), "centres": latest["centres"],
            "placed": placed, "sublabels": sub,
            "subparents": parents, "subnames": list(latest["subnames"]),
            "split": bool(latest.get("split")), "method": str(latest["method"])}


def _placed_subthemes(points: np.ndarray, labels: np.ndarray, sub: np.ndarray,
                      kept: list[int], new: list[int]) -> np.ndarray:
    """The sub-theme of each new paper: the one most of its nearest laid-out papers of its own
    theme have (NOISE for a theme without sub-themes)."""
    kept_rows, new_rows = np.array(kept), np.array(new)
    out = np.full(len(new_rows), NOISE, dtype=np.int64)
    for theme in np.unique(labels[new_rows]):
        mine = labels[new_rows] == theme
        among = kept_rows[(labels[kept_rows] == theme) & (sub[kept_rows] != NOISE)]
        if theme != NOISE and len(among):
            out[mine] = label_by_neighbours(points[new_rows[mine]], points[among], sub[among])
    return out


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


# ------------------------------------------------------------------ the cache

def maps_folder(retriever: Retriever) -> Path:
    """Where a collection's maps (and their LLM names: maps.naming) are kept."""
    return local_dir(retriever.store.settings, retriever.store.name) / "maps"


def _file(folder: Path, state: str) -> Path:
    return folder / f"map-{state[:32]}.npz"


def _write(folder: Path, state: str, data: dict) -> None:
    """Atomically (a reader sees a whole map or none); the oldest maps beyond KEEP_MAPS go."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"version": CACHE_VERSION, "state": state, "names": data["names"],
            "named_by": data.get("named_by", "phrases"), "subnames": data["subnames"],
            "split": data["split"], "placed": data["placed"],
            "method": data["method"],
            "seconds": round(float(data["seconds"]), 2)}
    temporary = folder / f".map-{os.getpid()}-{time.monotonic_ns()}.npz"
    with open(temporary, "wb") as handle:
        np.savez(handle, ids=np.array(data["ids"], dtype=str), points=data["points"],
                 labels=data["labels"], centres=data["centres"],
                 sublabels=data["sublabels"], subparents=data["subparents"],
                 meta=np.array(json.dumps(meta)))
    os.replace(temporary, _file(folder, state))
    maps = sorted(folder.glob("map-*.npz"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in maps[KEEP_MAPS:]:
        old.unlink(missing_ok=True)


def _load(path: Path) -> dict | None:
    try:
        with np.load(path, allow_pickle=False) as stored:
            meta = json.loads(str(stored["meta"]))
            if meta.get("version") != CACHE_VERSION:
                return None
            return {"ids": [str(x) for x in stored["ids"]], "points": stored["points"],
                    "labels": stored["labels"], "centres": stored["centres"],
                    "sublabels": stored["sublabels"], "subparents": stored["subparents"],
                    **meta}
    except (OSError, ValueError, KeyError):  # a damaged or foreign file: computed again
        return None


def _read(folder: Path, state: str) -> dict | None:
    path = _file(folder, state)
    data = _load(path) if path.is_file() else None
    return data if data is not None and data["state"] == state else None


def _read_latest(folder: Path) -> dict | None:
    if not folder.is_dir():
        return None
    for path in sorted(folder.glob("map-*.npz"), key=lambda p: p.stat().st_mtime,
                       reverse=True):
        data = _load(path)
        if data is not None:
            return data
    return None


# ------------------------------------------------------------------ the result

def _assemble(data: dict, papers: list[Paper], state: str) -> CollectionMap:
    by_id = {p.paper_id: p for p in papers}
    rows = [i for i, pid in enumerate(data["ids"]) if pid in by_id]
    ordered = [by_id[data["ids"][i]] for i in rows]
    points = np.asarray(data["points"], dtype=np.float64)[rows] if rows else np.zeros((0, 2))
    labels = np.asarray(data["labels"], dtype=np.int64)[rows] if rows else np.zeros(0, int)
    sub = np.asarray(data["sublabels"], dtype=np.int64)[rows] if rows else np.zeros(0, int)
    themes, theme_of = _placed_themes(points, labels, data["names"])
    parents = np.asarray(data["subparents"], dtype=np.int64)
    subthemes, subtheme_of = _placed_themes(points, sub, data["subnames"])
    for subtheme, old in zip(subthemes, _kept_labels(sub, len(data["subnames"])), strict=True):
        subtheme.parent = int(theme_of[labels == parents[old]][0])
    return CollectionMap(state, str(data["method"]), ordered, points, theme_of,
                         themes, subtheme_of, subthemes, int(data["placed"]),
                         float(data.get("seconds", 0.0)), str(data.get("named_by", "phrases")))


def _kept_labels(labels: np.ndarray, count: int) -> list[int]:
    """The labels (of `count`) that some paper still has, in order."""
    present = set(labels.tolist())
    return [label for label in range(count) if label in present]


def _placed_themes(points: np.ndarray, labels: np.ndarray, names: Sequence[str]
                   ) -> tuple[list[MapTheme], np.ndarray]:
    """The themes (or sub-themes) some paper still has, renumbered in order, each with its
    label's place: the member nearest the middle of its points."""
    themes = []
    kept = _kept_labels(labels, len(names))
    for label in kept:
        members = np.flatnonzero(labels == label)
        middle = np.median(points[members], axis=0)
        anchor = members[np.argmin(((points[members] - middle) ** 2).sum(axis=1))]
        themes.append(MapTheme(str(names[label]), len(members), float(points[anchor, 0]),
                               float(points[anchor, 1])))
    renumber = {old: new for new, old in enumerate(kept)} | {NOISE: NOISE}
    return themes, np.array([renumber[int(label)] for label in labels], dtype=np.int64)


def as_json(cmap: CollectionMap, collection: str,
            highlight: tuple[str, list[str]] | None = None) -> dict:
    """`ragqa map --json`: the themes, and the points as columns (one list per field, in the
    same order), so that 37,932 papers cost a few MB, not one object each."""
    papers = cmap.papers
    return {
        "collection": collection, "papers": len(papers), "state": cmap.state,
        "method": cmap.method, "placed": cmap.placed, "seconds": round(cmap.seconds, 2),
        "named_by": cmap.named_by,
        "themes": [{"theme": i, "name": t.name, "papers": t.size, "x": round(t.x, 5),
                    "y": round(t.y, 5)} for i, t in enumerate(cmap.themes)],
        "apart": int((cmap.theme_of == NOISE).sum()),
        "subthemes": [{"subtheme": j, "theme": t.parent, "name": t.name, "papers": t.size,
                       "x": round(t.x, 5), "y": round(t.y, 5)}
                      for j, t in enumerate(cmap.subthemes)],
        "points": {
            "paper_id": [p.paper_id for p in papers], "title": [p.title for p in papers],
            "short_title": [short_title(p.title) for p in papers],
            "source": [p.source for p in papers], "venue": [p.venue for p in papers],
            "year": [p.year for p in papers], "url": [p.url for p in papers],
            "x": [round(float(v), 5) for v in cmap.points[:, 0]],
            "y": [round(float(v), 5) for v in cmap.points[:, 1]],
            "theme": [int(t) for t in cmap.theme_of],
            "subtheme": [int(t) for t in cmap.subtheme_of],
        },
        "highlight": {"question": highlight[0], "paper_ids": highlight[1]}
        if highlight else None,
    }


def short_title(title: str, most: int = 28) -> str:
    """A label for a paper on a small map: the name before a title's colon ("Moshi: a
    speech-text foundation model" → "Moshi"), else its first words within `most` characters."""
    head, colon, _ = title.partition(":")
    if colon and 2 <= len(head.strip()) <= most:
        return head.strip()
    words: list[str] = []
    for word in title.split():
        if words and len(" ".join([*words, word])) > most:
            break
        words.append(word)
    text = " ".join(words)
    if len(text) > most:  # one word longer than the label
        return text[:most - 1] + "…"
    return text if len(text) >= len(title.strip()) else text.rstrip(",;.-") + "…"
