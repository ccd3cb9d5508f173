"""A large arXiv snapshot streams: reading a 1,000,000-line file for one category holds what it
keeps, not the file (peak RSS of a 200,000-line and a 1,000,000-line read compared, each in its
own process); `ragqa ingest --where/--limit` ingests a slice and reports records read."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

KEPT = 300  # records of the kept category, the same number in every file size

_MEASURE = """
import resource, sys
from pathlib import Path
from ragqa.sources import read_sources
from ragqa.sources.select import Selection
report = read_sources([Path(sys.argv[1])], selection=Selection.parse(["category=cs.CL"]))
print(report.records_read, len(report.papers),
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _snapshot(path: Path, lines: int) -> Path:
    """A gzipped snapshot of `lines` arXiv records, KEPT of them in cs.CL, spread evenly."""
    every = lines // KEPT
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        for i in range(lines):
            category = "cs.CL cs.AI" if i % every == 0 and i // every < KEPT else "math.AG"
            out.write(json.dumps({
                "id": f"{2000 + i // 100000:04d}.{i % 100000:05d}", "authors": "A. Author",
                "title": f"Paper number {i} on\n  algebraic geometry",
                "categories": category, "abstract": f"  We study variety {i} and show it is\n"
                "smooth over every field of characteristic zero, with examples.\n",
                "versions": [{"version": "v1", "created": "Mon, 2 Jan 2023 10:00:00 GMT"}],
                "authors_parsed": [["Author", "A.", ""]], "update_date": "2023-01-02"}) + "\n")
    return path


def _peak(path: Path) -> tuple[int, int, int]:
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], capture_output=True,
                          text=True, cwd=REPO, timeout=300, check=True)
    read, kept, rss_kb = map(int, done.stdout.split())
    return read, kept, rss_kb


@pytest.mark.slow
def test_reading_a_million_line_snapshot_holds_the_slice_not_the_file(tmp_path):
    small = _peak(_snapshot(tmp_path / "small.jsonl.gz", 200_000))
    large = _peak(_snapshot(tmp_path / "large.jsonl.gz", 1_000_000))
    print("peak RSS, KB: 200k lines", small[2], "1M lines", large[2])
    assert small[:2] == (200_000, KEPT) and large[:2] == (1_000_000, KEPT)
    # Five times the file, the same peak (within 10 % and a few MB of allocator noise).
    assert large[2] <= small[2] * 1.10 + 8_000, (small, large)


def test_ingest_where_and_limit_ingest_a_slice(ragqa):
    path = REPO / "tests" / "fixtures" / "sources" / "arxiv_slice.jsonl"
    result = ragqa("ingest", str(path), "--where", "category=cs.CL", "--where", "year>=2023",
                   "--quiet", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["records_read"], report["added"], report["papers_total"]) == (5, 3, 3)
    listed = json.loads(ragqa("papers", "--json").stdout)["papers"]
    assert sorted(p["paper_id"] for p in listed) == ["2303.07777", "2305.01234", "2401.09999"]
    result = ragqa("ingest", str(path), "--limit", "1", "--quiet", "--json")
    report = json.loads(result.stdout)
    assert report["added"] == 0  # the first record is already in
    assert report["not_in_sources"] == 0  # the others are still in the file: no --prune hint
    assert report["papers_total"] == 3
    for bad in (["--where", "author=Ada"], ["--where", "year>=soon"], ["--limit", "2",
                                                                         "--prune"]):
        result = ragqa("ingest", str(path), *bad, "--quiet")
        assert result.exit_code == 2 and result.stderr.startswith("ragqa: error: --"), bad
        assert len(result.stderr.strip().splitlines()) == 1


def test_a_bad_record_in_a_new_format_stops_ingest_before_anything_is_written(ragqa, home):
    fixtures = REPO / "tests" / "fixtures" / "sources"
    for name, line in (("arxiv_bad.jsonl", 3), ("bad.bib", 9), ("openreview_bad.json", 49)):
        result = ragqa("ingest", str(fixtures / "zotero.bib"), str(fixtures / name),
                       "--quiet")
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"ragqa: error: {fixtures / name}:{line}: ")
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
        assert not (home / "chroma").exists()  # read fully before the store is opened
    result = ragqa("ingest", str(fixtures / "arxiv_bad.jsonl"), str(fixtures / "bad.bib"),
                   "--skip-bad", "--quiet", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["added"], report["skipped_bad"]) == (4, 3)


def test_a_snapshot_without_the_categories_column_still_filters(tmp_path):
    """BM25 snapshots written before the column existed filter from each paper's metadata."""
    import sqlite3

    from ragqa.index import lexical
    from ragqa.sources import read_sources

    papers = read_sources([REPO / "tests" / "fixtures" / "sources" / "arxiv_slice.jsonl"]).papers
    folder = lexical.write_snapshot(tmp_path, papers, "fp", None)
    index = lexical.LexicalIndex(folder, "fp")
    with_column = index.indices_matching(None, None, None, "cs.CL").tolist()
    index.close()
    with sqlite3.connect(folder / "papers.sqlite") as db:
        db.execute("ALTER TABLE papers DROP COLUMN categories")
    index = lexical.LexicalIndex(folder, "fp")
    assert index.indices_matching(None, None, None, "cs.CL").tolist() == with_column
    assert [papers[i].paper_id for i in with_column] == ["2305.01234", "2401.09999",
                                                         "2303.07777"]
    assert index.indices_matching(None, 2023, None, "cs.cl").tolist() == [0, 4]
