"""The Markdown ragqa writes is text by construction (issue "Trust, round two", item 2). A model
that writes link definitions where a line-anchored filter misses them (`> [1]: javascript:…`,
in a list, with escaped brackets, a label split over two lines), autolinks, links, images, raw
HTML or entities, answering through the loopback LLM and the real CLI, leaves no script link in
chat `/save`, `summarize --out` or the summary the web page downloads (the server's `markdown`,
which the page saves as it is). Four real renderers, their own URL filters off, make the HTML;
the references stay links to their http(s) pages, a record's `javascript:` URL none, and
citations read [n]."""

from __future__ import annotations

import html
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, unquote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragqa.sources.export import reference_link
from ragqa.text import inert_markdown, inert_markdown_line

from .conftest import Ragqa
from .helpers.answers import _llm_env
from .helpers.llm_server import Reply, prompt_name
from .helpers.serve import RagqaServer

# Link definitions that a filter anchored at a line's start let through; each makes every
# `[1]` of the document (or a link of the model's own) a link to the script.
DEFINITIONS = {
    "quoted": "> [1]: javascript:alert(1)",
    "listed": "- [2]: javascript:alert(2)",
    "escaped-bracket-in-label": "[x\\]y]: javascript:alert(3)\nSee [x\\]y].",
    "label-split-over-two-lines": "[1\n]: javascript:alert(4)",
}
OTHER_ATTACKS = {
    "escaped-brackets": "\\[1\\]: javascript:alert(5)",
    "autolink": "See <javascript:alert(6)>.",
    "inline-link": "See [the code](javascript:alert(7)).",
    "image": "![pixel](javascript:alert(8))",
    "raw-anchor": 'See <a href="javascript:alert(9)">the code</a>.',
    "raw-image": "<img src=x onerror=alert(10)>",
    "entity-scheme": "See [the code](&#106;avascript:alert(11)).",
    "data-link": "See [the page](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==).",
    "vbscript-link": "See [the page](vbscript:msgbox(1)).",
    "script": "<script>alert(12)</script>",
}
EVERY_ATTACK = "\n\n".join([*DEFINITIONS.values(), *OTHER_ATTACKS.values()])
GOOD_URL = "https://example.org/paper_(v2)"
GOOD_TITLE = "Event cameras and spiking neurons [v2]"
EVIL_TITLE = "Spiking networks for event cameras"
PAPERS = [
    {"id": "evil-1", "title": EVIL_TITLE, "url": "javascript:alert(1)",
     "abstract": "We train spiking neural networks for event cameras with surrogate gradients. "
     "Spiking networks reach 92% accuracy on event data."},
    {"id": "good-1", "title": GOOD_TITLE, "url": GOOD_URL,
     "abstract": "Spiking neurons process event camera streams. Our spiking model halves the "
     "energy of event-based recognition."},
] + [{"id": f"fill-{i}", "title": f"A study of {t}",
      "abstract": f"We study {t} with new methods and report strong results on benchmarks."}
     for i, t in enumerate(["protein folding", "traffic forecasting", "machine translation",
                            "image segmentation", "robot grasping", "music generation"])]
QUESTION = "Which papers train spiking networks on event cameras?"


# ---------------------------------------------------------------- real renderers, filters off

def _python_markdown(text: str) -> str:
    import markdown

    return markdown.markdown(text, extensions=["extra"])  # footnotes, attributes, tables too


def _mistune(text: str) -> str:
    import mistune

    renderer = mistune.HTMLRenderer(escape=False, allow_harmful_protocols=True)
    return mistune.create_markdown(escape=False, renderer=renderer, plugins=[
        "strikethrough", "footnotes", "table", "def_list"])(text)


def _markdown_it(text: str) -> str:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.validateLink = lambda url: True  # its own scheme filter off: ragqa's escaping is tested
    return md.render(text)


def _marko(text: str) -> str:
    import marko
    from marko.html_renderer import HTMLRenderer

    class Unfiltered(HTMLRenderer):
        @staticmethod
        def escape_url(raw: str) -> str:  # marko's, minus its `#harmful-link` replacement
            return html.escape(quote(html.unescape(raw), safe="/#:()*?=%@+,&"))

    return marko.Markdown(renderer=Unfiltered).convert(text)


RENDERERS = {"python-markdown": _python_markdown, "mistune": _mistune,
             "markdown-it": _markdown_it, "marko": _marko}


class _Page(HTMLParser):
    """The elements of rendered HTML, its text, and each link's target and text."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict]] = []
        self.links: list[tuple[str, str]] = []
        self.text: list[str] = []
        self._link: list[str] | None = None
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        if tag == "a":
            self._link = [dict(attrs).get("href") or ""]

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._link is not None:
            self.links.append((self._link[0], " ".join("".join(self._link[1:]).split())))
            self._link = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._link is not None:
            self._link.append(data)


ALLOWED_TAGS = {"h1", "h2", "p", "em", "ul", "li", "a", "img"}
SCRIPT_SCHEME = re.compile(r"^\s*(?:javascript|data|vbscript):", re.IGNORECASE)


def _live(markup: str) -> list:
    """What in rendered HTML could run or lead to a script: a tag ragqa does not write, an
    event handler, a link to anything but an http(s) page, an image but a picture beside the
    file, any script URL."""
    found: list = ["<script"] if "<script" in markup.lower() else []
    for tag, attrs in _Page(markup).elements:
        found += [(tag, name) for name in attrs if name.startswith("on")]
        found += [(tag, v) for v in attrs.values() if SCRIPT_SCHEME.match(v)]
        if tag not in ALLOWED_TAGS or (tag == "a" and not re.match(r"https?://", attrs.get(
                "href", ""))) or (tag == "img" and not re.fullmatch(r"[\w.-]+", attrs["src"])):
            found.append((tag, attrs))
    return found


def _assert_inert(markdown: str) -> None:
    for name, render in RENDERERS.items():
        assert not _live(render(markdown)), (name, _live(render(markdown)))


def _assert_references_read_right(markdown: str) -> None:
    """Citations read [n] (their escapes do not show); the web page's reference is a link to
    it, the `javascript:` one's title plain text."""
    for name, render in RENDERERS.items():
        page = _Page(render(markdown))
        text = " ".join("".join(page.text).split())
        assert re.search(r"event cameras \[\d\]\.", text), (name, text)
        assert [(unquote(href), title) for href, title in page.links] == \
            [(GOOD_URL, GOOD_TITLE)] * len(page.links) and page.links, (name, page.links)
        assert EVIL_TITLE in text, name


# ---------------------------------------------------------------- the CLI over hostile output

@pytest.fixture(scope="module")
def _papers_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder holding PAPERS, ingested once for the module."""
    folder = tmp_path_factory.mktemp("hostile-md")
    source = folder / "papers.jsonl"
    source.write_text("".join(json.dumps(p) + "\n" for p in PAPERS), encoding="utf-8")
    result = Ragqa({"RAGQA_HOME": str(folder / "home")})("ingest", str(source), "--quiet")
    assert result.exit_code == 0, result.output
    return folder / "home"


@pytest.fixture
def papers(_papers_template: Path, home: Path, ragqa: Ragqa) -> Ragqa:
    shutil.copytree(_papers_template, home)
    return ragqa


def _writes(attack: str):
    """A model that writes `attack` in every answer, paragraph, theme name and overview, as a
    paragraph of its own (a definition cannot interrupt a paragraph) between two that cite the
    sources it was given."""
    return lambda body: Reply(f"Spiking networks learn from event cameras [1].\n\n{attack}\n\n"
                              "Spiking models save energy [2].")


@pytest.mark.parametrize("attack", DEFINITIONS.values(), ids=DEFINITIONS.keys())
def test_a_saved_chat_of_a_hostile_model_renders_to_no_script_link(papers, llm_server,
                                                                   tmp_path, attack):
    llm_server.reply = _writes(attack)
    saved = tmp_path / "chat.md"
    result = papers("chat", input=f"{QUESTION}\nwhich of them save energy?\n/save {saved}\n",
                    **_llm_env(llm_server))
    assert result.exit_code == 0, result.output
    transcript = saved.read_text(encoding="utf-8")
    assert transcript.count("\n## ") == 2, transcript  # both turns, each its own section
    _assert_inert(transcript)
    _assert_references_read_right(transcript)


def test_a_summary_of_a_hostile_model_renders_to_no_script_link(papers, llm_server, tmp_path):
    llm_server.reply = _writes(EVERY_ATTACK)
    out = tmp_path / "summary.md"
    result = papers("summarize", "spiking networks for event cameras", "--out", str(out),
                    **_llm_env(llm_server))
    assert result.exit_code == 0, result.output
    assert {prompt_name(r["body"]) for r in llm_server.requests if "messages" in r["body"]} >= \
        {"summarize", "theme_name"}  # the model wrote the paragraphs and the theme names
    markdown = out.read_text(encoding="utf-8")
    _assert_inert(markdown)
    _assert_references_read_right(markdown)


@pytest.mark.server
def test_the_summary_the_web_page_downloads_renders_to_no_script_link(_papers_template,
                                                                      tmp_path, llm_server):
    llm_server.reply = _writes(EVERY_ATTACK)
    home = tmp_path / "home"
    shutil.copytree(_papers_template, home)
    server = RagqaServer(home, **_llm_env(llm_server))
    try:
        server.wait_ready()
        reply = httpx.post(f"{server.url}/api/summarize", timeout=120,
                           json={"topic": "spiking networks for event cameras"})
    finally:
        server.stop()
    assert reply.status_code == 200, reply.text
    assert reply.json()["mode"] == "llm"
    _assert_inert(reply.json()["markdown"])
    _assert_references_read_right(reply.json()["markdown"])


# ---------------------------------------------------------------- by construction

_MARKDOWN_TEXT = st.lists(st.sampled_from(
    list("\\`*_{}[]()<>!#|~^&=+-.:;'\"/@$% \n\t\r1aZé") +
    ["&#106;", "&amp;", "javascript:", "http://x.org", "<a href=", "    ", "1.", "[1]"]),
    max_size=40).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_MARKDOWN_TEXT)
def test_any_text_renders_as_exactly_that_text_and_nothing_else(text):
    """Whatever a model writes, each renderer makes paragraphs (or the heading it is put in) of
    its very characters: no other element can come of it, nothing of it is lost, no escape
    shows."""
    for markdown, tags in ((inert_markdown(text), {"p"}), (f"# {inert_markdown_line(text)}",
                                                             {"h1"})):
        for name, render in RENDERERS.items():
            page = _Page(render(markdown))
            assert {tag for tag, _ in page.elements} <= tags, (name, markdown, render(markdown))
            shown = " ".join("".join(page.text).split())
            assert shown == " ".join(text.split()), (name, markdown, shown)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(title=_MARKDOWN_TEXT, path=_MARKDOWN_TEXT.filter(lambda p: p.strip()))
def test_a_reference_is_one_link_to_its_page_whatever_its_title_and_url(title, path):
    url = "https://example.org/" + "".join(path.split())
    for name, render in RENDERERS.items():
        page = _Page(render(f"- [1] {reference_link(title, url)}"))
        assert [tag for tag, _ in page.elements] == ["ul", "li", "a"], (name, title, url)
        [(href, shown)] = page.links
        assert unquote(href) == unquote(url) and shown == " ".join(title.split()), name
