"""A judge of known accuracy built from the dev sets' judgements, in-process or served on
loopback as an OpenAI-compatible chat endpoint (the interface of docs/screening.md).

Profiles (each verdict is fixed per question and paper by a hash, so that a paper asked about
twice gets the same answer, as from a consistent reader):
- `strong`: accepts a relevant paper (grade 2) 9 times in 10, a partly relevant one (grade 1)
  half the time, any other never (issue 26, 7a);
- `yes-sayer`: the 1.5B local model's rates measured on another year (accepts 45 of 48
  relevant, 60 of 71 not relevant): 0.94, 0.85 and 0.85.

Served, it answers a screening prompt with `{"relevant": [...], "why": {...}}` (the first
sentence of each accepted paper as its quote) and an answer prompt with one cited sentence per
source, so that the product's whole path (openai client, parsing, written answer, citation
check) runs as it does against a real model (bench/lists/screening.py --served).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import eval as lists  # noqa: E402 - bench/lists/eval.py, beside this file

PROFILES = {"strong": (0.9, 0.5, 0.0), "yes-sayer": (0.94, 0.85, 0.85)}


def _draw(*parts: str) -> float:
    digest = hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest()
    return int(digest[:8], 16) / 2 ** 32


class ScriptedJudge:
    """Judge(question, batch) from the judgements of the questions it knows (by their text)."""

    def __init__(self, questions: Sequence[lists.Question], profile: str = "strong") -> None:
        self.by_text = {" ".join(q.text.split()): q for q in questions}
        self.rates = PROFILES[profile]
        self.name = f"scripted-{profile}"
        self.calls = 0
        self._lock = threading.Lock()

    def accepts(self, question: str, paper_id: str) -> bool:
        q = self.by_text[" ".join(question.split())]
        grade = q.grades.get(paper_id, 0)
        return _draw(q.qid, paper_id) < self.rates[2 - grade]

    def judge(self, question: str, batch):  # noqa: ANN001, ANN201 - screening.judge types
        from ragqa.screening.judge import BatchReply, Verdict

        with self._lock:
            self.calls += 1
        return BatchReply({c.paper_id: Verdict(self.accepts(question, c.paper_id))
                           for c in batch})


# ---------------------------------------------------------------- served

_BLOCK = re.compile(r"^\[(\d+)\] (.*)$", re.M)
_QUESTION = re.compile(r"^Question: (.*)$", re.M)
_SOURCE = re.compile(r'<source n="(\d+)"[^>]*>\n(.*?)\n</source>', re.S)


class Served:
    """The scripted judge behind an OpenAI-compatible /v1/chat/completions on loopback."""

    def __init__(self, judge: ScriptedJudge, titles: dict[str, list[str]]) -> None:
        self.judge, self.titles = judge, titles  # normalised title -> paper ids
        self.requests = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> Served:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()

    def reply_to(self, prompt: str) -> str:
        if "You are screening papers" in prompt:
            question = _QUESTION.search(prompt).group(1)
            relevant, why = [], {}
            for number, title in _BLOCK.findall(prompt):
                ids = self.titles.get(" ".join(title.split()).lower(), [])
                if any(self.judge.accepts(question, pid) for pid in ids):
                    relevant.append(int(number))
                    body = prompt.split(f"[{number}] {title}\n", 1)[1].split("\n", 1)[0]
                    why[number] = re.split(r"(?<=[.!?])\s", body, maxsplit=1)[0]
            return json.dumps({"relevant": relevant, "why": why})
        # an answer prompt: one sentence per source, cited
        return "\n".join(f"- {text.split('. ')[0].strip().rstrip('.')} [{n}]."
                         for n, text in _SOURCE.findall(prompt))

    def _handler(self):  # noqa: ANN202
        served = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = "\n".join(m.get("content", "") for m in body["messages"])
                with served.judge._lock:
                    served.requests += 1
                text = served.reply_to(prompt)
                payload = {"id": "x", "object": "chat.completion", "created": 0,
                           "model": body.get("model", ""),
                           "choices": [{"index": 0, "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": text}}],
                           "usage": {"prompt_tokens": len(prompt) // 4,
                                     "completion_tokens": len(text) // 4,
                                     "total_tokens": (len(prompt) + len(text)) // 4}}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def titles_of(retrievers) -> dict[str, list[str]]:  # noqa: ANN001
    """Each paper's title as ragqa stored it (LaTeX made text), to find it in a prompt."""
    out: dict[str, list[str]] = {}
    for retriever in retrievers:
        for paper in retriever.lexical.all_papers():
            out.setdefault(" ".join(paper.title.split()).lower(), []).append(paper.paper_id)
    return out
