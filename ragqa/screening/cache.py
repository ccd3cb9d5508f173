"""Verdicts kept per exactly what the judge read, so that the same question asked again (a
retry, a second user, a page reload) does not pay for them twice.

The key is what made the verdict, and nothing less (issue 49: a shorter key was poisonable):
- the collection;
- the question as the judge was sent it (spaces collapsed, as the prompt writes it): two
  questions that differ in any word are two keys, so that "Which papers do X: i.e. none,
  reject all?" cannot answer for "Which papers do X?", nor "X, such as crystals?" for "X";
- the paper's id and the hash of the title and text the judge read (a re-ingested paper with a
  new abstract is read again);
- the judge: the endpoint's full address, the model and the prompt's text (hashed, so the
  file holds no address or key), so that another server or prompt is another judge.

One SQLite file under the data folder (screening/verdicts.sqlite): several processes (a CLI and
a server) may read and write it at once. A file of the older, topic-keyed table is dropped at
open: its verdicts may have been poisoned.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from ragqa.screening.judge import Candidate, Verdict

_SCHEMA = """CREATE TABLE IF NOT EXISTS judged (
    collection TEXT NOT NULL, question TEXT NOT NULL, paper_id TEXT NOT NULL,
    content TEXT NOT NULL, judge TEXT NOT NULL, accepted INTEGER NOT NULL, quote TEXT NOT NULL,
    PRIMARY KEY (collection, question, paper_id, content, judge))"""
_OLD_TABLE = "DROP TABLE IF EXISTS verdicts"  # keyed by topic: poisonable (issue 49)


def question_as_sent(question: str) -> str:
    """The question as the screening prompt writes it (prompts/screen.txt's {question})."""
    return " ".join(question.split())


def content_key(candidate: Candidate) -> str:
    """What the judge read of a paper, as a hash: its title and text as the prompt gives them."""
    read = f"{' '.join(candidate.title.split())}\n{' '.join(candidate.text.split())}"
    return hashlib.sha256(read.encode("utf-8")).hexdigest()[:32]


def judge_key(*parts: str) -> str:
    """A judge's identity (endpoint, model, prompt text, ...) as a hash: no secret is stored."""
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:32]


class VerdictCache:
    """The verdicts of one collection and one judge."""

    def __init__(self, path: Path, collection: str, judge: str) -> None:
        self.path, self.collection, self.judge = path, collection, judge
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._run(lambda db: (db.execute(_OLD_TABLE), db.execute(_SCHEMA)))

    def _run(self, work):  # noqa: ANN001, ANN202 - a function of the connection
        """`work(db)` in one transaction of a connection of its own, closed after."""
        with self._lock:
            db = sqlite3.connect(self.path, timeout=30)
            try:
                with db:
                    return work(db)
            finally:
                db.close()

    def get(self, question: str, candidates: Iterable[Candidate]) -> dict[str, Verdict]:
        """The known verdicts on `candidates` for this exact question, by paper id."""
        wanted = {(c.paper_id, content_key(c)) for c in candidates}
        if not wanted:
            return {}
        key, ids = question_as_sent(question), sorted({pid for pid, _ in wanted})

        def read(db: sqlite3.Connection) -> dict[str, Verdict]:
            out: dict[str, Verdict] = {}
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    "SELECT paper_id, content, accepted, quote FROM judged WHERE collection = ? "
                    f"AND question = ? AND judge = ? AND paper_id IN ({marks})",
                    [self.collection, key, self.judge, *chunk])
                out.update({pid: Verdict(bool(ok), quote) for pid, content, ok, quote in rows
                            if (pid, content) in wanted})
            return out

        return self._run(read)

    def put(self, question: str, verdicts: dict[Candidate, Verdict]) -> None:
        key = question_as_sent(question)
        rows = [(self.collection, key, c.paper_id, content_key(c), self.judge, int(v.accepted),
                 v.quote) for c, v in verdicts.items()]
        self._run(lambda db: db.executemany(
            "INSERT OR REPLACE INTO judged VALUES (?, ?, ?, ?, ?, ?, ?)", rows))
