"""`ragqa map --out map.html`: one self-contained file (the data, the page's map.js and its
style inline; nothing fetched, works offline) that pans, zooms, shows a paper's title on hover,
marks the titles a search box matches, and the papers of `--highlight QUESTION`."""

from __future__ import annotations

import html
import json
from pathlib import Path

WEB = Path(__file__).resolve().parent / "web" / "static"

_STYLE = """
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; display: flex; flex-direction: column; height: 100vh; }
header { padding: .5rem 1rem; display: flex; gap: 1rem; align-items: center; flex-wrap: wrap; }
h1 { font-size: 1.1rem; margin: 0; }
.muted { opacity: .7; }
#stage { position: relative; flex: 1; min-height: 300px; }
.map-canvas { display: block; touch-action: none; cursor: crosshair; }
.map-tip { position: absolute; max-width: 250px; background: Canvas; color: CanvasText;
  border: 1px solid #8888; padding: .3rem .5rem; font-size: .85rem; pointer-events: none; }
#legend { display: flex; flex-wrap: wrap; gap: .25rem 1rem; padding: .25rem 1rem;
  font-size: .85rem; margin: 0; list-style: none; }
#legend .swatch { display: inline-block; width: .8rem; height: .8rem; margin-right: .3rem;
  vertical-align: middle; }
#legend button { background: none; border: 0; padding: 0 .2rem; font: inherit; color: inherit;
  cursor: pointer; text-align: left; }
#legend button:hover, #legend button:focus-visible { text-decoration: underline; }
#paper { padding: .5rem 1rem; border-top: 1px solid #8886; min-height: 2.5rem; }
"""

_GLUE = """
const data = JSON.parse(document.getElementById("map-data").textContent);
const paper = document.getElementById("paper");
const map = new PaperMap(document.getElementById("stage"), data, { onOpen: (id, i) => {
  const p = data.points;
  paper.replaceChildren();
  const title = document.createElement(p.url && p.url[i] ? "a" : "strong");
  title.textContent = p.title[i];
  if (p.url && p.url[i] && /^https?:/.test(p.url[i])) { title.href = p.url[i]; }
  const meta = document.createElement("div");
  meta.className = "muted";
  meta.textContent = [p.venue[i], p.year[i], map.themeName(i), id]
    .filter(Boolean).join(" · ");
  paper.append(title, meta);
}});
window.paperMap = map;
if (data.highlight) map.setHighlight(data.highlight.paper_ids);
map.buildLegend(document.getElementById("legend"));
const info = document.getElementById("found");
document.getElementById("find").addEventListener("input", (e) => {
  const n = map.search(e.target.value);
  info.textContent = e.target.value.trim() ? `${n} titles match` : "";
});
document.getElementById("zoom-in").onclick = () => map.zoom(1.5);
document.getElementById("zoom-out").onclick = () => map.zoom(1 / 1.5);
document.getElementById("zoom-reset").onclick = () => map.reset();
"""


def _script_json(value: dict) -> str:
    """JSON safe inside a <script> element: no "</" can close it, no "<!--" open a comment."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace(
        "<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def standalone_html(result: dict) -> str:
    """The page for `ragqa map --json`'s object (with its points)."""
    title = f"Map of {result['collection']}: {result['papers']:,} papers"
    highlight = result.get("highlight")
    marked = (f"{len(highlight['paper_ids'])} papers for “{highlight['question']}” ringed"
              if highlight else "")
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{_STYLE}</style>
</head>
<body>
<header>
  <h1>{html.escape(title)}</h1>
  <span class="muted">{len(result['themes'])} themes · {html.escape(result['method'])}</span>
  <label>Find <input id="find" type="search" placeholder="words of a title"></label>
  <span id="found" class="muted" aria-live="polite"></span>
  <button id="zoom-in" type="button" aria-label="Zoom in">+</button>
  <button id="zoom-out" type="button" aria-label="Zoom out">−</button>
  <button id="zoom-reset" type="button">Reset</button>
  <span id="marked">{html.escape(marked)}</span>
</header>
<ul id="legend" aria-label="Themes"></ul>
<div id="stage"></div>
<div id="paper" class="muted" aria-live="polite">Hover over a point for its title; click it
for its venue, year and link. Drag to pan, scroll to zoom.</div>
<script type="application/json" id="map-data">{_script_json(result)}</script>
<script>{(WEB / "map.js").read_text(encoding="utf-8")}</script>
<script>{_GLUE}</script>
</body>
</html>
"""
