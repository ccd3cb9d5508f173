"""Theme names written by an LLM, when one is configured (issue 48: names a reader accepts).

The offline namer names a theme after the research field nearest its papers (maps.fields), a
sub-theme after its most telling phrase; neither reads what the titles share the way a reader
does, and a field near many themes can name one it does not fit. An LLM reads
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
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragqa.answering.messages import message
from ragqa.answering.summarize import theme_name_of
from ragqa.errors import LLMError
from ragqa.prompts import Prompt, load_prompt

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
    groups = [*result["themes"], *result["subthemes"]]
    path = folder / (f"names-{result['state'][:32]}-"
                     f"{_key(llm.description, prompt.template, groups)}.json")
    names = _read(path, len(groups))
    failure = ""
    if names is None:
        names, failure = _ask(result, llm, prompt, say)
        if not failure:
            _write(path, names)
    names = distinct(result, names)
    count = len(result["themes"])
    themes = _renamed(result["themes"], names[:count])
    subthemes = _renamed(result["subthemes"], names[count:])
    written = sum(bool(n) for n in names)
    naming = {"mode": "llm" if written else "offline", "model": llm.description,
              "named": written, "kept": len(groups) - written,
              "notice": message("notice.map_names_failed", reason=failure) if failure else ""}
    return {**result, "themes": themes, "subthemes": subthemes, "naming": naming}


def offline_naming(result: dict) -> dict:
    """`naming` of a map (`maps.as_json`'s dict) named without an LLM: a notice when its
    themes are named from phrases because the research fields could not be embedded."""
    by_phrases = result.get("named_by") == "phrases" and bool(result.get("themes"))
    return {"mode": "offline", "model": "", "named": 0, "kept": 0,
            "notice": message("notice.map_named_by_phrases") if by_phrases else ""}


def _ask(result: dict, llm: LLM, prompt: Prompt, say: Progress) -> tuple[list[str], str]:
    """A name (or "" to keep the offline one) for each theme, then each sub-theme, and why the
    LLM failed ("" when it did not)."""
    points = result["points"]
    groups = [("theme", t) for t in result["themes"]] + \
        [("subtheme", s) for s in result["subthemes"]]
    names: list[str] = []
    for field, group in groups:
        say(f"Naming the themes with {llm.description}: {len(names)} of {len(groups)}")
        titles = _titles(points, field, group[field], (group["x"], group["y"]))
        try:
            reply = llm.complete(prompt.fill(titles="\n".join(f"- {t}" for t in titles))).text
        except LLMError as exc:
            return [*names, *[""] * (len(groups) - len(names))], \
                f"{exc} ({len(groups) - len(names)} of {len(groups)} names kept offline)"
        names.append(usable_name(name_in(reply), titles))
    return names, ""


def name_in(reply: str) -> str:
    """The name in a model's reply: its last line that is not a lead-in ("Sure! Here is the
    name:"), without numbering, quotes, Markdown or a final full stop."""
    lines = [line for line in reply.splitlines() if line.strip()
             and not line.rstrip().endswith(":")]
    name = theme_name_of(lines[-1]) if lines else ""
    name = _NUMBERING.sub("", name).strip(" \"'‘’“”*_`")
    return name[:-1] if name.endswith(".") and not name.endswith("..") else name


_NUMBERING = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")
# Replies that are no name, whatever the checks of length let through.
_NO_NAME = frozenset({"none", "n/a", "na", "unknown", "name", "theme", "untitled", "misc",
                      "miscellaneous", "various", "other", "others"})


def usable_name(name: str, titles: Sequence[str] = ()) -> str:
    """`name` when it reads as a map label and is not one paper's own name (a title, or its
    name before the colon: "CULTURE-MT"), else "" (keep the offline name)."""
    words = name.split()
    papers = {part.strip().casefold() for title in titles
              for part in (title, title.partition(":")[0])}
    if not 1 <= len(words) <= NAME_WORDS or len(name) > NAME_CHARACTERS \
            or any(c in name for c in "<>{}[]|") or name.casefold() in papers \
            or name.casefold().strip("!?. ") in _NO_NAME:
        return ""
    return name


def distinct(result: dict, names: Sequence[str]) -> list[str]:
    """`names` less those that would repeat a name of the map: a sibling's (among the themes,
    or a theme's sub-themes, whoever named it) or, for a sub-theme, its theme's. Each such name
    keeps the offline one (which the offline namer keeps distinct)."""
    count = len(result["themes"])
    groups = [*result["themes"], *result["subthemes"]]
    final = [name or group["name"] for name, group in zip(names, groups, strict=True)]
    out = list(names)
    sets = [list(range(count))] + [
        [count + j for j, s in enumerate(result["subthemes"]) if s["theme"] == t["theme"]]
        for t in result["themes"]]
    for members in sets:
        parent = None
        if members and members[0] >= count:
            parent = final[result["subthemes"][members[0] - count]["theme"]].casefold()
        seen: set[str] = set()
        for i in sorted(members, key=lambda i: bool(out[i])):  # offline names claim first
            key = final[i].casefold()
            if out[i] and (key in seen or key == parent):
                out[i], final[i] = "", groups[i]["name"]
                key = final[i].casefold()
            seen.add(key)
    return out


def _titles(points: dict, field: str, label: int, anchor: tuple[float, float]) -> list[str]:
    """NAMED_TITLES titles of a theme, spread from its label's place (the middle of its region)
    out to its edge."""
    members = np.flatnonzero(np.asarray(points[field]) == label)
    x = np.asarray(points["x"])[members] - anchor[0]
    y = np.asarray(points["y"])[members] - anchor[1]
    order = members[np.argsort(x * x + y * y, kind="stable")]
    picks = np.unique(np.linspace(0, len(order) - 1, min(NAMED_TITLES, len(order))).astype(int))
    # a title is data: it cannot close the prompt's <titles> block
    return [" ".join(str(points["title"][i]).replace("<", "‹").replace(">", "›").split()
                     )[:TITLE_CHARACTERS] for i in order[picks]]


def _renamed(groups: Sequence[dict], names: Sequence[str]) -> list[dict]:
    """The groups with the LLM's names; a group it gave none keeps the offline one."""
    return [{**group, "name": name or group["name"]}
            for group, name in zip(groups, names, strict=True)]


def _key(model: str, template: str, groups: Sequence[dict]) -> str:
    """The names' file key: the model, the prompt and the groups named (their sizes, places and
    offline names: a map made otherwise for the same state is named again)."""
    made = json.dumps([[g["name"], g["papers"], g["x"], g["y"]] for g in groups])
    return hashlib.sha256(f"{CACHE_VERSION}\0{model}\0{template}\0{made}".encode()
                          ).hexdigest()[:16]


def _read(path: Path, count: int) -> list[str] | None:
    """The kept names, or None when there are none (or not one per group)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    names = data.get("names") if isinstance(data, dict) else None
    if not isinstance(names, list) or len(names) != count \
            or not all(isinstance(n, str) for n in names):
        return None
    return names


def _write(path: Path, names: list[str]) -> None:
    """Atomically (a reader sees all the names or none); the names of states whose map the
    cache no longer keeps go."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.parent / f".names-{os.getpid()}-{time.monotonic_ns()}.json"
    temporary.write_text(json.dumps({"names": names}, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, path)
    kept = {m.name[len("map-"):-len(".npz")] for m in path.parent.glob("map-*.npz")}
    for old in path.parent.glob("names-*.json"):
        if old.name.split("-")[1] not in kept and old != path:
            old.unlink(missing_ok=True)
