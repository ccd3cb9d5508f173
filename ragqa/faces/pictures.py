"""Static pictures for reports: the map (`ragqa map --out map.png|.svg`, a summary's map) and a
topic's trend (`ragqa trends --out`), drawn with matplotlib (Agg, no display). 1600×1000
pixels, labels at least 11 pt."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ragqa.errors import UserError, require_extra
from ragqa.models.encoders import sha256_of

COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
           "#ff9da7", "#9c755f", "#bab0ac", "#86bcb6", "#d37295"]  # as map.js
APART = "#c8c8c8"  # papers apart from every theme (maps.regions.NOISE)
# A map of at most this many papers labels each of them by its short title (29 seeds: a reader
# wants to know which dot is which paper); above it the points are too close for words.
TITLES_UP_TO = 60
FORMATS = (".png", ".svg")
VENUE_LINES = 6  # a trend split by venue draws the venues with the most papers on the topic
SIZE, DPI = (16, 10), 100
# Chinese, Japanese and Korean words (a Chinese question, a theme named from Chinese titles):
# matplotlib's DejaVu Sans has none of their glyphs and draws boxes. Noto Sans CJK (OFL 1.1)
# comes with the maps extra (the noto-cjk-sans-otc wheel, pinned; its file's SHA256 checked
# here); matplotlib takes each glyph DejaVu Sans lacks from it.
CJK_FONT_SHA256 = "b76b0433203017ca80401b2ee0dd69350349871c4b19d504c34dbdd80541690a"
CJK_FAMILY = "Noto Sans CJK SC"


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

    if (family := _cjk_family()) is not None:
        matplotlib.rcParams["font.family"] = ["DejaVu Sans", family]
    return plt, plt.figure(figsize=SIZE, dpi=DPI)


@cache
def _cjk_family() -> str | None:
    """The CJK font's family once registered with matplotlib; None on an install without it
    (an older maps extra: CJK words are drawn as boxes, the rest as ever)."""
    try:
        from noto_cjk_sans_otc import FONT_PATH
    except ImportError:
        return None
    path = Path(str(FONT_PATH))
    if not path.is_file() or sha256_of(path) != CJK_FONT_SHA256:
        raise UserError(f"{path} is not the Noto Sans CJK font ragqa was built with (SHA256 "
                        f"{CJK_FONT_SHA256}); reinstall noto-cjk-sans-otc==0.0.1")
    import logging

    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(path))
    # The collection has one weight: a bold CJK word is drawn regular, which matplotlib would
    # otherwise say on stderr at every bold label ("Failed to find font weight bold").
    logging.getLogger("matplotlib.font_manager").setLevel(logging.ERROR)
    return CJK_FAMILY


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
    """In points²: 60 for the 29 seeds, ~4 at 2,555 papers (at 1.6, a theme's points read as
    dust, not a region), 2 at 37,932."""
    return float(np.clip(10_000 / max(n, 1), 2.0, 60.0))


def _labels(axes, figure, labels: Sequence[tuple[str, Sequence[tuple[float, float]]]],
            dots: np.ndarray | None = None,
            sublabels: Sequence[tuple[str, Sequence[tuple[float, float]]]] = ()
            ) -> tuple[list[str], list[str]]:
    """Theme labels, largest theme first, each inside its own region: at the first of its
    places (its points, most central first) where it overlaps no label already placed, on one
    line or two, at 12 pt or else 10; a label with no free place in its region is left out.
    With `dots` (a small map's points), a label covers none of them: it goes just above or
    below its place instead. Then the sub-themes' (a map of 2,000 papers or more), the same
    way inside their own regions, smaller, where the themes' leave room. The names labelled:
    themes, sub-themes."""
    renderer = figure.canvas.get_renderer()
    inside = axes.get_window_extent(renderer)
    placed: list = []
    if dots is not None:
        placed += _dot_boxes(axes, dots)
    shifts = ((0, 0),) if dots is None else ((0, 12), (0, -12), (0, 24), (0, -24))
    themes = [name for name, places in labels
              if _place_label(axes, renderer, inside, placed, name, places, shifts)]
    subthemes = [name for name, places in sublabels
                 if _place_label(axes, renderer, inside, placed, name, places,
                                 style=SUBTHEME_STYLE)]
    return themes, subthemes


def _dot_boxes(axes, dots: np.ndarray) -> list:
    from matplotlib.transforms import Bbox

    return [Bbox.from_bounds(x - 4, y - 4, 8, 8) for x, y in axes.transData.transform(dots)]


# A theme's label, then a sub-theme's: smaller, lighter, on a fainter ground, as datamapplot
# draws its levels, so that the broad themes read first.
THEME_STYLE = {"sizes": (12, 10), "weight": "bold", "color": "#222", "ground": 0.85}
SUBTHEME_STYLE = {"sizes": (8, 7), "weight": "normal", "color": "#333", "ground": 0.7}


def _place_label(axes, renderer, inside, placed: list, name: str,
                 places: Sequence[tuple[float, float]],
                 shifts: Sequence[tuple[int, int]] = ((0, 0),),
                 style: dict = THEME_STYLE) -> bool:
    for size in style["sizes"]:
        for text in (_plain(name), _wrapped(_plain(name), 22)):
            for x, y in places:
                for shift in shifts:
                    label = axes.annotate(text, (x, y), xytext=shift,
                                          textcoords="offset points", ha="center",
                                          va="center", fontsize=size, weight=style["weight"],
                                          color=style["color"], linespacing=1.0,
                                          bbox={"boxstyle": "round,pad=0.2", "fc": "white",
                                                "ec": "none", "alpha": style["ground"]})
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


class Drawn(NamedTuple):
    themes: list[str]  # the names of the themes labelled on it
    papers: int  # the papers labelled by their short titles (small maps)
    subthemes: list[str] = []  # the names of the sub-themes labelled (maps of 2,000 or more)


def map_picture(result: dict, path: Path, focus: dict | None = None) -> Drawn:
    """The map of `ragqa map --json`'s object. With `focus` ({"paper_ids", "themes": [names],
    "theme_of": {paper_id: theme index}}, a summary's), the rest of the collection is grey and
    the focus papers are coloured by their own themes, labelled where they lie. A map of at
    most TITLES_UP_TO papers labels each by its short title. What was labelled."""
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
        colours = [COLOURS[t % len(COLOURS)] if t >= 0 else APART for t in themes]
        axes.scatter(x, y, s=size, c=colours, alpha=0.8, linewidths=0)
        labels = [(t["name"], _places(x[themes == t["theme"]], y[themes == t["theme"]],
                                      (t["x"], t["y"]))) for t in result["themes"]]
        sublabels = _sublabels(result, x, y)
        marked = [index[p] for p in (result.get("highlight") or {}).get("paper_ids", [])
                  if p in index]
        if marked:
            # Ringed, not filled: no colour a theme has, and each keeps its theme's inside.
            axes.scatter(x[marked], y[marked], s=max(size * 4, 40), facecolors="none",
                         edgecolors="black", linewidths=1.6, zorder=3)
        from matplotlib.lines import Line2D

        entries = [(COLOURS[t["theme"] % len(COLOURS)], f"{t['name']} ({t['papers']:,})")
                   for t in result["themes"]]
        if result.get("apart"):
            entries.append((APART, f"apart from every theme ({result['apart']:,})"))
        figure.legend(handles=[Line2D([], [], marker="s", linestyle="", markersize=9,
                                      color=colour, label=_wrapped(text))
                               for colour, text in entries],
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
        labels, sublabels = [], []
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
    # The view holds the papers in a theme and the highlighted ones (a summary's: all).
    in_view = np.ones(n, dtype=bool)
    if focus is None and (themes != -1).any():
        in_view = themes != -1
        in_view[marked] = True
    _frame(axes, x, y, in_view)
    figure.suptitle(_plain(title), fontsize=14)
    small = n <= TITLES_UP_TO and focus is None
    labelled, sublabelled = _labels(axes, figure, labels,
                                    np.column_stack([x, y]) if small else None, sublabels)
    titled = _paper_labels(axes, figure, x, y, points.get("short_title") or points["title"]) \
        if small else 0
    _save(plt, figure, path)
    return Drawn(labelled, titled, sublabelled)


# Sub-themes labelled per theme in a picture, at most: its largest. A picture is read whole;
# the page, zoomed into a theme, names every one of them.
SUBTHEME_LABELS = 4


def _sublabels(result: dict, x: np.ndarray, y: np.ndarray
               ) -> list[tuple[str, list[tuple[float, float]]]]:
    """The sub-themes' names with their places (their own points, most central first): the
    SUBTHEME_LABELS largest of each theme, largest first; none named as its theme is."""
    subs = np.asarray(result["points"].get("subtheme") or [-1] * len(x), dtype=int)
    theme_names = {t["theme"]: t["name"].casefold() for t in result["themes"]}
    ordered = sorted(result.get("subthemes") or [], key=lambda s: -s["papers"])
    shown: dict[int, int] = {}
    out = []
    for sub in ordered:
        if sub["name"].casefold() == theme_names.get(sub["theme"]) or \
                shown.get(sub["theme"], 0) >= SUBTHEME_LABELS:
            continue
        shown[sub["theme"]] = shown.get(sub["theme"], 0) + 1
        mine = subs == sub["subtheme"]
        out.append((sub["name"], _places(x[mine], y[mine], (sub["x"], sub["y"]))))
    return out


def _paper_labels(axes, figure, x: np.ndarray, y: np.ndarray, titles: Sequence[str]) -> int:
    """Each paper's short title beside its point, where it overlaps no label and no other
    point (right, left, above or below it); a title with no such place is left out. How many
    were labelled."""
    renderer = figure.canvas.get_renderer()
    inside = axes.get_window_extent(renderer)
    taken = [text.get_window_extent(renderer) for text in axes.texts]
    dot_boxes = _dot_boxes(axes, np.column_stack([x, y]))
    done = 0
    for i, title in enumerate(titles):
        for offset, ha, va in (((7, 0), "left", "center"), ((-7, 0), "right", "center"),
                               ((0, 7), "center", "bottom"), ((0, -7), "center", "top")):
            label = axes.annotate(_plain(title), (x[i], y[i]), xytext=offset,
                                  textcoords="offset points", ha=ha, va=va, fontsize=9,
                                  color="#333")
            box = label.get_window_extent(renderer).padded(2)
            clear = not any(box.overlaps(o) for o in taken) and not any(
                box.overlaps(d) for j, d in enumerate(dot_boxes) if j != i)
            if clear and inside.contains(box.x0, box.y0) and inside.contains(box.x1, box.y1):
                taken.append(box)
                done += 1
                break
            label.remove()
    return done


def _frame(axes, x: np.ndarray, y: np.ndarray, keep: np.ndarray) -> None:
    """The view: the `keep` papers (those in a theme and those highlighted), with a margin,
    filling the room (the aspect kept; the longer side of t-SNE's cloud used to leave a third of
    the picture empty). A paper apart from every theme outside that box is left off the picture
    (the HTML map has it)."""
    low = np.array([x[keep].min(), y[keep].min()]) if len(x) else np.zeros(2)
    high = np.array([x[keep].max(), y[keep].max()]) if len(x) else np.ones(2)
    middle, span = (low + high) / 2, (high - low) * 1.06 + 1e-9
    # The shorter side widened to the room's proportions, so that one unit is as long across
    # as up (matplotlib's own "datalim" adjusting warns that it ignores the limits).
    box = axes.get_position()
    width, height = axes.figure.get_size_inches() * np.array([box.width, box.height])
    room = width / height
    if span[0] / span[1] < room:
        span[0] = span[1] * room
    else:
        span[1] = span[0] / room
    axes.set_xlim(middle[0] - span[0] / 2, middle[0] + span[0] / 2)
    axes.set_ylim(middle[1] - span[1] / 2, middle[1] + span[1] / 2)
    axes.set_aspect("equal", adjustable="box")


def trend_picture(result: dict, path: Path) -> None:
    """`ragqa trends --json`'s object: the topic's papers per year (bars) and their share of
    the collection's papers of that year (line)."""
    plt, figure = _figure()
    axes = figure.add_axes((0.07, 0.1, 0.86, 0.78))
    years = [row["year"] for row in result["years"]]
    counts = [row["papers"] for row in result["years"]]
    shares = _percents(result["years"])
    axes.bar(years, counts, color="#4e79a7", label=_plain(f"papers on “{result['topic']}”"))
    axes.set_ylabel("papers on the topic", fontsize=12)
    axes.set_xlabel("year", fontsize=12)
    axes.tick_params(labelsize=11)
    step = -(-len(years) // 16)  # at most 16 year labels: 11 pt years need ~80 px each
    axes.set_xticks(years[::step])
    right = axes.twinx()
    venues = [v for v in result.get("venues", []) if v["papers"]][:VENUE_LINES]
    right.plot(years, shares, color="#555" if venues else "#e15759",
               linestyle="--" if venues else "-", marker="o",
               label="share of the year's papers" + (", all venues" if venues else ""))
    for k, venue in enumerate(venues):
        right.plot(years, _percents(venue["years"]),
                   color=COLOURS[(k + 1) % len(COLOURS)], marker=".",
                   label=_plain(f"{venue['venue'] or '(no venue)'} ({venue['papers']})"))
    right.set_ylabel("% of the year's papers (of the collection, or of the venue)" if venues
                     else "% of the collection's papers that year", fontsize=12)
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


def _percents(years: Sequence[dict]) -> list[float]:
    """Each year's share in %; a year without papers (share null) is a gap in the line (NaN),
    not 0 %."""
    return [np.nan if row["share"] is None else 100 * row["share"] for row in years]
