"""Theme names written by an LLM, when one is configured (issue 48: names a reader accepts).

The offline namer names a theme after its most telling phrase, which a broad region of several
subjects does not have ("Reinforcement learning" over bandits and active learning). An LLM reads
NAMED_TITLES titles of the theme, from the middle of its region to its edge, and names what they
share, as datamapplot and Nomic Atlas label their maps. Each reply is checked: a name of at most
NAME_WORDS words, none twice among siblings; a reply that is no name keeps that theme's offline
name. An LLM that fails (an error, a timeout) leaves the offline names, with a notice: the map
is drawn all the same.

The names are kept beside the map (maps/ of the collection's local folder), one file per state
of the collection and per model and prompt, so a map is named once.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragqa.answering.messages import message
from ragqa.answering.summarize import theme_name_of
from ragqa.errors import LLMError
from ragqa.prompts import load_prompt

if TYPE_CHECKING:
    from ragqa.config import Settings
    from ragqa.models import LLM

# Titles read per theme: enough for a region of several subjects to show them all, few enough
# that a small local model reads them in seconds (20 titles are ~400 tokens). Chosen, not fitted.
NAMED_TITLES = 20
# A reply of more words than this is no name (a sentence, an explanation).
NAME_WORDS = 8
NAME_CHARACTERS = 80
TITLE_CHARACTERS = 200  # a title is cut here in the prompt (a title is data, not a prompt)
CACHE_VERSION = 1

Progress = Callable[[str], None]


def llm_named(result: dict, llm: LLM, settings: Settings, folder: Path,
              progress: Progress | None = None) -> dict:
    """The map (`maps.as_json`'s dict) with its themes and sub-themes named by `llm`, and how
    they were named in `naming`: {"mode": "llm" or "offline", "model", "named", "kept",
    "notice"}."""
    say = progress or (lambda text: None)
    prompt = load_prompt("map_theme_name", settings)
    path = folder / f"names-{result['state'][:32]}-{_key(llm.description, prompt.template)}.json"
    named = _read(path)
    failure = ""
    if named is None:
        named, failure = _ask(result, llm, prompt, say)
        if not failure:
            _write(path, named, result["state"])
    themes = _renamed(result["themes"], named["themes"])
    subthemes = _renamed(result["subthemes"], named["subthemes"])
    written = sum(bool(n) for n in [*named["themes"], *named["subthemes"]])
    total = len(themes) + len(subthemes)
    naming = {"mode": "llm" if written else "offline", "model": llm.description,
              "named": written, "kept": total - written,
              "notice": message("notice.map_names_failed", reason=failure) if failure else ""}
    return {**result, "themes": themes, "subthemes": subthemes, "naming": naming}


def offline_naming() -> dict:
    """`naming` of a map named without an LLM."""
    return {"mode": "offline", "model": "", "named": 0, "kept": 0, "notice": ""}


def _ask(result: dict, llm: LLM, prompt, say: Progress) -> tuple[dict, str]:  # noqa: ANN001
    """A name (or "" to keep the offline one) for each theme and sub-theme, and why the LLM
    failed ("" when it did not). Siblings (the themes; a theme's sub-themes) never share one."""
    points = result["points"]
    groups = [("theme", t) for t in result["themes"]] + \
        [("subtheme", s) for s in result["subthemes"]]
    names: list[str] = []
    taken: dict[int | None, set[str]] = {}
    failure = ""
    for field, group in groups:
        say(f"Naming the themes with {llm.description}: {len(names)} of {len(groups)}")
        siblings = taken.setdefault(group["theme"] if field == "subtheme" else None, set())
        titles = _titles(points, field, group[field], (group["x"], group["y"]))
        try:
            reply = llm.complete(prompt.fill(titles="\n".join(f"- {t}" for t in titles))).text
        except LLMError as exc:
            failure = f"{exc} ({len(groups) - len(names)} of {len(groups)} names kept offline)"
            break
        name = usable_name(theme_name_of(reply), siblings, titles)
        siblings.add(name.casefold())
        names.append(name)
    names += [""] * (len(groups) - len(names))
    count = len(result["themes"])
    return {"themes": names[:count], "subthemes": names[count:]}, failure


def usable_name(name: str, siblings: set[str], titles: Sequence[str] = ()) -> str:
    """`name` when it reads as a map label, is not taken by a sibling and is not one paper's
    own name (a title, or its name before the colon: "CULTURE-MT"), else "" (keep the offline
    name)."""
    words = name.split()
    papers = {part.strip().casefold() for title in titles
              for part in (title, title.partition(":")[0])}
    if not 1 <= len(words) <= NAME_WORDS or len(name) > NAME_CHARACTERS \
            or any(c in name for c in "<>{}[]|") or name.casefold() in siblings \
            or name.casefold() in papers:
        return ""
    return name


def _titles(points: dict, field: str, label: int, anchor: tuple[float, float]) -> list[str]:
    """NAMED_TITLES titles of a theme, spread from its label's place (the middle of its region)
    out to its edge."""
    members = np.flatnonzero(np.asarray(points[field]) == label)
    x = np.asarray(points["x"])[members] - anchor[0]
    y = np.asarray(points["y"])[members] - anchor[1]
    order = members[np.argsort(x * x + y * y, kind="stable")]
    picks = np.unique(np.linspace(0, len(order) - 1, min(NAMED_TITLES, len(order))).astype(int))
    return [" ".join(str(points["title"][i]).split())[:TITLE_CHARACTERS] for i in order[picks]]


def _renamed(groups: Sequence[dict], names: Sequence[str]) -> list[dict]:
    """The groups with the LLM's names; a group it gave none keeps the offline one."""
    return [{**group, "name": (names[i] if i < len(names) else "") or group["name"]}
            for i, group in enumerate(groups)]


def _key(model: str, template: str) -> str:
    return hashlib.sha256(f"{CACHE_VERSION}\0{model}\0{template}".encode()).hexdigest()[:16]


def _read(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not all(
            isinstance(data.get(k), list) and all(isinstance(n, str) for n in data[k])
            for k in ("themes", "subthemes")):
        return None
    return data


def _write(path: Path, named: dict, state: str) -> None:
    """Atomically (a reader sees all the names or none); the names of other states of the
    collection go (they name regions that are no more)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.parent / f".names-{os.getpid()}-{time.monotonic_ns()}.json"
    temporary.write_text(json.dumps(named, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, path)
    for old in path.parent.glob("names-*.json"):
        if not old.name.startswith(f"names-{state[:32]}-"):
            old.unlink(missing_ok=True)
