"""The map of a collection (`ragqa map`), a topic over the years (`ragqa trends`) and a
summary's pictures, through the real CLI, the real embedder and Chroma; the HTML map and the web
page's Map view in headless Chromium (tests/test_web.py's browser and server)."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from ragqa.maps.fields import field_names, field_vectors, joined, research_fields
from ragqa.models.encoders import LocalMiniLM

from .conftest import FULL_DUPLEX, Ragqa
from .helpers.ingest import _env
from .helpers.llm_server import Reply
from .test_web import (  # noqa: F401 (fixtures)
    _css,
    _open,
    _post,
    _start_serve,
    _visible,
    _wait,
    browser,
    server,
    web_home,
)

FIELD_NAMES = {field.name for field in research_fields()}
MLCONF = Path(__file__).resolve().parents[2] / "shared" / "data" / "mlconf" / "corpus.jsonl.gz"

# Where screenshots go besides the test's temp folder (set it to look at them after a run).
SHOTS = os.environ.get("RAGQA_TEST_SCREENSHOTS")


def _shot(driver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(SHOTS) / path.name)
    return path


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is no PNG"
    return struct.unpack(">II", header[16:24])


def _map_json(ragqa: Ragqa, *args: str, **env: str) -> dict:
    result = ragqa("map", "--json", *args, **env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and \
        a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]


# ---------------------------------------------------------------- the map's data


def test_the_map_places_every_paper_in_named_themes_and_is_kept(seeded, home):
    first = _map_json(seeded)
    points = first["points"]
    assert first["papers"] == 29 == len(points["paper_id"]) == len(points["x"])
    assert len(set(points["paper_id"])) == 29
    assert all(0 <= v <= 1 for v in points["x"] + points["y"])
    assert first["method"].startswith("openTSNE")
    assert 2 <= len(first["themes"]) <= 10
    assert sum(t["papers"] for t in first["themes"]) == 29
    for theme in first["themes"]:
        # Names a reader understands: words, no truncated phrase, no stray capitals.
        assert re.fullmatch(r"[A-Z][\w\- ,]+", theme["name"]), theme["name"]
        assert not theme["name"].endswith((" and", " of", " for", " the", ","))
    assert {t for t in points["theme"]} == set(range(len(first["themes"])))
    # Themes are named after research fields: the seeds' full-duplex dialogue papers are a
    # theme of dialogue, not of a phrase one of them repeats.
    assert any("Dialogue" in t["name"] for t in first["themes"])
    assert all(t["name"] in FIELD_NAMES or ", " in t["name"] or " and " in t["name"]
               for t in first["themes"])
    # Computed once per state of the collection: the second call reads it back.
    second = _map_json(seeded)
    assert second["seconds"] == 0 and second["points"] == points
    assert list((home / "indexes" / "local" / "default" / "maps").glob("map-*.npz"))


def test_a_paper_added_later_is_placed_among_its_neighbours(seeded, tmp_path):
    before = _map_json(seeded)
    paper = {"id": "late-speech-0001", "title": "Full-duplex spoken dialogue with "
             "simultaneous listening and speaking",
             "abstract": "We build a full-duplex speech dialogue model that listens while it "
             "speaks, handling interruptions and backchannels in real time.",
             "venue": "ICML", "year": 2026}
    source = tmp_path / "late.jsonl"
    source.write_text(json.dumps(paper) + "\n", encoding="utf-8")
    assert seeded("ingest", str(source), "--quiet").exit_code == 0
    after = _map_json(seeded)
    assert after["papers"] == 30 and after["placed"] == 1
    old = dict(zip(before["points"]["paper_id"], zip(before["points"]["x"],
                                                      before["points"]["y"], strict=True),
                   strict=True))
    new = dict(zip(after["points"]["paper_id"], zip(after["points"]["x"], after["points"]["y"],
                                                    strict=True), strict=True))
    assert all(new[pid] == xy for pid, xy in old.items()), "the laid-out papers stayed put"
    # Among the full-duplex speech papers: nearer to them than the average paper is.
    speech = [new[pid] for pid in _list_ids(seeded, FULL_DUPLEX)]
    placed = np.array(new["late-speech-0001"])
    to_speech = np.mean([np.linalg.norm(placed - np.array(xy)) for xy in speech])
    to_all = np.mean([np.linalg.norm(placed - np.array(xy)) for xy in old.values()])
    assert to_speech < to_all


def _list_ids(ragqa: Ragqa, question: str) -> list[str]:
    """The one-tier list (its core, and its tail from WHOLE_LIST_FLOOR): what a map marks."""
    from ragqa.retrieval.fitted import WHOLE_LIST_FLOOR

    result = ragqa("search", question, "--json")
    assert result.exit_code == 0, result.output
    return [r["paper_id"] for r in json.loads(result.stdout)["results"]
            if r["tier"] == "core" or r["score"] >= WHOLE_LIST_FLOOR]


def test_highlight_marks_the_papers_the_list_question_returns(seeded):
    result = _map_json(seeded, "--highlight", FULL_DUPLEX)
    assert result["highlight"]["question"] == FULL_DUPLEX
    assert result["highlight"]["paper_ids"] == _list_ids(seeded, FULL_DUPLEX)
    assert len(result["highlight"]["paper_ids"]) >= 2


def test_the_map_uses_the_english_vectors_of_a_multilingual_collection(seeded, home):
    """The seeds' collection keeps multilingual vectors too (their Chinese header): the map is
    laid out from the English ones, the ones every paper has."""
    from ragqa.app import open_for_query, settings_for
    from ragqa.maps.layout import fit_layout

    assert seeded("ingest", "--multilingual", "--quiet").exit_code == 0
    result = _map_json(seeded)
    settings, name = settings_for(None)
    retriever = open_for_query(settings, name, quiet=True)
    assert retriever.store.multilingual_embedder()
    english = retriever.store.paper_vectors(result["points"]["paper_id"])
    assert english.shape[1] == 384  # MiniLM's, not e5's
    expected = fit_layout(english / np.linalg.norm(english, axis=1, keepdims=True))
    got = np.column_stack([result["points"]["x"], result["points"]["y"]])
    assert np.allclose(got, expected, atol=1e-4)


# ---------------------------------------------------------------- small and empty collections


@pytest.mark.parametrize("count", [1, 2])
def test_a_collection_of_one_or_two_papers_gives_a_picture(ragqa, tmp_path, count):
    source = tmp_path / "few.jsonl"
    source.write_text("".join(json.dumps({
        "id": f"few-{i}", "title": title, "abstract": abstract, "year": 2020 + i})
        + "\n" for i, (title, abstract) in enumerate([
            ("Drip irrigation schedules for greenhouse tomatoes",
             "Drip irrigation at dawn saves a third of the water with the same yield."),
            ("Graph neural networks for molecule property prediction",
             "Message passing over molecular graphs predicts solubility and toxicity."),
        ][:count])), encoding="utf-8")
    assert ragqa("ingest", str(source), "--quiet").exit_code == 0
    result = _map_json(ragqa)
    assert result["papers"] == count and len(result["themes"]) == 1
    assert result["method"] == ("one paper" if count == 1 else "PCA")
    picture = tmp_path / "few.png"
    assert ragqa("map", "--out", str(picture)).exit_code == 0
    assert _png_size(picture) == (1600, 1000)


def test_an_empty_collection_or_a_wrong_file_type_is_one_clear_line(ragqa, seeded, tmp_path):
    result = seeded("map", "-c", "nothing", "--out", str(tmp_path / "m.png"))
    assert result.exit_code == 2
    assert "holds no papers" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "m.png").exists()
    result = seeded("map", "--out", str(tmp_path / "m.pdf"))
    assert result.exit_code == 2 and ".html, .png or .svg" in result.stderr
    assert not (tmp_path / "m.pdf").exists()


# ---------------------------------------------------------------- pictures and the HTML file


def test_png_and_svg_maps_are_written_for_a_report(seeded, tmp_path):
    png, svg = tmp_path / "map.png", tmp_path / "map.svg"
    assert seeded("map", "--out", str(png), "--highlight", FULL_DUPLEX).exit_code == 0
    assert _png_size(png) == (1600, 1000)
    assert seeded("map", "--out", str(svg)).exit_code == 0
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    shown = _map_json(seeded)
    names = [t["name"] for t in shown["themes"]]
    # matplotlib writes text as glyphs; each label is named in a comment beside them
    assert sum(name in text for name in names) >= 1
    assert not list(tmp_path.glob(".*part"))
    # A 29-paper map names every theme and most papers, by short title ("Moshi: ..." is Moshi).
    from ragqa.faces.pictures import map_picture

    drawn = map_picture(shown, tmp_path / "again.png")
    assert drawn.themes == names and drawn.papers >= 25 and drawn.subthemes == []
    assert all(len(t) <= 29 for t in shown["points"]["short_title"])
    assert any(t.startswith("Moshi") for t in shown["points"]["short_title"])


def test_the_html_map_is_one_offline_file_with_points_labels_search_and_highlight(
        seeded, tmp_path, browser):  # noqa: F811
    page = tmp_path / "map.html"
    result = seeded("map", "--out", str(page), "--highlight", FULL_DUPLEX)
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")
    # Self-contained: no script, style or image from anywhere else.
    assert not re.search(r"<(?:script|link|img)[^>]+(?:src|href)=", text)
    browser.get(page.as_uri())
    _wait(browser, lambda d: d.execute_script("return !!window.paperMap"))
    state = browser.execute_script(
        "const m = window.paperMap; return {n: m.n, marked: m.highlighted.size, "
        "labels: m.drawnLabels, frames: m.frameTimes.length};")
    assert state["n"] == 29
    assert state["marked"] == len(_list_ids(seeded, FULL_DUPLEX))
    assert state["frames"] >= 1 and state["labels"]
    labels = state["labels"]
    assert not any(_overlap(a, b) for i, a in enumerate(labels) for b in labels[i + 1:])
    # A small map names its papers: most of the 29 by their short titles, none covering a point.
    shown = _map_json(seeded)
    papers = [label for label in labels if label["paper"]]
    assert len(papers) >= 20 and {label["name"] for label in papers} <= set(
        shown["points"]["short_title"])
    dots = browser.execute_script(
        "const m = window.paperMap; return [...Array(m.n).keys()].map((i) => m.toScreen(i));")
    themes = [label for label in labels if not label["paper"]]
    assert themes and not any(label["x"] < x < label["x"] + label["w"]
                              and label["y"] < y < label["y"] + label["h"]
                              for label in themes for x, y in dots)
    # The search box marks the titles holding its words.
    box = _css(browser, "#find")[0]
    box.send_keys("Voice")
    _wait(browser, lambda d: "titles match" in _css(d, "#found")[0].text)
    matched = browser.execute_script("return window.paperMap.matched.size")
    titles = _map_json(seeded)["points"]["title"]
    assert matched == sum("voice" in t.lower() for t in titles) > 0
    _shot(browser, tmp_path, "html-map-seeds")
    # Hover names the paper under the pointer; a click shows it below the map.
    x, y = browser.execute_script(
        "const m = window.paperMap; const [x, y] = m.toScreen(0); return [x, y];")
    from selenium.webdriver.common.action_chains import ActionChains

    canvas = _css(browser, "canvas")[0]
    size = canvas.size
    ActionChains(browser).move_to_element_with_offset(
        canvas, int(x - size["width"] / 2), int(y - size["height"] / 2)).click().perform()
    _wait(browser, lambda d: titles[0][:20] in _css(d, "#paper")[0].text)


# ---------------------------------------------------------------- trends


def _years_fixture(path: Path) -> dict[int, int]:
    """Papers of 2019-2023: speech recognition grows, image segmentation stays; three of the
    speech papers carry no year."""
    speech = ["end-to-end speech recognition with a conformer encoder",
              "streaming automatic speech recognition for low-latency transcription",
              "self-supervised speech representations improve low-resource recognition",
              "speech recognition of accented English with data augmentation",
              "multilingual speech recognition across one hundred languages"]
    vision = ["semantic image segmentation with a lightweight decoder",
              "instance segmentation of cells in microscopy images",
              "panoptic segmentation of street scenes for autonomous driving"]
    rows, per_year = [], {}
    for year, grow in zip(range(2019, 2024), (1, 1, 2, 3, 5), strict=True):
        for i in range(grow):
            rows.append({"id": f"s-{year}-{i}", "year": year, "title": speech[i].capitalize(),
                         "abstract": f"We study {speech[i]}. Our model lowers the word error "
                         f"rate of automatic speech recognition on benchmark audio."})
        for i in range(3):
            rows.append({"id": f"v-{year}-{i}", "year": year, "title": vision[i].capitalize(),
                         "abstract": f"We study {vision[i]}. Our network labels every pixel "
                         f"of the image with its segment."})
        per_year[year] = grow + 3
    for i in range(3):
        rows.append({"id": f"s-none-{i}", "title": speech[i].capitalize() + " revisited",
                     "abstract": f"We revisit {speech[i]} for automatic speech recognition "
                     "of audio, lowering the word error rate."})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return per_year


def test_trends_count_a_topics_papers_per_year_against_the_collection(ragqa, tmp_path):
    per_year = _years_fixture(tmp_path / "years.jsonl")
    assert ragqa("ingest", str(tmp_path / "years.jsonl"), "--quiet").exit_code == 0
    result = ragqa("trends", "speech recognition", "--json")
    assert result.exit_code == 0, result.output
    trend = json.loads(result.stdout)
    assert [row["year"] for row in trend["years"]] == list(range(2019, 2024))
    assert {row["year"]: row["collection"] for row in trend["years"]} == per_year
    assert trend["without_year"] == {"papers": trend["without_year"]["papers"],
                                     "collection": 3}
    found = {r["paper_id"] for r in trend["results"]}
    assert not any(pid.startswith("v-") for pid in found), "no segmentation paper"
    speech = {f"s-{y}-{i}" for y, n in zip(range(2019, 2024), (1, 1, 2, 3, 5), strict=True)
              for i in range(n)}
    assert len(found & speech) >= 0.8 * len(speech)
    counts = [row["papers"] for row in trend["years"]]
    assert counts[-1] > counts[0], "the topic grows"
    assert sum(counts) + trend["without_year"]["papers"] == trend["papers"] == len(found)
    picture = tmp_path / "trend.svg"
    text = ragqa("trends", "speech recognition", "--out", str(picture))
    assert text.exit_code == 0 and "2023" in text.stdout and "Without a year" in text.stdout
    assert "<svg" in picture.read_text(encoding="utf-8")


def test_a_year_without_papers_is_a_gap_not_zero(ragqa, tmp_path):
    """The collection holds no paper of 2021: that year's share is unknown (null, "—", no bar,
    a gap in the line), not 0 %, while the topic's papers of the other years count as ever."""
    _years_fixture(tmp_path / "all.jsonl")
    kept = [line for line in (tmp_path / "all.jsonl").read_text(encoding="utf-8").splitlines()
            if json.loads(line).get("year") != 2021]
    (tmp_path / "years.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    assert ragqa("ingest", str(tmp_path / "years.jsonl"), "--quiet").exit_code == 0
    trend = json.loads(ragqa("trends", "speech recognition", "--json").stdout)
    rows = {row["year"]: row for row in trend["years"]}
    assert sorted(rows) == list(range(2019, 2024))
    assert rows[2021] == {"year": 2021, "papers": 0, "collection": 0, "share": None}
    assert all(rows[y]["share"] > 0 for y in (2019, 2020, 2022, 2023))
    picture = tmp_path / "trend.png"
    text = ragqa("trends", "speech recognition", "--out", str(picture))
    assert text.exit_code == 0, text.output
    line = next(row for row in text.stdout.splitlines() if "2021" in row)
    assert "—" in line and "0.0%" not in line
    assert _png_size(picture) == (1600, 1000)


def test_trends_on_a_collection_of_one_year_say_so(seeded, tmp_path):
    result = seeded("trends", "speech")
    assert result.exit_code == 2
    assert "one year (2026)" in result.stderr and "3 or more years" in result.stderr
    result = seeded("trends", "speech", "--out", str(tmp_path / "t.gif"))
    assert result.exit_code == 2 and ".png or .svg" in result.stderr


# ---------------------------------------------------------------- summaries with pictures


def test_summarize_out_writes_the_topics_map_beside_the_markdown(ragqa, tmp_path):
    _years_fixture(tmp_path / "years.jsonl")
    assert ragqa("ingest", str(tmp_path / "years.jsonl"), "--quiet").exit_code == 0
    out = tmp_path / "report" / "speech.md"
    out.parent.mkdir()
    result = ragqa("summarize", "speech recognition", "--out", str(out))
    assert result.exit_code == 0, result.output
    markdown = out.read_text(encoding="utf-8")
    assert "![" in markdown and "(speech.map.png)" in markdown
    assert "(speech.trend.png)" in markdown
    assert _png_size(out.parent / "speech.map.png") == (1600, 1000)
    assert _png_size(out.parent / "speech.trend.png") == (1600, 1000)
    summary = json.loads(ragqa("summarize", "speech recognition", "--json").stdout)
    assert summary["trend"]["years"][-1]["year"] == 2023
    shown = ragqa("summarize", "speech recognition").stdout  # the terminal gets the table
    assert re.search(r"2023\W+\d+\W+8\W", shown) and "Without a year" in shown


# ---------------------------------------------------------------- the web page's Map view


def test_the_map_view_draws_the_collection_highlights_a_list_and_opens_papers(
        server, browser, tmp_path):  # noqa: F811 (tests/test_web.py's fixtures)
    from selenium.webdriver.common.keys import Keys

    _open(browser, server, "ask")
    box = _css(browser, "#question")[0]
    box.send_keys(FULL_DUPLEX)
    box.send_keys(Keys.ENTER)
    _wait(browser, lambda d: d.find_elements("css selector", "#thread .turn .refs-list li"))
    cited = len(_css(browser, "#thread .turn .refs .refs-list li"))
    _css(browser, '.view-tab[data-view="map"]')[0].click()
    _wait(browser, lambda d: d.execute_script("return !!(window.state && state.map) || "
                                              "!!document.querySelector('#map-stage canvas')"))
    _wait(browser, lambda d: "ringed" in _css(d, "#map-info")[0].text)
    view = browser.execute_script(
        "const m = state.map; return {n: m.n, marked: m.highlighted.size, "
        "labels: m.drawnLabels, legend: document.querySelectorAll('#map-legend li').length};")
    health = _post(server.url + "/api/map", {})
    assert view["n"] == health["papers"] == 30
    assert view["marked"] == cited >= 2
    assert view["labels"] and view["legend"] == len(health["themes"])
    _shot(browser, tmp_path, "web-map-view")
    # A click on a point opens the paper panel citations open.
    x, y = browser.execute_script("return state.map.toScreen(0);")
    from selenium.webdriver.common.action_chains import ActionChains

    canvas = _css(browser, "#map-stage canvas")[0]
    size = canvas.size
    ActionChains(browser).move_to_element_with_offset(
        canvas, int(x - size["width"] / 2), int(y - size["height"] / 2)).click().perform()
    _visible(browser, "#panel")
    _wait(browser, lambda d: _css(d, "#panel-title")[0].text
          == health["points"]["title"][0])


def test_the_map_and_trends_over_http_answer_json_errors(server):  # noqa: F811
    import urllib.error

    with pytest.raises(urllib.error.HTTPError) as refused:
        _post(server.url + "/api/trends", {"topic": "speech"})
    assert refused.value.code == 400
    assert "3 or more years" in json.load(refused.value)["error"]
    marked = _post(server.url + "/api/map", {"highlight": FULL_DUPLEX})
    assert len(marked["highlight"]["paper_ids"]) >= 2
    assert marked["naming"]["mode"] == "offline"  # this server has no LLM
    assert _post(server.url + "/api/map", {"llm": "auto"})["naming"]["mode"] == "offline"
    for body, code in (({"llm": "openai"}, 400), ({"llm": "gpt"}, 422)):
        with pytest.raises(urllib.error.HTTPError) as refused:
            _post(server.url + "/api/map", body)
        assert refused.value.code == code and "llm" in json.load(refused.value)["error"]


def test_a_summary_over_several_years_shows_its_trend_in_the_page(ragqa, home, tmp_path,
                                                                  browser):  # noqa: F811
    _years_fixture(tmp_path / "years.jsonl")
    assert ragqa("ingest", str(tmp_path / "years.jsonl"), "--quiet").exit_code == 0
    served = _start_serve(home)
    try:
        _open(browser, served, "summary")
        _css(browser, "#topic")[0].send_keys("speech recognition")
        _css(browser, "#summary-submit")[0].click()
        _visible(browser, "#summary-trend")
        bars = _css(browser, "#summary-trend rect.trend-bar")
        assert len(bars) == 5  # 2019-2023
        caption = _css(browser, "#summary-trend-caption")[0].text
        assert "speech recognition" in caption and "without a year" in caption
        _shot(browser, tmp_path, "web-summary-trend")
        # The Map view's trend box: `ragqa trends` in the page.
        _css(browser, '.view-tab[data-view="map"]')[0].click()
        _css(browser, "#trend-topic")[0].send_keys("speech recognition")
        _css(browser, "#trend-submit")[0].click()
        _visible(browser, "#map-trend")
        assert len(_css(browser, "#map-trend rect.trend-bar")) == 5
        trend = _post(served.url + "/api/trends", {"topic": "speech recognition"})
        assert _css(browser, "#map-trend-caption")[0].text.startswith(
            f"{trend['papers']} papers on “speech recognition”")
    finally:
        served.stop()


def test_a_conference_slice_of_fifteen_years_gets_a_map_and_trends(ragqa, tmp_path):
    """ACML 2010-2024 from ../shared/data/mlconf (814 papers; skipped where the data is
    absent): the map and a topic's papers per year, counted against the file itself."""
    if not MLCONF.is_file():
        pytest.skip(f"no mlconf data at {MLCONF}")
    import gzip
    from collections import Counter

    with gzip.open(MLCONF, "rt", encoding="utf-8") as lines:
        rows = [r for r in map(json.loads, lines) if r.get("venue") == "acml"]
    per_year = Counter(r["year"] for r in rows)
    assert ragqa("ingest", str(MLCONF), "--where", "venue=acml", "-c", "acml",
                 "--quiet").exit_code == 0
    picture = tmp_path / "acml.png"
    result = ragqa("map", "-c", "acml", "--out", str(picture), "--highlight",
                   "Which papers study multi-label classification?")
    assert result.exit_code == 0, result.output
    assert _png_size(picture) == (1600, 1000)
    shown = _map_json(ragqa, "-c", "acml")
    assert shown["papers"] == len(rows) and len(shown["themes"]) >= 3
    # Themes are regions of the map: a paper's nearest points are mostly of its own theme (the
    # summaries' k-means on the vectors gave about 0.7 on such maps, bench/maps/regions.py).
    from ragqa.maps.regions import map_purity

    points = np.column_stack([shown["points"]["x"], shown["points"]["y"]])
    assert map_purity(points, np.array(shown["points"]["theme"])) >= 0.85
    # Every theme is named on the picture, inside its region, no two names overlapping (the
    # labels at the themes' middles left two of six out).
    from ragqa.faces.pictures import map_picture

    drawn = map_picture(shown, tmp_path / "labelled.png")
    assert drawn.themes == [t["name"] for t in shown["themes"]]
    # Papers far from every group are grey, in no theme, and few: each farther from its 10th
    # nearest point than three quarters of the themed papers are from theirs.
    from sklearn.neighbors import NearestNeighbors

    theme = np.array(shown["points"]["theme"])
    assert 0 < shown["apart"] < 0.02 * len(rows)
    reach = NearestNeighbors(n_neighbors=11).fit(points).kneighbors(points)[0][:, -1]
    assert reach[theme == -1].min() > np.percentile(reach[theme != -1], 75)
    assert shown["subthemes"] == [] and set(shown["points"]["subtheme"]) == {-1}
    trend = json.loads(ragqa("trends", "multi-label classification", "-c", "acml",
                             "--json").stdout)
    assert {row["year"]: row["collection"] for row in trend["years"]} == dict(per_year)
    assert 3 <= trend["papers"] < len(rows) / 4
    assert all(row["papers"] <= row["collection"] for row in trend["years"])


def test_two_thousand_papers_get_sub_themes_and_trends_split_by_venue(ragqa, tmp_path,
                                                                       browser):  # noqa: F811
    """ACL 2021-22 and ACML 2010-24 from ../shared/data/mlconf (2,555 papers; skipped where
    the data is absent): a map this large has sub-themes, regions inside their theme's region,
    named when the page is zoomed in; a trend split by venue counts each venue against its own
    papers, a year it has none of a gap."""
    if not MLCONF.is_file():
        pytest.skip(f"no mlconf data at {MLCONF}")
    import gzip
    from collections import Counter

    with gzip.open(MLCONF, "rt", encoding="utf-8") as lines:
        rows = [r for r in map(json.loads, lines) if r.get("venue") in ("acl", "acml")]
    for venue in ("acl", "acml"):
        assert ragqa("ingest", str(MLCONF), "--where", f"venue={venue}", "-c", "both",
                     "--quiet").exit_code == 0
    page = tmp_path / "both.html"
    assert ragqa("map", "-c", "both", "--out", str(page)).exit_code == 0
    shown = _map_json(ragqa, "-c", "both")
    assert shown["papers"] == len(rows) >= 2000
    theme = np.array(shown["points"]["theme"])
    sub = np.array(shown["points"]["subtheme"])
    subthemes = shown["subthemes"]
    assert len(subthemes) > len(shown["themes"])
    for j, inner in enumerate(subthemes):
        members = sub == j
        # a sub-theme's papers are all of its theme, and it is a region of the map
        assert members.sum() > 0 and set(theme[members]) == {inner["theme"]}
        assert re.fullmatch(r"[A-Z][\w\-\s]+", inner["name"]), inner["name"]
    for k in {inner["theme"] for inner in subthemes}:
        names = [inner["name"] for inner in subthemes if inner["theme"] == k]
        assert len(set(names)) == len(names) >= 2  # siblings are named apart
    from ragqa.maps.regions import map_purity

    points = np.column_stack([shown["points"]["x"], shown["points"]["y"]])
    split = theme == subthemes[0]["theme"]
    assert map_purity(points[split], sub[split]) >= 0.8
    # A picture names the themes and, smaller, some of each theme's sub-themes (issue 48: not
    # broad themes only); never a sub-theme named as its theme.
    from ragqa.faces.pictures import SUBTHEME_LABELS, map_picture

    drawn = map_picture(shown, tmp_path / "both.png")
    assert len(drawn.themes) >= len(shown["themes"]) - 1
    theme_of = {inner["name"]: inner["theme"] for inner in subthemes}
    names_of = {t["theme"]: t["name"] for t in shown["themes"]}
    assert len(drawn.subthemes) >= len(shown["themes"])
    for name in drawn.subthemes:
        assert name in theme_of and name != names_of[theme_of[name]]
    per_theme = Counter(theme_of[name] for name in drawn.subthemes)
    assert max(per_theme.values()) <= SUBTHEME_LABELS
    # The page names the themes at full view and a theme's sub-themes once zoomed into it.
    browser.get(page.as_uri())
    _wait(browser, lambda d: d.execute_script("return !!window.paperMap"))
    names = {t["name"] for t in shown["themes"]}
    full = browser.execute_script("return window.paperMap.drawnLabels.map((l) => l.name);")
    assert full and set(full) <= names
    first = subthemes[0]["theme"]
    browser.execute_script(f"window.paperMap.focusTheme({first});")
    _wait(browser, lambda d: set(d.execute_script(
        "return window.paperMap.drawnLabels.map((l) => l.name);")) & {
        inner["name"] for inner in subthemes if inner["theme"] == first})
    assert len(_css(browser, "#legend li")) == len(shown["themes"]) + (shown["apart"] > 0)
    _shot(browser, tmp_path, "html-map-zoomed")
    # Trends split by venue: each venue's papers per year are the file's.
    trend = json.loads(ragqa("trends", "machine translation", "-c", "both", "--by-venue",
                             "--json").stdout)
    assert {v["venue"] for v in trend["venues"]} == {"acl", "acml"}
    for venue in trend["venues"]:
        per_year = Counter(r["year"] for r in rows if r["venue"] == venue["venue"])
        assert {row["year"]: row["collection"] for row in venue["years"]
                if row["collection"]} == dict(per_year)
        assert [row["year"] for row in venue["years"]] == [row["year"] for row in trend["years"]]
        assert venue["papers"] == sum(row["papers"] for row in venue["years"])
    assert sum(v["papers"] for v in trend["venues"]) == trend["papers"]
    acl = next(v for v in trend["venues"] if v["venue"] == "acl")
    assert acl["papers"] > 0 and acl == trend["venues"][0]  # most on the topic first
    # ACL's years without ACL papers are gaps in its line, not 0 %, within ACML's span.
    gaps = [row for row in acl["years"] if row["year"] not in (2021, 2022)]
    assert gaps and all(row["collection"] == 0 and row["share"] is None for row in gaps)
    text = ragqa("trends", "machine translation", "-c", "both", "--by-venue").stdout
    assert "By venue" in text and "acml" in text
    assert ragqa("trends", "machine translation", "-c", "both", "--json").exit_code == 0


def test_a_placed_paper_takes_a_sub_theme_of_its_own_theme():
    """A paper added after the layout, at the border of a theme with sub-themes and one
    without, takes the sub-theme most of its own theme's neighbours have, not none."""
    from ragqa.maps.collection_map import _placed_subthemes

    rng = np.random.default_rng(0)
    left = rng.uniform([0.0, 0.0], [0.5, 1.0], (200, 2))
    right = rng.uniform([0.5, 0.0], [1.0, 1.0], (400, 2))  # more of them: they win a plain vote
    points = np.vstack([left, right, [[0.49, 0.2], [0.51, 0.8]]])
    labels = np.array([0] * 200 + [1] * 400 + [0, 1])
    sub = np.array([0 if y < 0.5 else 1 for _, y in left] + [-1] * 400 + [-1, -1])
    placed = _placed_subthemes(points, labels, sub, list(range(600)), [600, 601])
    assert placed.tolist() == [0, -1]


# ---------------------------------------------------------------- names from research fields

_ABSTRACTS = {
    "rl": ["We train an agent with deep reinforcement learning to maximise reward in Atari games "
           "using a value function and off-policy Q-learning updates.",
           "A policy gradient method for continuous control: the agent's policy is improved from "
           "rewards collected in MuJoCo environments.",
           "Exploration in reinforcement learning: an intrinsic reward helps agents find sparse "
           "rewards in hard Markov decision processes."],
    "mt": ["A neural machine translation model translates German sentences into English with an "
           "attention-based encoder-decoder and improves BLEU.",
           "Low-resource translation between English and Nepali with back-translation of "
           "monolingual text.",
           "We study word order in the decoder of a Transformer translation system across ten "
           "language pairs."],
}


def _groups(*kinds: str) -> tuple[np.ndarray, list[np.ndarray]]:
    texts = [text for kind in kinds for text in _ABSTRACTS[kind]]
    vectors = LocalMiniLM().embed(texts)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors, [np.arange(3 * k, 3 * k + 3) for k in range(len(kinds))]


def test_themes_are_named_after_the_field_nearest_their_papers():
    vectors, groups = _groups("rl", "mt")
    rl, mt = field_names(vectors, groups, field_vectors(LocalMiniLM()))
    assert "reinforcement learning" in rl.lower() and "translation" in mt.lower(), (rl, mt)


def test_two_themes_of_one_field_are_told_apart_by_a_second_field():
    vectors, (rl, mt) = _groups("rl", "mt")
    first, second, third = field_names(vectors, [rl, rl, mt], field_vectors(LocalMiniLM()))
    assert first != second and "translation" in third.lower()
    # The one named second keeps the field and adds another: "X and Y" or "X, Y".
    assert second.startswith(first.split(" and ")[0].split(",")[0])


def test_two_fields_join_into_one_name_as_a_reader_writes_it():
    assert joined("Stochastic optimization", "Gaussian processes") == \
        "Stochastic optimization and Gaussian processes"  # a name keeps its capital
    assert joined("Machine translation", "Multi-armed bandits") == \
        "Machine translation and multi-armed bandits"
    # A comma where a name has its own "and": not "Vision and language and multimodal learning".
    assert joined("Vision and language", "Multimodal learning") == \
        "Vision and language, multimodal learning"
    assert joined("Question answering", None) == "Question answering"


def _stored_naming(home: Path, collection: str) -> str:
    newest = max((home / "indexes" / "local" / collection / "maps").glob("map-*.npz"),
                 key=lambda path: path.stat().st_mtime)
    with np.load(newest) as stored:
        return json.loads(str(stored["meta"]))["named_by"]


def test_fields_a_remote_embedder_cannot_embed_leave_phrase_names_until_it_can(
        ragqa, home, seeds_copy, llm_server, tmp_path):
    env = _env(llm_server)
    assert ragqa("ingest", str(seeds_copy), "--quiet", "-c", "remote", **env).exit_code == 0
    descriptions = {field.description for field in research_fields()}
    llm_server.embed_reply = lambda n, body: Reply(status=400) if descriptions & set(
        body["input"]) else None
    failed = ragqa("map", "-c", "remote", "--json", **env)
    assert failed.exit_code == 0, failed.output
    assert json.loads(failed.output)["named_by"] == "phrases"
    assert "research fields could not be embedded" in json.loads(
        failed.output)["naming"]["notice"]
    assert _stored_naming(home, "remote") == "phrases"
    told = ragqa("map", "-c", "remote", **env)  # read from the cache: still said
    assert "research fields could not be embedded" in " ".join(told.stderr.split())
    # The embedder answers again: the next map (one paper added, placed on the old layout)
    # names the themes by fields.
    llm_server.embed_reply = lambda n, body: None
    later = tmp_path / "later.jsonl"
    later.write_text(json.dumps({"_id": "later-1", "title": "Full-duplex spoken dialogue",
                                 "text": "A spoken dialogue model that listens while it "
                                         "speaks."}) + "\n", encoding="utf-8")
    assert ragqa("ingest", str(later), "--quiet", "-c", "remote", **env).exit_code == 0
    shown = json.loads(ragqa("map", "-c", "remote", "--json", **env).output)
    assert shown["papers"] == 30 and shown["placed"] == 1 and shown["named_by"] == "fields"
    assert _stored_naming(home, "remote") == "fields" and not shown["naming"]["notice"]
    assert all(t["name"] in FIELD_NAMES or ", " in t["name"] or " and " in t["name"]
               for t in shown["themes"])


def test_every_research_field_has_a_name_and_a_description():
    fields = research_fields()
    assert len(fields) >= 100 and len({f.name for f in fields}) == len(fields)
    assert all(not f.name[0].islower() and len(f.description.split()) >= 5 for f in fields)


# ---------------------------------------------------------------- names written by an LLM

def _naming_reply(body: dict):
    """The loopback model names a theme after the first word of its first title, in a name of
    three words; a prompt without titles gets prose (no name)."""
    from .helpers.llm_server import Reply, prompt_of

    prompt = prompt_of(body)
    titles = re.findall(r"^- (.+)$", prompt, re.M)
    if "<titles>" not in prompt or not titles:
        return Reply("I cannot help with that.")
    return Reply(f"Studies around {titles[0].split()[0].strip(':,')} work")


def test_an_llm_names_the_themes_once_and_a_failing_one_leaves_ragqa_s_names(
        seeded, llm_server):
    from .helpers.answers import CANARY, _llm_env
    from .helpers.llm_server import Reply

    offline = _map_json(seeded, "--llm", "none")
    assert offline["naming"]["mode"] == "offline"
    llm_server.reply = _naming_reply
    assert _map_json(seeded, **_llm_env(llm_server))["naming"]["mode"] == "offline"  # opt-in
    assert not llm_server.requests
    named = _map_json(seeded, "--llm", "auto", **_llm_env(llm_server))
    chats = [r["body"] for r in llm_server.requests if "messages" in r["body"]]
    asked = len(chats)
    assert asked == len(offline["themes"]) + len(offline["subthemes"]) > 0
    prompts = [m["content"] for r in chats for m in r["messages"]]
    # each prompt holds the titles of its own theme's papers, and nothing of another's
    points = named["points"]
    for theme, prompt in zip(named["themes"], prompts, strict=True):
        titles = set(re.findall(r"^- (.+)$", prompt, re.M))
        mine = {t for t, k in zip(points["title"], points["theme"], strict=True)
                if k == theme["theme"]}
        assert titles and titles <= mine
        assert theme["name"].startswith("Studies around ") or theme["name"] == next(
            t["name"] for t in offline["themes"] if t["theme"] == theme["theme"])
    assert named["naming"]["mode"] == "llm" and named["naming"]["model"].startswith(
        "loopback-model")
    assert named["naming"]["named"] + named["naming"]["kept"] == len(named["themes"])
    assert len({t["name"].casefold() for t in named["themes"]}) == len(named["themes"])
    # the regions are the same; only names differ
    assert [t["papers"] for t in named["themes"]] == [t["papers"] for t in offline["themes"]]
    # named once: asked again, the model is not
    again = _map_json(seeded, "--llm", "openai", **_llm_env(llm_server))
    assert sum("messages" in r["body"] for r in llm_server.requests) == asked
    assert again["themes"] == named["themes"]
    text = seeded("map", "--llm", "auto", **_llm_env(llm_server)).stdout
    assert "Themes named by loopback-model" in " ".join(text.split())
    # another model, failing: ragqa's own names, a notice, and the map all the same
    llm_server.reply = lambda body: Reply(status=500)
    failed = seeded("map", "--json", "--llm", "auto",
                    **_llm_env(llm_server, RAGQA_LLM_MODEL="other-model"))
    assert failed.exit_code == 0, failed.output
    kept = json.loads(failed.stdout)
    assert kept["naming"]["mode"] == "offline" and "could not name" in kept["naming"]["notice"]
    assert [t["name"] for t in kept["themes"]] == [t["name"] for t in offline["themes"]]
    shown = seeded("map", "--llm", "auto", **_llm_env(llm_server, RAGQA_LLM_MODEL="other-model"))
    assert shown.exit_code == 0 and "could not name the map's themes" in shown.stderr
    assert CANARY not in shown.stdout + shown.stderr + failed.stdout  # the key never shows


def _two_level_map() -> dict:
    """A map as `maps.as_json` gives it, with two themes and three sub-themes: each group's
    papers titled after the group ("g-s0 paper 3"), so a reply can tell the groups apart."""
    groups = [("g-s0", 0, 0, 0.1), ("g-s1", 0, 1, 0.2), ("g-v0", 1, 2, 0.8)]
    points = {"title": [], "theme": [], "subtheme": [], "x": [], "y": []}
    for tag, theme, sub, x in groups:
        for i in range(12):
            points["title"].append(f"{tag} paper {i}: a study")
            points["theme"].append(theme)
            points["subtheme"].append(sub)
            points["x"].append(x + i / 1000)
            points["y"].append(0.5)
    return {"state": "f" * 40, "points": points,
            "themes": [{"theme": 0, "name": "Speech", "papers": 24, "x": 0.15, "y": 0.5},
                       {"theme": 1, "name": "Vision", "papers": 12, "x": 0.8, "y": 0.5}],
            "subthemes": [{"subtheme": 0, "theme": 0, "name": "Speech A", "papers": 12,
                           "x": 0.1, "y": 0.5},
                          {"subtheme": 1, "theme": 0, "name": "Speech B", "papers": 12,
                           "x": 0.2, "y": 0.5},
                          {"subtheme": 2, "theme": 1, "name": "Vision A", "papers": 12,
                           "x": 0.8, "y": 0.5}]}


def test_llm_names_are_read_checked_kept_distinct_and_kept_per_map(llm_server, tmp_path):
    """Through the real openai client to the loopback server: the name is read out of a
    chatty reply; a reply that is no name, or that repeats a sibling's or its theme's name,
    keeps ragqa's; the names are asked once per map and asked again for a map made
    otherwise; a failure keeps nothing and is asked again."""
    from ragqa.config import load_settings
    from ragqa.maps.naming import llm_named
    from ragqa.models.llm import make_llm

    from .helpers.answers import _llm_env
    from .helpers.llm_server import Reply, prompt_of

    # the themes are asked first, then the sub-themes, in order
    replies = ["Sure! Here is the name:\n1. Spoken dialogue.",  # theme 0: read out of it
               "N/A",  # theme 1: no name
               "Spoken dialogue",  # sub-theme 0: its theme's name
               "'Speech A'",  # sub-theme 1: its sibling's (ragqa's) name
               "Image segmentation"]  # sub-theme 2

    def chats() -> list[dict]:
        return [r["body"] for r in llm_server.requests if "messages" in r["body"]]

    llm_server.reply = lambda body: Reply(replies[(len(chats()) - 1) % len(replies)])
    settings = load_settings({"RAGQA_HOME": str(tmp_path), "RAGQA_ENV_FILE": "/x",
                              **_llm_env(llm_server)})
    llm, folder = make_llm(settings), tmp_path / "maps"
    result = _two_level_map()
    named = llm_named(result, llm, settings, folder)
    tags = [set(re.findall(r"^- (g-\w\d) paper", prompt_of(body), re.M)) for body in chats()]
    assert tags == [{"g-s0", "g-s1"}, {"g-v0"}, {"g-s0"}, {"g-s1"}, {"g-v0"}]
    assert [t["name"] for t in named["themes"]] == ["Spoken dialogue", "Vision"]
    assert [t["name"] for t in named["subthemes"]] == ["Speech A", "Speech B",
                                                        "Image segmentation"]
    assert named["naming"] | {"model": ""} == {"mode": "llm", "model": "", "named": 2,
                                              "kept": 3, "notice": ""}
    # asked once per map; a map made otherwise (other groups) is asked again
    assert llm_named(result, llm, settings, folder)["themes"] == named["themes"]
    assert len(chats()) == 5
    other = {**result, "themes": [result["themes"][0], {**result["themes"][1],
                                                        "name": "Images"}]}
    llm_named(other, llm, settings, folder)
    assert len(chats()) == 10
    # a failing model: ragqa's names and a notice; nothing kept, so asked again next time
    llm_server.reply = lambda body: Reply(status=500)
    failed = llm_named(result, llm, settings, tmp_path / "other-maps")
    assert [t["name"] for t in failed["themes"]] == ["Speech", "Vision"]
    assert failed["naming"]["mode"] == "offline" and "could not name" in \
        failed["naming"]["notice"]
    asked = len(chats())
    llm_named(result, llm, settings, tmp_path / "other-maps")
    assert len(chats()) > asked


def test_a_chinese_summary_draws_its_words_not_boxes(seeded, tmp_path):
    """A Chinese topic's summary (`summarize --out`) is searched in its language (the spiking
    papers: the English list model alone found none), and the pictures beside it draw its
    words: every CJK glyph comes from the maps extra's Noto Sans CJK, none is a "missing from
    font" box of DejaVu Sans."""
    import warnings

    assert seeded("ingest", "--multilingual", "--quiet").exit_code == 0
    out = tmp_path / "summary.md"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = seeded("summarize", "脉冲神经网络", "--out", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "脉冲神经网络" in text and "DiceFormer" in text  # searched in its language
    assert _png_size(tmp_path / "summary.map.png") == (1600, 1000)
    assert not [w for w in caught if "missing from font" in str(w.message)]
