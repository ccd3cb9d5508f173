"""Exports carry no live HTML: papers whose title, authors or abstract hold tags, scripts or
`javascript:` links, ingested for real, come out of every Markdown ragqa writes (summaries,
chat transcripts, the page's download is the summary's) and of the BibTeX export inert."""

from __future__ import annotations

import json
import re

import pytest

HOSTILE = [
    {"id": "evil-1", "title": "Spiking <img src=x onerror=alert(1)> networks <script>alert(1)"
     "</script>", "authors": "Mallory <svg onload=alert(2)>", "url": "javascript:alert(3)",
     "abstract": "We train spiking neural networks for event cameras with surrogate gradients. "
     "See [our code](javascript:alert(4)) and <iframe src=https://evil.example></iframe>. "
     "Spiking networks reach 92% accuracy on event data."},
    {"id": "evil-2", "title": "Event cameras and spiking neurons [x](data:text/html,boom)",
     "url": "https://example.org/paper",
     "abstract": "Spiking neurons process event camera streams. ![pixel](javascript:alert(5)) "
     "Our spiking model halves the energy of event-based recognition."},
]
FILLER = [{"id": f"fill-{i}", "title": f"A study of {t}",
           "abstract": f"We study {t} with new methods and report strong results on benchmarks."}
          for i, t in enumerate(["protein folding", "traffic forecasting", "machine translation",
                                 "image segmentation", "robot grasping", "music generation",
                                 "code generation", "tabular learning", "weather forecasting",
                                 "recommender systems"])]
LIVE = re.compile(r"<(?:img|script|svg|iframe)|\]\((?:javascript|data):|\]\(\s*<?javascript",
                  re.IGNORECASE)


@pytest.fixture
def hostile(ragqa, tmp_path):
    source = tmp_path / "hostile.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in HOSTILE + FILLER), encoding="utf-8")
    assert ragqa("ingest", str(source), "--quiet").exit_code == 0
    return ragqa


def test_the_summary_markdown_is_inert(hostile, tmp_path):
    out = tmp_path / "summary.md"
    result = hostile("summarize", "spiking neural networks for event cameras", "--out", str(out),
                     "--llm", "none")
    assert result.exit_code == 0, result.output
    markdown = out.read_text(encoding="utf-8")
    assert "Spiking" in markdown and "&lt;script" in markdown  # shown, as text
    assert not LIVE.search(markdown), LIVE.search(markdown)
    assert "](https://example.org/paper)" in markdown  # a web page is still a link


def test_the_chat_transcript_is_inert(hostile, tmp_path):
    saved = tmp_path / "chat.md"
    result = hostile("chat", "--llm", "none", input="Which papers train spiking networks on "
                     f"event cameras?\n/save {saved}\n")
    assert result.exit_code == 0, result.output
    transcript = saved.read_text(encoding="utf-8")
    assert "evil-1" in transcript and not LIVE.search(transcript), LIVE.search(transcript)


def test_the_bibtex_export_links_only_web_pages(hostile):
    bib = hostile("papers", "--format", "bibtex").stdout
    assert "javascript:" not in bib.split("abstract")[0]  # no url field from a record's script
    assert not re.search(r"url\s*=\s*\{javascript", bib, re.IGNORECASE)
    assert re.search(r"url\s*=\s*\{https://example.org/paper\}", bib)
