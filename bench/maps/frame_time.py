"""How smooth the map is in Chromium: the time to draw one frame while zooming and panning, and
the time a hover takes to find the point under the pointer, on a map written by
`ragqa map --out FILE.html` (the web page's Map view draws with the same map.js).

    ragqa map -c scale --out /tmp/scale-map.html          # RAGQA_HOME holding the collection
    python bench/maps/frame_time.py /tmp/scale-map.html [--json]

Headless Chromium draws on the CPU (no GPU here): a desktop browser is faster, not slower.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.test_web import _new_browser  # noqa: E402 - the tests' Chromium, offline flags

MEASURE = """
const m = window.paperMap;
const frames = [];
const time = (step) => {
  const t = performance.now(); step(); m.draw(); return performance.now() - t;
};
for (let i = 0; i < 30; i++) frames.push(time(() => m.zoom(1.05)));
for (let i = 0; i < 30; i++) frames.push(time(() => { m.offsetX += 7; m.offsetY -= 5; }));
m.reset();
for (let i = 0; i < 20; i++) frames.push(time(() => m.search(i % 2 ? "learning" : "")));
const hovers = [];
for (let i = 0; i < 300; i++) {
  const x = (i * 7919) % m.width, y = (i * 104729) % m.height;
  const t = performance.now(); m.nearest(x, y); hovers.push(performance.now() - t);
}
return {points: m.n, frames, hovers, width: m.width, height: m.height};
"""


# The same zoom and pan driven by requestAnimationFrame: the interval between frames includes
# what the JavaScript time leaves out (rasterising the canvas, compositing).
ANIMATE = """
const done = arguments[arguments.length - 1];
const m = window.paperMap;
m.reset();
const stamps = [];
let i = 0;
function step(t) {
  stamps.push(t);
  if (i < 60) m.zoom(1.03); else if (i < 120) { m.offsetX += 6; m.offsetY -= 4; }
  m.draw();
  i += 1;
  if (i < 121) requestAnimationFrame(step);
  else done(stamps.slice(1).map((s, k) => s - stamps[k]));
}
requestAnimationFrame(step);
"""


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("html", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    driver = _new_browser()
    try:
        driver.get(args.html.resolve().as_uri())
        driver.implicitly_wait(0)
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(driver, 120).until(lambda d: d.execute_script("return !!window.paperMap"))
        load = driver.execute_script(
            "const t = performance.getEntriesByType('navigation')[0];"
            "return t ? t.loadEventEnd - t.startTime : null;")
        got = driver.execute_script(MEASURE)
        driver.set_script_timeout(120)
        intervals = driver.execute_async_script(ANIMATE)
    finally:
        driver.quit()
    result = {"points": got["points"], "canvas": [got["width"], got["height"]],
              "page_load_ms": round(load or 0, 1),
              "frame_ms_median": round(statistics.median(got["frames"]), 2),
              "frame_ms_p95": round(percentile(got["frames"], 0.95), 2),
              "frame_interval_ms_median": round(statistics.median(intervals), 2),
              "frame_interval_ms_p95": round(percentile(intervals, 0.95), 2),
              "hover_ms_median": round(statistics.median(got["hovers"]), 3),
              "hover_ms_p95": round(percentile(got["hovers"], 0.95), 3)}
    print(json.dumps(result) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
