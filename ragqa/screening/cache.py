"""Verdicts kept per (collection, question, paper, judge), so that a follow-up, a summary of
the same topic or the same question asked again does not pay for them twice.

One SQLite file under the data folder (screening/verdicts.sqlite): several processes (a CLI
and a server) may read and write it at once. The question is normalised (case, spaces, the
final mark) so that a question retyped is the same question.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from ragqa.retrieval.question import topic_of
from ragqa.screening.judge import Verdict

_SCHEMA = """CREATE TABLE IF NOT EXISTS verdicts (
    collection TEXT NOT NULL, question TEXT NOT NULL, paper_id TEXT NOT NULL,
    judge TEXT NOT NULL, accepted INTEGER NOT NULL, quote TEXT NOT NULL,
    PRIMARY KEY (collection, question, paper_id, judge))"""


def normalised_question(question: str) -> str:
    """What a question asks for, as the cache keys it: its topic without the frame ("Which
    papers do X?", "Summarize the papers on X" and "X" are one), case and spaces."""
    return re.sub(r"[\s?？.!。！]+$", "", " ".join(topic_of(question).lower().split()))


class VerdictCache:
    """The verdicts of one collection and one judge."""

    def __init__(self, path: Path, collection: str, judge: str) -> None:
        self.path, self.collection, self.judge = path, collection, judge
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._run(lambda db: db.execute(_SCHEMA))

    def _run(self, work):  # noqa: ANN001, ANN202 - a function of the connection
        """`work(db)` in one transaction of a connection of its own, closed after."""
        with self._lock:
            db = sqlite3.connect(self.path, timeout=30)
            try:
                with db:
                    return work(db)
            finally:
                db.close()

    def get(self, question: str, paper_ids: Iterable[str]) -> dict[str, Verdict]:
        ids = list(paper_ids)
        if not ids:
            return {}
        key = normalised_question(question)

        def read(db: sqlite3.Connection) -> dict[str, Verdict]:
            out: dict[str, Verdict] = {}
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                rows = db.execute(
                    "SELECT paper_id, accepted, quote FROM verdicts WHERE collection = ? AND "
                    f"question = ? AND judge = ? AND paper_id IN ({','.join('?' * len(chunk))})",
                    [self.collection, key, self.judge, *chunk])
                out.update({pid: Verdict(bool(ok), quote) for pid, ok, quote in rows})
            return out

        return self._run(read)

    def put(self, question: str, verdicts: dict[str, Verdict]) -> None:
        key = normalised_question(question)
        rows = [(self.collection, key, pid, self.judge, int(v.accepted), v.quote)
                for pid, v in verdicts.items()]
        self._run(lambda db: db.executemany(
            "INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?)", rows))
