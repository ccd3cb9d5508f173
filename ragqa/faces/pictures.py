"""Static pictures for reports: the map (`ragqa map --out map.png|.svg`, a summary's map) and a
topic's trend (`ragqa trends --out`), drawn with matplotlib (Agg, no display). 1600×1000
pixels, labels at least 11 pt."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragqa.errors import UserError, require_extra

COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"]  # as map.js
FORMATS = (".png", ".svg")
SIZE, DPI = (16, 10), 100


def check_picture_path(option: str, path: Path) -> None:
    """Before the work: a picture can be written there, by this install."""
    require_extra("matplotlib", "maps", f"{option} (a picture)")
    if path.suffix.lower() not in FORMATS:
        raise UserError(f"{option} {path}: a picture is written as .png or .svg")
    if not path.resolve().parent.is_dir():
        raise UserError(f"{option} {path}: no folder {path.resolve().parent}")


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt, plt.figure(figsize=SIZE, dpi=DPI)


def _save(plt, figure, path: Path) -> None:
    """Written whole or not at all: a temporary file renamed over the target."""
    temporary = path.with_name(f".{path.name}.part")
    try:
        figure.savefig(temporary, format=path.suffix.lower().lstrip("."), dpi=DPI)
        temporary.replace(path)
    finally:
        plt.close(figure)
        temporary.unlink(missing_ok=True)


def _plain(text: str) -> str:
    """Text matplotlib shows as written: a "$" would start its math mode ("$5 or $10")."""
    return text.replace("$", r"\$")


def _wrapped(text: str, width: int = 34) -> str:
    """A legend entry on lines of at most `width` characters (the legend's column is ~30 %
    of the picture)."""
    import textwrap

    return _plain("\n".join(textwrap.wrap(text, width)) or text)


def _point_size(n: int) -> float:
    return float(np.clip(4000 / max(n, 1), 1.0, 60.0))


def _labels(axes, figure, labels: Sequence[tuple[str, Sequence[tuple[float, float]]]]
            ) -> list[str]:
    """Theme labels, largest theme first, each inside its own region: at the first of its
    places (its points, most central first) where it overlaps no label already placed, on one
    line or two, at 12 pt or else 10; a label with no free place in its region is left out.
    The names labelled."""
    renderer = figure.canvas.get_renderer()
    inside = axes.get_window_extent(renderer)
    placed: list = []
    return [name for name, places in labels
            if _place_label(axes, renderer, inside, placed, name, places)]


def _place_label(axes, renderer, inside, placed: list, name: str,
                 places: Sequence[tuple[float, float]]) -> bool:
    for size in (12, 10):
        for text in (_plain(name), _wrapped(_plain(name), 22)):
            for x, y in places:
                label = axes.annotate(text, (x, y), ha="center", va="center", fontsize=size,
                                      weight="bold", color="#222", linespacing=1.0,
                                      bbox={"boxstyle": "round,pad=0.2", "fc": "white",
                                            "ec": "none", "alpha": 0.85})
                box = label.get_window_extent(renderer).expanded(1.02, 1.05)
                if not any(box.overlaps(other) for other in placed) and \
                        inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1):
                    placed.append(box)
                    return True
                label.remove()
    return False


def _places(x: np.ndarray, y: np.ndarray, first: tuple[float, float] | None = None,
            most: int = 12) -> list[tuple[float, float]]:
    """Where a theme's label may go: its given place, then its points from the most central
    out (at most `most` of them, spread over the region)."""
    if not len(x):
        return [first] if first else []
    middle = np.median(np.column_stack([x, y]), axis=0)
    order = np.argsort((x - middle[0]) ** 2 + (y - middle[1]) ** 2)
    picked = order[np.linspace(0, len(order) - 1, min(most, len(order))).astype(int)]
    return ([first] if first else []) + [(float(x[i]), float(y[i])) for i in picked]


def map_picture(result: dict, path: Path, focus: dict | None = None) -> list[str]:
    """The map of `ragqa map --json`'s object. With `focus` ({"paper_ids", "themes": [names],
    "theme_of": {paper_id: theme index}}, a summary's), the rest of the collection is grey and
    the focus papers are coloured by their own themes, labelled where they lie. The names of
    the themes labelled on it."""
    plt, figure = _figure()
    # The map on the right, square; the legend in the room on its left.
    axes = figure.add_axes((0.3, 0.01, 0.69, 0.92))
    axes.set_axis_off()
    points = result["points"]
    x, y = np.asarray(points["x"], dtype=float), np.asarray(points["y"], dtype=float)
    themes = np.asarray(points["theme"], dtype=int)
    n = len(x)
    size = _point_size(n)
    index = {pid: i for i, pid in enumerate(points["paper_id"])}
    if focus is None:
        colours = [COLOURS[t % len(COLOURS)] for t in themes]
        axes.scatter(x, y, s=size, c=colours, alpha=0.7, linewidths=0)
        labels = [(t["name"], _places(x[themes == t["theme"]], y[themes == t["theme"]],
                                      (t["x"], t["y"]))) for t in result["themes"]]
        marked = [index[p] for p in (result.get("highlight") or {}).get("paper_ids", [])
                  if p in index]
        if marked:
            # Ringed, not filled: no colour a theme has, and each keeps its theme's inside.
            axes.scatter(x[marked], y[marked], s=max(size * 4, 40), facecolors="none",
                         edgecolors="black", linewidths=1.6, zorder=3)
        from matplotlib.lines import Line2D

        figure.legend(handles=[Line2D([], [], marker="s", linestyle="", markersize=9,
                                      color=COLOURS[t["theme"] % len(COLOURS)],
                                      label=_wrapped(f"{t['name']} ({t['papers']:,})"))
                               for t in result["themes"]],
                      loc="upper left", bbox_to_anchor=(0.01, 0.9), fontsize=11,
                      frameon=False)
        title = f"{result['collection']}: {n:,} papers, {len(result['themes'])} themes"
        if result.get("highlight"):
            title += f" — ringed, {len(marked)} papers for “{result['highlight']['question']}”"
    else:
        axes.scatter(x, y, s=size, c="#c8c8c8", alpha=0.5, linewidths=0)
        mine = [(index[p], focus["theme_of"][p]) for p in focus["paper_ids"] if p in index]
        rows = np.array([i for i, _ in mine], dtype=int)
        kinds = np.array([t for _, t in mine], dtype=int)
        labels = []
        for t, name in enumerate(focus["themes"]):
            members = rows[kinds == t]
            if not len(members):
                continue
            axes.scatter(x[members], y[members], s=max(size * 3, 24),
                         c=COLOURS[t % len(COLOURS)], edgecolors="black", linewidths=0.4,
                         zorder=3, label=_wrapped(f"{name} ({len(members)})"))
            labels.append((name, _places(x[members], y[members])))
        if len(rows):
            figure.legend(loc="upper left", bbox_to_anchor=(0.01, 0.9), fontsize=11,
                          frameon=False)
        title = f"{len(rows)} papers on “{focus['topic']}” among the {n:,} of " \
                f"{result['collection']}"
    axes.set_xlim(-0.02, 1.02)
    axes.set_ylim(-0.02, 1.02)
    axes.set_aspect("equal")
    figure.suptitle(_plain(title), fontsize=14)
    labelled = _labels(axes, figure, labels)
    _save(plt, figure, path)
    return labelled


def trend_picture(result: dict, path: Path) -> None:
    """`ragqa trends --json`'s object: the topic's papers per year (bars) and their share of
    the collection's papers of that year (line)."""
    plt, figure = _figure()
    axes = figure.add_axes((0.07, 0.1, 0.86, 0.78))
    years = [row["year"] for row in result["years"]]
    counts = [row["papers"] for row in result["years"]]
    # A year without papers in the collection is a gap in the line, not 0 %.
    shares = [np.nan if row["share"] is None else 100 * row["share"]
              for row in result["years"]]
    axes.bar(years, counts, color="#4e79a7", label=_plain(f"papers on “{result['topic']}”"))
    axes.set_ylabel("papers on the topic", fontsize=12)
    axes.set_xlabel("year", fontsize=12)
    axes.tick_params(labelsize=11)
    step = -(-len(years) // 16)  # at most 16 year labels: 11 pt years need ~80 px each
    axes.set_xticks(years[::step])
    right = axes.twinx()
    right.plot(years, shares, color="#e15759", marker="o", label="share of the year's papers")
    right.set_ylabel("% of the collection's papers that year", fontsize=12)
    right.tick_params(labelsize=11)
    right.set_ylim(bottom=0)
    handles = axes.get_legend_handles_labels()
    more = right.get_legend_handles_labels()
    axes.legend(handles[0] + more[0], handles[1] + more[1], loc="upper left", fontsize=11)
    apart = result["without_year"]
    note = f" ({apart['papers']} of its papers carry no year)" if apart["papers"] else ""
    figure.suptitle(_plain(f"“{result['topic']}” in {result['collection']}: "
                           f"{result['papers']} papers{note}"), fontsize=14)
    _save(plt, figure, path)
