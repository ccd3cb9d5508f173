"""The verdict cache's share on repeated questions: what a second asking reads from the cache
instead of paying the judge for (issue 49 keyed the cache by exactly what the judge read).

For each question of bench/lists/seeds.questions.jsonl, over the seeds: ask it; ask it again
word for word (a retry, a second user); ask it retyped (lower case, doubled spaces, no "?");
summarize its topic. Each step's `screening.cached / screening.candidates` is summed over the
questions. The judge is a loopback OpenAI-compatible server that accepts the candidates sharing
a word of five letters or more with the question (the share does not depend on its accuracy).

    python bench/lists/cache_share.py                      # this checkout
    python bench/lists/cache_share.py --repo /tmp/base     # another checkout (e.g. a worktree
                                                           # of the commit before), same venv
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = ("first", "again", "retyped", "summary of the topic")
_BLOCK = re.compile(r"^\[(\d+)\] ([^\n]*)\n([^\n]*)", re.M)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]{5,}", text.lower())}


def _reply(prompt: str) -> str:
    if "You are screening papers" in prompt:
        question = re.search(r"^Question: (.*)$", prompt, re.M)
        wanted, blocks = _words(question.group(1) if question else ""), _BLOCK.findall(prompt)
        return json.dumps({"relevant": [int(n) for n, title, text in blocks
                                        if wanted & _words(title + " " + text)]})
    return " ".join(f"Paper {i} is on the topic [{i}]." for i in
                    range(1, prompt.count("<source ") + 1)) or "A theme."


class _Judge(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        text = _reply(prompt if isinstance(prompt, str) else json.dumps(prompt))
        out = json.dumps({"id": "x", "object": "chat.completion", "created": 0,
                          "model": body.get("model", "m"), "choices": [{
                              "index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                    "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args) -> None:  # noqa: ANN002 - quiet
        pass


def _ragqa(repo: Path, env: dict[str, str], *args: str) -> dict:
    run = subprocess.run([sys.executable, "-c", "from ragqa.faces.cli import main; main()",
                          *args], env={**env, "PYTHONPATH": str(repo)}, cwd=repo,
                         capture_output=True, text=True, check=False)
    if run.returncode:
        raise SystemExit(f"ragqa {' '.join(args)} failed: {run.stderr.strip()[-300:]}")
    return json.loads(run.stdout) if "--json" in args else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=HERE.parents[1])
    args = parser.parse_args()
    sys.path.insert(0, str(args.repo))
    from ragqa.retrieval.question import topic_of

    questions = [json.loads(line)["question"] for line in
                 (HERE / "seeds.questions.jsonl").read_text().splitlines() if line.strip()]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "RAGQA_HOME": home, "RAGQA_ENV_FILE": "/nonexistent",
               "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
               "OPENAI_API_KEY": "not-a-key", "RAGQA_LLM_MODEL": "judge",
               "RAGQA_SCREEN": "auto"}
        _ragqa(args.repo, env, "ingest", "--seeds", "--quiet")
        totals = {step: [0, 0] for step in STEPS}
        for question in questions:
            retyped = "  ".join(question.lower().rstrip("?").split())
            for step, call in zip(STEPS, (("ask", question), ("ask", question),
                                          ("ask", retyped),
                                          ("summarize", topic_of(question))), strict=True):
                screening = _ragqa(args.repo, env, *call, "--json")["screening"] or {}
                totals[step][0] += screening.get("cached", 0)
                totals[step][1] += screening.get("candidates", 0)
    server.shutdown()
    print(f"{len(questions)} questions, {args.repo}")
    for step, (cached, read) in totals.items():
        print(f"  {step:<22} cached {cached:>4} of {read:>4} read ({cached / max(read, 1):.2f})")


if __name__ == "__main__":
    main()
