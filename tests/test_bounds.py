"""Bounded inputs and state: a line too long to be a record is never read into memory (a 60 KB
`.jsonl.gz` that unpacks to a 20 MB line held 411 MB to read, and more than 1.2 GB and 18 minutes
to ingest), a text over the limit is cut with a notice, a file read whole stops at its limit, the
saved chat sessions are at most RAGQA_CHAT_MAX_SESSIONS (and RAGQA_CHAT_SESSION_DAYS old), a
turn opens its own session's file and lists no folder, and a server's table of session locks
holds the turns running, not every session it has seen."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragqa.sources.paper import MAX_TEXT_CHARS, MAX_TITLE_CHARS
from ragqa.sources.plain import MAX_LINE_BYTES, MAX_WHOLE_BYTES, too_long

from .conftest import REPO

GOOD = [
    {"id": "good-1", "title": "Full-duplex speech agents", "abstract": "We present a full-duplex "
     "spoken dialogue agent that listens while it speaks and answers in real time."},
    {"id": "good-2", "title": "One-hour diffusion", "abstract": "We propose a diffusion model for "
     "image generation that trains in one hour on a single GPU with a new noise schedule."},
]
GIANT_CHARS = 20 * 1024 * 1024  # of one abstract: gzip makes them ~60 KB
_FILLER = "all work and no play makes jack a dull boy. " * 1024


def _write_filler(out, chars: int) -> None:
    """`chars` characters of text without a newline, written a piece at a time."""
    for _ in range(chars // len(_FILLER)):
        out.write(_FILLER)
    out.write(_FILLER[:chars % len(_FILLER)])


def _hostile(path: Path, chars: int = GIANT_CHARS) -> tuple[Path, int]:
    """A file of the two good records with a record of one `chars`-long abstract between them,
    in the format its name says; and the line the giant record is on."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as out:
        if ".jsonl" in path.name:
            out.write(json.dumps(GOOD[0]) + '\n{"id": "giant", "title": "Giant", "abstract": "')
            _write_filler(out, chars)
            out.write('"}\n' + json.dumps(GOOD[1]) + "\n")
            return path, 2
        if ".csv" in path.name:
            out.write(f'id,title,abstract\n{_csv_row(GOOD[0])}giant,Giant,"')
            _write_filler(out, chars)
            out.write(f'"\n{_csv_row(GOOD[1])}')
            return path, 3
        out.write(f"ICML 2026 Papers\n\n{GOOD[0]['abstract']}\n\n")
        _write_filler(out, chars)
        out.write(f"\n\n{GOOD[1]['abstract']}\n")
        return path, 5


def _csv_row(record: dict) -> str:
    return f'{record["id"]},{record["title"]},"{record["abstract"]}"\n'


# Reads `argv[1]` with --skip-bad after a read of `argv[2]` (the same format, good records only,
# so that every module the read needs is loaded), with the address space limited to what the
# process maps by then plus `argv[3]` bytes: a read that held the giant line fails.
_READ_BOUNDED = """
import json, resource, sys
from pathlib import Path
from ragqa.sources import read_sources

read_sources([Path(sys.argv[2])])
with open("/proc/self/statm") as statm:
    mapped = int(statm.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (mapped + int(sys.argv[3]),
                                        resource.getrlimit(resource.RLIMIT_AS)[1]))
try:
    report = read_sources([Path(sys.argv[1])], skip_bad=True)
except MemoryError:
    print(json.dumps({"error": "out of memory: the read held more than its limit"}))
except Exception as exc:
    print(json.dumps({"error": str(exc)}))
else:
    print(json.dumps({"papers": [p.paper_id for p in report.papers],
                      "skipped": [str(e) for e in report.skipped], "tallies": report.tallies}))
"""
HEADROOM = 128 << 20  # bytes of address space the bounded read may add


def _read_bounded(path: Path, good: Path, headroom: int = HEADROOM) -> dict:
    done = subprocess.run([sys.executable, "-c", _READ_BOUNDED, str(path), str(good),
                           str(headroom)], capture_output=True, text=True, cwd=REPO,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _good_file(path: Path) -> Path:
    """The good records alone, in the format `path`'s name says."""
    if path.suffix == ".txt":
        text = "ICML 2026 Papers\n\n" + "\n\n".join(r["abstract"] for r in GOOD) + "\n"
    elif ".jsonl" in path.name:
        text = "".join(json.dumps(r) + "\n" for r in GOOD)
    else:
        text = "id,title,abstract\n" + "".join(map(_csv_row, GOOD))
    with (gzip.open if path.name.endswith(".gz") else open)(path, "wt", encoding="utf-8") as out:
        out.write(text)
    return path


# ---------------------------------------------------------------- records

@pytest.mark.parametrize("name", ["giant.csv.gz", "giant.txt"])
def test_a_giant_line_is_skipped_unread_in_every_format_read_by_lines(tmp_path, name):
    path, line = _hostile(tmp_path / name)
    read = _read_bounded(path, _good_file(tmp_path / f"good{''.join(Path(name).suffixes)}"))
    assert read.get("skipped") == [str(too_long(path, line))], read
    assert len(read["papers"]) == 2


def test_a_20_mb_line_in_a_small_gz_is_never_read_and_its_neighbours_are(ragqa, home, tmp_path):
    path, line = _hostile(tmp_path / "hostile.jsonl.gz")
    assert path.stat().st_size < 200_000  # a small file that unpacks to 20 MB
    notice = str(too_long(path, line))
    read = _read_bounded(path, _good_file(tmp_path / "good.jsonl.gz"))
    assert read == {"papers": ["good-1", "good-2"], "skipped": [notice], "tallies": {}}

    # A line too long to be a record is bad input: the ingest stops before writing anything,
    # with one line naming file and line ...
    result = ragqa("ingest", str(path), "--quiet")
    assert result.exit_code == 2 and result.stderr == f"ragqa: error: {notice}\n"
    assert not (home / "chroma").exists()
    # ... and --skip-bad ingests the records around it, saying once which one it skipped.
    result = ragqa("ingest", str(path), "--skip-bad", COLUMNS="1000")
    assert result.exit_code == 0, result.output
    assert [said for said in result.stderr.splitlines() if str(path) in said] == [f"  {notice}"]
    listed = json.loads(ragqa("papers", "--json").stdout)["papers"]
    assert sorted(p["paper_id"] for p in listed) == ["good-1", "good-2"]


def test_a_one_line_gzip_bomb_takes_no_memory(tmp_path):
    """Read and dropped in chunks: a line of 200 MB, more than the read may map, is passed over
    as one of 20 MB is."""
    path, line = _hostile(tmp_path / "bomb.jsonl.gz", chars=200 * 1024 * 1024)
    read = _read_bounded(path, _good_file(tmp_path / "good.jsonl.gz"), headroom=64 << 20)
    assert read == {"papers": ["good-1", "good-2"], "skipped": [str(too_long(path, line))],
                    "tallies": {}}


def test_a_text_over_the_limit_is_cut_there_with_one_notice(ragqa, tmp_path):
    sentence = "Full-duplex agents listen while they speak and answer in real time. "
    text = sentence * (MAX_TEXT_CHARS // len(sentence) * 2)  # twice the limit, under a line's
    title = "Listening while speaking " * 100
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps(GOOD[0]) + "\n" + json.dumps(
        {"id": "long", "title": title, "abstract": text}) + "\n", encoding="utf-8")
    assert MAX_TEXT_CHARS < len(text) < MAX_LINE_BYTES and len(title) > MAX_TITLE_CHARS
    result = ragqa("ingest", str(path), COLUMNS="1000")
    assert result.exit_code == 0, result.output
    assert [said for said in result.stderr.splitlines() if "cut" in said] == [
        f"Read through 1 entry with a text over {MAX_TEXT_CHARS:,} characters or a title over "
        f"{MAX_TITLE_CHARS:,} (cut there)"]
    shown = json.loads(ragqa("show", "long", "--json").stdout)
    for kept, whole, limit in ((shown["text"], text, MAX_TEXT_CHARS),
                               (shown["title"], title, MAX_TITLE_CHARS)):
        assert len(kept) <= limit and kept.endswith("…")
        assert whole.startswith(kept[:-1]) and len(kept) > limit - 100  # cut at a word
    report = json.loads(ragqa("ingest", str(path), "--json", "--quiet").stdout)
    assert report["tallies"] == {"cut": 1} and report["added"] == 0  # the same cut, again


def test_a_file_read_whole_stops_at_its_limit(tmp_path):
    """BibTeX (and a JSON array) are parsed whole: a .bib.gz that unpacks to more than
    MAX_WHOLE_BYTES stops, with the file named, before it is all held."""
    path = tmp_path / "bomb.bib.gz"
    comment = "% " + "x" * 1021 + "\n"
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        for _ in range(MAX_WHOLE_BYTES // len(comment) + 2):
            out.write(comment)
    good = tmp_path / "good.bib"
    good.write_text("@article{a, title={A}, abstract={We study full-duplex speech agents that "
                    "listen while they speak.}, year={2024}}\n", encoding="utf-8")
    read = _read_bounded(path, good, headroom=MAX_WHOLE_BYTES + (96 << 20))
    assert read.get("error", "").startswith(
        f"{path}: too large to read whole (over 128 MiB of text)"), read


# ---------------------------------------------------------------- chat sessions

MOLECULES = "Which papers deal with molecules or materials?"


def _sessions(home: Path) -> dict[str, float]:
    return {p.stem: p.stat().st_mtime for p in (home / "chats").glob("*.json")}


def _copies(home: Path, original: str, count: int, start: float, step: float) -> list[str]:
    """`count` more sessions like `original`, the first last continued at `start`, each next
    one `step` seconds later."""
    folder = home / "chats"
    made = []
    for i in range(count):
        session_id = f"20240101-000000-{i:032x}"
        record = json.loads((folder / f"{original}.json").read_text(encoding="utf-8"))
        record["session_id"] = session_id
        path = folder / f"{session_id}.json"
        path.write_text(json.dumps(record), encoding="utf-8")
        os.utime(path, (start + i * step, start + i * step))
        made.append(session_id)
    return made


def test_sessions_beyond_the_cap_go_least_recently_continued_first(seeded, home):
    first = json.loads(seeded("chat", "--json", input=MOLECULES + "\n").stdout)["session_id"]
    day = 86400
    older = _copies(home, first, 6, time.time() - 30 * day, day)  # continued 30 to 25 days ago
    os.utime(home / "chats" / f"{first}.json", (time.time() - 40 * day,) * 2)
    # Continued last, the session started first is kept over newer ones nobody went back to.
    resumed = seeded("chat", "--resume", first, "--json", input="Which of them uses tensors?\n")
    assert resumed.exit_code == 0, resumed.output
    assert len(_sessions(home)) == 7  # continuing a session removes none

    started = json.loads(seeded("chat", "--json", input=MOLECULES + "\n",
                                RAGQA_CHAT_MAX_SESSIONS="4").stdout)["session_id"]
    assert set(_sessions(home)) == {started, first, *older[-2:]}
    listed = json.loads(seeded("chat", "--list", "--json").stdout)
    assert {s["session_id"] for s in listed} == {started, first, *older[-2:]}

    # Sessions not continued for RAGQA_CHAT_SESSION_DAYS go too, under the cap.
    again = json.loads(seeded("chat", "--json", input=MOLECULES + "\n",
                              RAGQA_CHAT_SESSION_DAYS="26").stdout)["session_id"]
    assert set(_sessions(home)) == {again, started, first, older[-1]}


def test_a_turn_opens_its_own_session_and_lists_no_folder(seeded, home, monkeypatch):
    """Over HTTP (the App), every turn found its session by listing all of them and reading
    each one's time: 50,000 sessions cost 0.8 s a turn. Now it opens the file named by its id."""
    from ragqa.app import App
    from ragqa.requests import ChatRequest

    monkeypatch.setenv("RAGQA_HOME", str(home))
    core = App.open()
    first = core.chat(ChatRequest(message=MOLECULES, llm="none"))
    chats = home / "chats"
    _copies(home, first["session_id"], 2000, time.time() - 86400, 1)
    seen: list[tuple[str, str]] = []
    watching = [True]

    def audit(event: str, args: tuple) -> None:
        if watching[0] and event in ("open", "os.scandir", "os.listdir", "glob.glob") and \
                args and isinstance(args[0], str | Path) and str(chats) in str(args[0]):
            seen.append((event, Path(args[0]).name))

    sys.addaudithook(audit)  # hooks stay for the process: `watching` turns it off
    try:
        turn = core.chat(ChatRequest(message="Which of them uses Cartesian tensors?",
                                     session_id=first["session_id"], llm="none",
                                     session_secret=first["session_secret"]))
    finally:
        watching[0] = False
    own = f"{first['session_id']}.json"
    assert turn["turn"] == 2
    assert not [event for event, _ in seen if event != "open"], seen  # no folder listed
    assert {name for _, name in seen} <= {own, own + ".tmp"}, seen
    assert len(_sessions(home)) == 2001  # a turn of a session removes none
    assert len(core._session_locks) == 0  # the turns are over: no lock is kept for them


def test_the_session_lock_table_holds_only_running_turns(tmp_path, monkeypatch):
    """`App._session_locks` kept one lock per session ever seen, for the server's life."""
    import threading

    from ragqa.app import App
    from ragqa.config import load_settings

    monkeypatch.setenv("RAGQA_HOME", str(tmp_path / "home"))
    core = App(load_settings(), "default")
    for i in range(10_000):
        with core._session_lock(f"session-{i}"):
            pass
    assert len(core._session_locks) == 0
    # Still one lock per session while turns hold or wait for it: they run one at a time.
    order: list[str] = []

    def second_turn() -> None:
        with core._session_lock("busy"):
            order.append("second")

    with core._session_lock("busy"):
        waiting = threading.Thread(target=second_turn)
        waiting.start()
        waiting.join(0.2)
        order.append("first")
        assert len(core._session_locks) == 1
    waiting.join(10)
    assert order == ["first", "second"] and len(core._session_locks) == 0
