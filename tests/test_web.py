"""The web page of `ragqa serve`, in a real browser: headless Chromium from Debian's `chromium`
and `chromium-driver` packages, driven by Selenium, against the real `ragqa serve` over a temp
data folder that holds the seeds (and one paper whose title is an HTML injection)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import FULL_DUPLEX, Ragqa
from .helpers import DOUBTED  # the list decision doubts it: all tail
from .helpers.llm_server import Reply, prompt_of

pytestmark = pytest.mark.server

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Chromium asked to stay off the network: no update checks, sync, QUIC or first-run pages.
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1280,900")
XSS_TITLE = "<script>alert(1)</script><img src=x onerror=\"window.pwned=1\">"
XSS_PAPER = {"id": "xss-title-0001", "title": XSS_TITLE, "venue": "TEST", "year": 2026,
             "abstract": "We study greenhouse tomato irrigation schedules. Drip irrigation "
                         "at dawn saves a third of the water with the same yield."}
WAIT = 60  # seconds: a cold first answer loads the embedder and the cross-encoder


def _browser_or_skip() -> None:
    if Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} or {CHROMEDRIVER} is missing (.ci/run installs them with apt-get)")
    pytest.skip("the browser tests need Debian's chromium and chromium-driver packages "
                "(apt-get install chromium chromium-driver)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, token: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=WAIT) as r:
        return json.load(r)


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        return json.load(response)


@dataclass
class Server:
    url: str
    process: subprocess.Popen
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _start_serve(home: Path, *extra: str, **settings: str) -> Server:
    port = _free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "RAGQA_CHROMA", "RAGQA_EMBED", "RAGQA_LLM"))}
    env.update(RAGQA_HOME=str(home), RAGQA_ENV_FILE=str(home / "no.env"))
    env.pop("RAGQA_SERVE_TOKEN", None)
    env.pop("RAGQA_COLLECTION", None)
    env.update(settings)
    log = home.parent / f"serve-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragqa", "serve", "--host", "127.0.0.1", "--port", str(port),
             *extra], env=env, stdout=out, stderr=subprocess.STDOUT)
    server = Server(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"ragqa serve exited with {process.returncode}: "
                               f"{log.read_text(errors='replace')[-2000:]}")
        try:
            _get(server.url + "/api/health")
            return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"ragqa serve did not answer within {WAIT} s")


@pytest.fixture(scope="module")
def web_home(_seeded_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeds plus one paper whose title is HTML meant to run script."""
    home = tmp_path_factory.mktemp("web") / "home"
    shutil.copytree(_seeded_template, home)
    source = home.parent / "xss.jsonl"
    source.write_text(json.dumps(XSS_PAPER) + "\n", encoding="utf-8")
    result = Ragqa({"RAGQA_HOME": str(home)})("ingest", str(source), "--quiet")
    assert result.exit_code == 0, result.output
    return home


@pytest.fixture(scope="module")
def server(web_home: Path) -> Iterator[Server]:
    _browser_or_skip()
    started = _start_serve(web_home)
    yield started
    started.stop()


def _new_browser(download_dir: Path | None = None):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument("--user-data-dir=" + tempfile.mkdtemp(prefix="ragqa-chromium-"))
    if download_dir:
        options.add_experimental_option("prefs", {
            "download.default_directory": str(download_dir), "download.prompt_for_download": False})
    # An explicit driver path: Selenium Manager never runs, so nothing is downloaded.
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


@pytest.fixture
def browser(tmp_path: Path):
    _browser_or_skip()
    driver = _new_browser(tmp_path / "downloads")
    driver.implicitly_wait(0)
    yield driver
    driver.quit()


# ---------------------------------------------------------------- helpers


def _wait(driver, condition, seconds: float = WAIT):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, poll_frequency=0.1).until(condition)


def _visible(driver, css: str, seconds: float = WAIT):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    return _wait(driver, ec.visibility_of_element_located((By.CSS_SELECTOR, css)), seconds)


def _css(driver, css: str):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def _open(driver, server: Server, view: str = "ask") -> None:
    driver.get(f"{server.url}/#{view}")
    _wait(driver, lambda d: _css(d, "#mode")[0].text not in ("", "connecting…"))


def _ask(driver, question: str) -> object:
    """Types a question, presses Enter and waits for the answer's last turn to be complete."""
    from selenium.webdriver.common.keys import Keys

    turns = len(_css(driver, "#thread .turn"))
    box = _css(driver, "#question")[0]
    box.send_keys(question)
    box.send_keys(Keys.ENTER)
    _wait(driver, lambda d: len(_css(d, "#thread .turn")) == turns + 1)
    turn = _css(driver, "#thread .turn")[-1]
    _wait(driver, lambda d: turn.get_attribute("aria-busy") is None
          and not turn.find_elements("css selector", "[aria-busy]"))
    return turn


def _record_live_text(driver) -> None:
    """Keep every text the answer being written shows (read back: `return window.seen`)."""
    driver.execute_script("""
        window.seen = [];
        new MutationObserver(() => {
          const live = document.querySelector('#thread .streaming');
          const text = live && live.textContent;
          if (text && text !== window.seen.at(-1)) window.seen.push(text);
        }).observe(document.getElementById('thread'),
                   {subtree: true, childList: true, characterData: true});""")


def _letters(text: str) -> str:
    """Letters and digits only: a quote reads LaTeX and Markdown as text, an abstract holds them
    ("2.13×" is "$2.13\\times$" there)."""
    text = text.translate(str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789"))
    return re.sub(r"\\[a-zA-Z]+|[^a-z0-9]", "", text.lower())


def _no_horizontal_scroll(driver) -> bool:
    return driver.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def _assert_no_alert(driver) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 (reading it is the check)
    assert driver.execute_script("return window.pwned === undefined")


# ---------------------------------------------------------------- Ask / chat


def test_the_page_is_the_packaged_one_and_loads_nothing_from_another_host(server, browser):
    _open(browser, server)
    assert _css(browser, "#mode")[0].text == "extractive"
    assert "30 papers" in _css(browser, "#collection")[0].text
    hosts = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => new URL(e.name).host)")
    assert hosts and set(hosts) == {server.url.removeprefix("http://")}
    assert browser.execute_script("return document.styleSheets.length") == 1
    assert _css(browser, "#error")[0].is_displayed() is False


def test_a_question_streams_an_answer_whose_citations_open_the_quoted_sentence(server, browser):
    expected = _post(server.url + "/api/ask", {"question": FULL_DUPLEX, "llm": "none"})
    assert expected["citations"], "the seeds answer this question"
    _open(browser, server)
    turn = _ask(browser, FULL_DUPLEX)
    assert _css(browser, "#question")[0].get_attribute("value") == ""

    text = turn.find_element("css selector", ".answer-text").text
    for c in expected["citations"]:
        assert c["title"] in text
    buttons = turn.find_elements("css selector", ".answer-text button.cite")
    assert [b.text for b in buttons] == [str(c["n"]) for c in expected["citations"]]
    references = turn.find_elements("css selector", ".refs li")
    assert [r.find_element("css selector", "button.link").text for r in references] == \
        [c["title"] for c in expected["citations"]]
    for ref, c in zip(references, expected["citations"], strict=True):
        assert c["source"] in ref.text and c["paper_id"] in ref.text

    for button, citation in zip(buttons, expected["citations"], strict=True):
        button.click()
        mark = _visible(browser, "#panel-abstract mark")
        paper = _get(f"{server.url}/api/papers/{citation['paper_id']}")
        assert _css(browser, "#panel-title")[0].text == paper["title"]
        marked = mark.text
        # The highlight is one sentence of the cited abstract, and it is the answer's quote.
        assert marked in paper["text"] or marked.strip() in " ".join(paper["text"].split())
        start = paper["text"].find(marked)
        assert start == 0 or paper["text"][:start].rstrip().endswith((".", "!", "?"))
        assert marked.rstrip().endswith((".", "!", "?"))
        assert _letters(marked) == _letters(citation["quote"])
        assert _css(browser, "#panel-abstract")[0].get_attribute("textContent") == paper["text"]
        # Esc closes the panel and gives the focus back to the citation.
        from selenium.webdriver.common.keys import Keys

        browser.switch_to.active_element.send_keys(Keys.ESCAPE)
        _wait(browser, lambda d: not _css(d, "#panel")[0].is_displayed())
        assert browser.switch_to.active_element == button


def test_a_lists_less_certain_papers_are_folded_under_the_answer(server, browser):
    expected = _post(server.url + "/api/ask", {"question": FULL_DUPLEX, "llm": "none"})
    tail = [p["title"] for p in expected["papers"] if p["tier"] == "tail"]
    assert tail, "the seeds' full-duplex list has a less certain tail"
    _open(browser, server)
    turn = _ask(browser, FULL_DUPLEX)
    fold = turn.find_element("css selector", "details.tail")
    assert fold.get_attribute("open") is None  # folded
    assert fold.find_element("css selector", "summary").text == \
        f"{len(tail)} more, less certain"
    fold.find_element("css selector", "summary").click()
    shown = [b.text for b in fold.find_elements("css selector", "li button.link")]
    assert shown == tail
    assert [t for t in _titles_of(turn) if t in tail] == []  # the references are the core


def test_the_first_highlight_is_exactly_the_quoted_sentence(server, browser):
    expected = _post(server.url + "/api/ask", {"question": FULL_DUPLEX, "llm": "none"})
    first = expected["citations"][0]
    paper = _get(f"{server.url}/api/papers/{first['paper_id']}")
    assert first["quote"] in paper["text"]  # Moshi-RAG's sentence holds no LaTeX
    _open(browser, server)
    _ask(browser, FULL_DUPLEX)
    # From the keyboard: Tab moves from the question box back to the last reference, then on
    # towards the first citation; Enter opens it; the focus ring shows where the focus is.
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    first_button = _css(browser, ".answer-text button.cite")[0]
    _css(browser, "#question")[0].click()
    for _ in range(40):
        ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.TAB).key_up(Keys.SHIFT).perform()
        if browser.switch_to.active_element == first_button:
            break
    assert browser.switch_to.active_element == first_button
    assert browser.execute_script(
        "return getComputedStyle(document.activeElement).outlineStyle") == "solid"
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    assert _visible(browser, "#panel-abstract mark").text == first["quote"]


def test_a_quote_written_in_latex_is_highlighted_in_its_abstract(server, browser):
    """The seed abstract writes `$2.13\\times$`; ingest stores it as text ("2.13×"), and a
    collection ingested before that still holds the LaTeX: the page marks the quote in either."""
    question = "What speedup does the kernel-generation agent reach?"
    expected = _post(server.url + "/api/ask", {"question": question, "llm": "none"})
    [citation] = expected["citations"]
    paper = _get(f"{server.url}/api/papers/{citation['paper_id']}")
    assert "2.13×" in citation["quote"]
    assert "2.13×" in paper["text"] or "$2.13\\times$" in paper["text"]
    _open(browser, server)
    turn = _ask(browser, question)
    turn.find_element("css selector", ".answer-text button.cite").click()
    mark = _visible(browser, "#panel-abstract mark").get_attribute("textContent")
    assert "2.13" in mark and mark in paper["text"]
    assert _letters(mark) == _letters(citation["quote"])


def test_a_question_nothing_answers_lists_the_closest_papers_and_new_chat_clears(server,
                                                                                browser):
    _open(browser, server)
    _ask(browser, FULL_DUPLEX)
    _css(browser, "#new-chat")[0].click()
    assert _css(browser, "#thread .turn") == []
    assert browser.switch_to.active_element == _css(browser, "#question")[0]
    question = "Which papers study quantum cooking?"
    expected = _post(server.url + "/api/ask", {"question": question, "llm": "none"})
    assert expected["citations"] == [] and expected["closest"]
    turn = _ask(browser, question)
    assert turn.find_elements("css selector", "button.cite") == []
    section = turn.find_element("css selector", ".refs")
    assert "Closest matches" in section.text
    titles = [b.text for b in section.find_elements("css selector", "li button")]
    assert titles == [p["title"] for p in expected["closest"]]
    section.find_element("css selector", "li button").click()
    _visible(browser, "#panel-abstract")
    assert _css(browser, "#panel-title")[0].text == expected["closest"][0]["title"]


def test_a_chinese_question_shows_the_chinese_frames_the_answer_carries(server, browser):
    # Over the seeds' multilingual vectors a Chinese question finds its papers (issue 15): the
    # page shows the Chinese frames the answer carries around the English quotes.
    question = "哪些论文研究 full-duplex speech？"
    expected = _post(server.url + "/api/ask", {"question": question, "llm": "none"})
    assert expected["language"] == "Chinese" and expected["citations"]
    _open(browser, server)
    turn = _ask(browser, question)
    answer = turn.find_element("css selector", ".answer")
    assert answer.get_attribute("lang") == "zh-Hans"
    assert turn.find_element("css selector", ".answer-mode").text == "回答（抽取式）"
    count_line = expected["answer"].split("\n")[0]  # "共有 N 篇论文涉及“full-duplex speech”："
    assert count_line.startswith("共有") and count_line in answer.text
    assert turn.find_elements("css selector", ".answer-text button.cite")
    section = turn.find_element("css selector", ".refs")
    assert section.find_element("css selector", "h3").text == expected["labels"]["references"]
    assert expected["labels"]["references"] == "参考文献"
    assert "References" not in section.text and "Answer (" not in answer.text


def test_a_follow_up_continues_the_same_chat_session(server, browser, web_home):
    _open(browser, server)
    _ask(browser, FULL_DUPLEX)
    turn = _ask(browser, "How do they handle interruptions?")
    assert turn.find_elements("css selector", ".answer-text button.cite")
    assert "→" in turn.find_element("css selector", ".answer").text  # the standalone question
    session = browser.execute_script("return state.sessionId")
    assert session, "the page keeps the session id the first answer gave"
    saved = json.loads((web_home / "chats" / f"{session}.json").read_text(encoding="utf-8"))
    assert len(saved["turns"]) == 2, "both questions are turns of one session the CLI can resume"


# ---------------------------------------------------------------- Papers and Summary




def test_papers_are_listed_and_searched_and_open_in_the_panel(server, browser):
    _open(browser, server, "papers")
    _wait(browser, lambda d: len(_css(d, "#paper-list > li")) == 30)
    assert "of 30" in _css(browser, "#papers-info")[0].text
    box = _css(browser, "#search-q")[0]
    box.send_keys("full-duplex speech\n")
    expected = _post(server.url + "/api/search", {"question": "full-duplex speech"})
    _wait(browser, lambda d: "match" in _css(d, "#papers-info")[0].text)
    items = _css(browser, "#paper-list > li")
    assert [i.find_element("css selector", ".paper-title").text for i in items] == \
        [r["title"] for r in expected["results"] if r["tier"] == "core"]
    # the less certain rest folded below, closed, as in an answer
    tail = [r["title"] for r in expected["results"] if r["tier"] == "tail"]
    fold = _css(browser, "#paper-tail")[0]
    assert fold.is_displayed() == bool(tail) and fold.get_attribute("open") is None
    assert [t.get_attribute("textContent") for t in
            fold.find_elements("css selector", ".paper-title")] == tail
    first = expected["results"][0]
    assert items[0].find_element("css selector", ".best-sentence").text == first["best_sentence"]
    items[0].find_element("css selector", ".paper-title").click()
    mark = _visible(browser, "#panel-abstract mark")
    assert _letters(mark.text) == _letters(first["best_sentence"])
    _css(browser, "#panel-close")[0].click()
    # a topic the list decision doubts: no paper listed, its papers folded
    doubted = _post(server.url + "/api/search", {"question": DOUBTED})
    assert doubted["results"] and {r["tier"] for r in doubted["results"]} == {"tail"}
    box.clear()
    box.send_keys(DOUBTED + "\n")
    _wait(browser, lambda d: "clearly about" in _css(d, "#papers-info")[0].text)
    assert not _css(browser, "#paper-list > li") and _css(browser, "#paper-tail")[0].is_displayed()
    _css(browser, "#search-clear")[0].click()
    _wait(browser, lambda d: len(_css(d, "#paper-list > li")) == 30)
    assert not _css(browser, "#paper-tail")[0].is_displayed()


def test_a_summary_renders_and_downloads_as_markdown(server, browser, tmp_path):
    expected = _post(server.url + "/api/summarize", {"topic": "audio"})
    _open(browser, server, "summary")
    box = _css(browser, "#topic")[0]
    box.send_keys("audio\n")
    _visible(browser, "#summary-out")
    themes = _css(browser, "#summary-themes .theme h4")
    assert [t.text.split(" (")[0] for t in themes] == [t["name"] for t in expected["themes"]]
    refs = [r.find_element("css selector", "button").text
            for r in _css(browser, "#summary-refs li")]
    assert refs == [r["title"] for r in expected["references"]]
    assert _css(browser, "#summary-overview")[0].text == expected["overview"]
    cite = _css(browser, "#summary-themes button.cite")[0]
    cite.click()
    _visible(browser, "#panel-abstract mark")
    assert _css(browser, "#panel-title")[0].text == expected["references"][0]["title"]
    _css(browser, "#panel-close")[0].click()
    _css(browser, "#download-md")[0].click()
    target = tmp_path / "downloads" / "summary-audio.md"
    _wait(browser, lambda d: target.exists() and target.stat().st_size > 0, 20)
    assert target.read_text(encoding="utf-8") == expected["markdown"]
    assert _css(browser, "#summary-title")[0].text == "Summary: audio"
    assert _css(browser, "#summary-refs-heading")[0].text == "References"


def test_a_chinese_summary_shows_its_chinese_headings(server, browser):
    topic = "总结关于 full-duplex speech 的论文"
    expected = _post(server.url + "/api/summarize", {"topic": topic})
    assert expected["language"] == "Chinese" and expected["themes"]
    _open(browser, server, "summary")
    _css(browser, "#topic")[0].send_keys(topic + "\n")
    _visible(browser, "#summary-out")
    assert _css(browser, "#summary-out")[0].get_attribute("lang") == "zh-Hans"
    assert _css(browser, "#summary-title")[0].text == "综述：full-duplex speech"
    assert _css(browser, "#summary-refs-heading")[0].text == "参考文献"
    headings = [t.text for t in _css(browser, "#summary-themes .theme h4")]
    assert headings == [t["heading"] for t in expected["themes"]]
    assert all(h.endswith("篇论文）") for h in headings)


# ---------------------------------------------------------------- escaping, layout, token


def test_a_title_holding_script_renders_as_text(server, browser):
    _open(browser, server, "papers")
    _wait(browser, lambda d: len(_css(d, "#paper-list > li")) == 30)
    assert _get(f"{server.url}/api/papers/{XSS_PAPER['id']}")["title"] == XSS_TITLE
    titles = [t.text for t in _css(browser, "#paper-list .paper-title")]
    assert XSS_TITLE in titles
    assert browser.execute_script("return document.images.length") == 0
    _assert_no_alert(browser)
    [title] = [t for t in _css(browser, "#paper-list .paper-title") if t.text == XSS_TITLE]
    title.click()
    _wait(browser, lambda d: _css(d, "#panel-title")[0].text == XSS_TITLE)
    # No element came out of the title: no <img>, and the only scripts are the page's own.
    assert browser.execute_script("return document.images.length") == 0
    assert browser.execute_script("return [...document.scripts].map(s => s.src)") == \
        [server.url + "/static/map.js", server.url + "/static/app.js"]
    _assert_no_alert(browser)


def test_phone_width_has_no_horizontal_scroll(server, browser):
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": 375, "height": 812, "deviceScaleFactor": 2, "mobile": True})
    _open(browser, server)
    assert browser.execute_script("return window.innerWidth") == 375
    turn = _ask(browser, FULL_DUPLEX)
    assert _no_horizontal_scroll(browser)
    turn.find_element("css selector", "button.cite").click()
    panel = _visible(browser, "#panel")
    assert panel.size["width"] <= 375 and _no_horizontal_scroll(browser)
    _css(browser, "#panel-close")[0].click()
    for view in ("papers", "summary"):
        _css(browser, f".view-tab[data-view={view}]")[0].click()
        _visible(browser, f"#view-{view}")
        if view == "papers":
            _wait(browser, lambda d: len(_css(d, "#paper-list > li")) == 30)
        assert _no_horizontal_scroll(browser), view


def test_with_a_token_the_page_asks_for_it_and_works_after(web_home, browser, tmp_path):
    home = tmp_path / "token-home"
    shutil.copytree(web_home, home)
    token = "s3cret-web-token-1234"
    server = _start_serve(home, "--token", token)
    try:
        assert _get(server.url + "/api/health")["auth"] is True
        browser.get(server.url + "/")
        dialog = _visible(browser, "#token-dialog", 20)
        field = _css(browser, "#token-input")[0]
        assert browser.switch_to.active_element == field
        field.send_keys("wrong-token\n")
        _wait(browser, lambda d: "refused" in _css(d, "#token-error")[0].text)
        assert dialog.is_displayed()
        field.send_keys(token + "\n")
        _wait(browser, lambda d: not _css(d, "#token-dialog")[0].is_displayed())
        assert browser.execute_script("return sessionStorage.getItem('ragqa-token')") == token
        turn = _ask(browser, FULL_DUPLEX)
        assert turn.find_elements("css selector", ".refs li")
        assert token not in browser.page_source
        assert token not in server.log.read_text(errors="replace")
    finally:
        server.stop()


def _cite_moshi_and_tau(body: dict) -> Reply:
    numbers = dict((title, n) for n, title in
                   re.findall(r'<source n="(\d+)" title="([^"]*)"', prompt_of(body)))
    return Reply(f"Moshi-RAG combines a compact full-duplex interface with selective retrieval "
                 f"[{numbers['Moshi-RAG']}]. τ-Voice is a benchmark for full-duplex voice agents "
                 f"[{numbers['τ-Voice']}].", chunk_delay=0.05)


def test_an_llm_answer_streams_into_the_page_token_by_token(web_home, browser, tmp_path,
                                                           llm_server):
    llm_server.reply = _cite_moshi_and_tau
    home = tmp_path / "llm-home"
    shutil.copytree(web_home, home)
    key = "sk-web-canary-0b1c2d3e4f"
    server = _start_serve(home, OPENAI_BASE_URL=llm_server.url, OPENAI_API_KEY=key,
                          RAGQA_LLM_MODEL="loopback-model", RAGQA_LLM_RETRIES="0")
    try:
        _open(browser, server)
        assert _css(browser, "#mode")[0].text == "LLM: loopback-model"
        # Record what the page shows while the answer is being written.
        _record_live_text(browser)
        turn = _ask(browser, FULL_DUPLEX)
        seen = [s for s in browser.execute_script("return window.seen") if "Moshi" in s]
        assert len(seen) >= 3, seen  # the text grew in steps, as the tokens came
        assert all(b.startswith(a.strip()) for a, b in zip(seen, seen[1:], strict=False))
        text = turn.find_element("css selector", ".answer-text").text
        assert "Moshi-RAG combines a compact full-duplex interface" in text
        assert "Answer (LLM: loopback-model" in turn.text
        titles = [b.text for b in turn.find_elements("css selector", ".refs li button.link")]
        assert titles[:2] == ["Moshi-RAG", "τ-Voice"]  # then "Also relevant:" ones
        turn.find_element("css selector", ".answer-text button.cite").click()
        mark = _visible(browser, "#panel-abstract mark")
        paper_text = _get(f"{server.url}/api/papers/7a6f3d2432b8bff8")["text"]
        assert _css(browser, "#panel-title")[0].text == "Moshi-RAG" and mark.text in paper_text
        assert key not in browser.page_source
    finally:
        server.stop()
    assert key not in server.log.read_text(errors="replace")


def test_a_refused_request_is_one_error_line_in_the_page(server, browser):
    _open(browser, server, "papers")
    # Over the server's 64 KB body limit: its JSON error is shown as a line, the page stays.
    browser.execute_script("document.getElementById('search-q').value = 'speech '.repeat(12000);"
                           "document.getElementById('search-form').requestSubmit();")
    line = _visible(browser, "#error", 20)
    assert line.text and "\n" not in line.text and "Traceback" not in line.text
    assert _css(browser, "#paper-list > li")  # the list is still there


def test_a_large_collection_is_listed_fifty_papers_a_page(browser, tmp_path):
    home = tmp_path / "many-home"
    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps({
        "id": f"paper-{i:03d}", "title": f"Paper number {i:03d}",
        "abstract": f"We study problem {i} of sorting networks with {i} comparators."}) + "\n"
        for i in range(1, 61)), encoding="utf-8")
    result = Ragqa({"RAGQA_HOME": str(home)})("ingest", str(source), "--quiet")
    assert result.exit_code == 0, result.output
    server = _start_serve(home)
    try:
        _open(browser, server, "papers")
        _wait(browser, lambda d: len(_css(d, "#paper-list > li")) == 50)
        assert _css(browser, "#papers-info")[0].text == "Papers 1–50 of 60"
        assert _css(browser, "#page-prev")[0].get_attribute("disabled") is not None
        _css(browser, "#page-next")[0].click()
        _wait(browser, lambda d: len(_css(d, "#paper-list > li")) == 10)
        assert _css(browser, "#papers-info")[0].text == "Papers 51–60 of 60"
        page = _get(server.url + "/api/papers?offset=50&limit=50")["papers"]
        assert [t.text for t in _css(browser, "#paper-list .paper-title")] == \
            [p["title"] for p in page]
        assert _css(browser, "#page-next")[0].get_attribute("disabled") is not None
        _css(browser, "#page-prev")[0].click()
        _wait(browser, lambda d: len(_css(d, "#paper-list > li")) == 50)
    finally:
        server.stop()


def test_a_dropped_citation_is_marked_and_also_relevant_items_are_a_list(web_home, browser,
                                                                         tmp_path, llm_server):
    def reply(body: dict) -> Reply:
        answer = _cite_moshi_and_tau(body).text
        return Reply(answer + " It also cures colds [9].")  # [9] names no retrieved paper

    llm_server.reply = reply
    home = tmp_path / "dropped-home"
    shutil.copytree(web_home, home)
    server = _start_serve(home, OPENAI_BASE_URL=llm_server.url, RAGQA_LLM_MODEL="loopback-model",
                          RAGQA_LLM_RETRIES="0")
    try:
        expected = _post(server.url + "/api/ask", {"question": FULL_DUPLEX})
        assert "It also cures colds." in [u["sentence"] for u in expected["unsupported"]]
        assert "Also relevant:" in expected["answer"]
        _open(browser, server)
        turn = _ask(browser, FULL_DUPLEX)
        marked = [li.text for li in turn.find_elements("css selector", "ul.unsupported li")]
        assert "⚠ It also cures colds." in marked
        text = turn.find_element("css selector", ".answer-text")
        assert "- " not in text.text.replace(" - ", "")  # no literal list marker
        items = text.find_elements("css selector", "ul li")
        assert items and all(not i.text.startswith("-") for i in items)
    finally:
        server.stop()


def test_when_the_llm_fails_the_page_offers_the_extractive_answer(web_home, browser, tmp_path,
                                                                  llm_server):
    llm_server.reply = lambda body: Reply(status=500, error_message="model crashed")
    home = tmp_path / "failing-home"
    shutil.copytree(web_home, home)
    server = _start_serve(home, OPENAI_BASE_URL=llm_server.url, RAGQA_LLM_MODEL="loopback-model",
                          RAGQA_LLM_RETRIES="0")
    try:
        _open(browser, server)
        assert _css(browser, "#mode")[0].text == "LLM: loopback-model"
        _css(browser, "#question")[0].send_keys(FULL_DUPLEX)
        _css(browser, "#ask-submit")[0].click()
        retry = _visible(browser, "#thread .extractive-retry", 60)
        assert "LLM" in _css(browser, "#thread .error")[0].text
        retry.click()
        _wait(browser, lambda d: len(_css(d, "#thread .turn")) == 2
              and _css(d, "#thread .turn")[-1].find_elements("css selector", ".refs li"))
        answer = _css(browser, "#thread .turn")[-1]
        assert "extractive" in answer.text.lower() or "Answer (" in answer.text
        assert "Moshi-RAG" in answer.text
    finally:
        server.stop()


# ---------------------------------------------------------------- screening and marks


def _titles_of(turn) -> list[str]:
    return [b.text for b in turn.find_elements("css selector", ".refs li button.link")]


def test_marks_re_rank_the_list_and_offer_candidates_to_review(server, browser):
    _open(browser, server)
    first = _ask(browser, FULL_DUPLEX)
    listed = _titles_of(first)
    assert len(listed) >= 2
    update = first.find_element("css selector", "button.update-list")
    assert not update.is_enabled()  # nothing marked yet
    first.find_element("css selector", 'button.mark-not[data-n="1"]').click()
    fits = first.find_element("css selector", 'button.mark-more[data-n="2"]')
    fits.click()
    assert fits.get_attribute("aria-pressed") == "true" and update.is_enabled()
    # below the folded tail, the button may sit under the question box: scrolled to, as a user
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", update)
    update.click()
    _wait(browser, lambda d: len(_css(d, "#thread .turn")) == 2)
    second = _css(browser, "#thread .turn")[-1]
    _wait(browser, lambda d: not second.find_elements("css selector", "[aria-busy]"))
    assert second.find_element("css selector", ".question").text == "/more 2 /not 1"
    titles = _titles_of(second)
    assert titles[0] == listed[1] and listed[0] not in titles  # kept first, removed gone
    # the next candidates are offered to review, numbered after the list, never part of it
    assert len(titles) > len(listed) and "To review" in second.text
    assert "Re-ranked with your marks (1 relevant, 1 not)" in second.text
    # only the latest list can be marked: the numbers of a mark name the last list
    assert first.find_elements("css selector", "button.mark") == []
    assert second.find_elements("css selector", "button.mark")


def test_the_page_shows_screening_progress_and_lists_what_the_judge_accepts(
        web_home, browser, tmp_path, llm_server):
    import time as clock

    from .helpers.judge import judge

    accept = judge(lambda title: title in {"Moshi-RAG", "τ-Voice", "Hibiki-Zero"})

    def slow(body: dict) -> Reply:
        if "You are screening papers" in prompt_of(body):
            clock.sleep(0.4)  # slow enough that the page shows each wave
        return accept(body)

    llm_server.reply = slow
    home = tmp_path / "screen-home"
    shutil.copytree(web_home, home)
    server = _start_serve(home, OPENAI_BASE_URL=llm_server.url, RAGQA_LLM_MODEL="loopback-model",
                          RAGQA_LLM_RETRIES="0", RAGQA_SCREEN="auto", RAGQA_SCREEN_BATCH="5",
                          RAGQA_LLM_CONCURRENCY="1")
    try:
        _open(browser, server)
        _record_live_text(browser)
        turn = _ask(browser, FULL_DUPLEX)
        seen = [s for s in browser.execute_script("return window.seen") if "Screening" in s]
        assert seen and re.match(r"Screening: the model has read \d+ of ~\d+ candidates", seen[-1])
        assert set(_titles_of(turn)) == {"Moshi-RAG", "τ-Voice", "Hibiki-Zero"}
    finally:
        server.stop()
