"""Record a real model's raw replies to ragqa's own prompts, as test fixtures.

A recording proxy on 127.0.0.1 stands between ragqa and the real endpoint (OPENAI_BASE_URL, e.g.
the local model of bench/local_llm.sh): every chat request passes through unchanged, and the
reply (the whole text, or the stream's deltas as they came) is written to tests/fixtures/llm/
as JSON with the name of the prompt it answers (`answer`, `condense`, `translate`,
`theme_name`, `summarize`, `overview`), a `key` (the text of the prompt that tells a replay
which request it belongs to) and the prompt itself. tests/helpers/llm_server.py `replay()`
serves them back in CI, where the real model never runs.

    bench/local_llm.sh serve
    OPENAI_BASE_URL=http://127.0.0.1:8088/v1 RAGQA_LLM_MODEL=qwen2.5-coder-1.5b-instruct-q4_k_m \
        python bench/record_llm.py [--only ask_list ...]

(RAGQA_LLM_MODEL is the name the fixtures record as the model: set it to the served one.)

It ingests the seeds into a temporary data folder and records: `ask` for a list question, a fact
question and a topic no seed covers, each streamed and not; a chat follow-up (`condense`); a
summary (theme names, paragraphs, overview); a Chinese question (`translate`); these with
screening off. `screen` records the screening batches of the seeds' list and absent questions
(bench/lists/seeds.questions.jsonl) into one fixture, tests/fixtures/llm/screen_seeds.json,
with the settings they were made with (tests/test_screening.py replays them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers.llm_server import FIXTURES, prompt_name, prompt_of  # noqa: E402

LIST_QUESTION = "Which papers do full-duplex speech?"
FACT_QUESTION = "How many tasks does τ-Voice evaluate?"
ABSENT_QUESTION = "Which papers study protein structure design?"
# the local model answered this one with numbered titles and nothing else
TITLES_QUESTION = "Which papers propose benchmarks for audio or voice models?"
CHINESE_QUESTION = "哪些论文研究脉冲神经网络？"
CHAT = ("Which papers study spiking neural networks?", "Which of them uses transformers?")
SUMMARY_TOPIC = "audio and speech"


class Recorder:
    """A proxy that forwards chat requests to `upstream` and keeps each exchange."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.exchanges: list[dict] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                path = self.path.split("/v1", 1)[-1]
                started = time.monotonic()
                exchange = {"prompt": prompt_name(body), "request_prompt": prompt_of(body),
                            "stream": bool(body.get("stream"))}
                with httpx.Client(timeout=httpx.Timeout(1800.0, connect=10.0)) as client, \
                        client.stream("POST", recorder.upstream + path, json=body) as reply:
                    self.send_response(reply.status_code)
                    self.send_header("Content-Type", reply.headers.get("content-type", ""))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    raw = b""
                    for data in reply.iter_raw():
                        raw += data
                        self.wfile.write(data)
                        self.wfile.flush()
                self.close_connection = True
                exchange["seconds"] = round(time.monotonic() - started, 1)
                exchange.update(_parse(raw, exchange["stream"]))
                recorder.exchanges.append(exchange)

        return Handler


def _parse(raw: bytes, stream: bool) -> dict:
    """The reply's text (and stream deltas), finish reason and usage, as the server sent them."""
    if not stream:
        payload = json.loads(raw)
        choice = payload["choices"][0]
        return {"response": choice["message"]["content"], "finish_reason":
                choice.get("finish_reason"), "usage": payload.get("usage")}
    chunks, finish, usage = [], None, None
    for line in raw.decode("utf-8").splitlines():
        if not line.startswith("data: ") or line.strip() == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        usage = event.get("usage") or usage
        for choice in event.get("choices", []):
            delta = (choice.get("delta") or {}).get("content")
            if delta:
                chunks.append(delta)
            finish = choice.get("finish_reason") or finish
    return {"response": "".join(chunks), "stream_chunks": chunks, "finish_reason": finish,
            "usage": usage}


def _key(exchange: dict) -> str:
    """The text of the prompt a replay recognises it by."""
    prompt = exchange["request_prompt"]
    patterns = {"answer": r"\nQuestion: (.*)\n", "condense": r"Follow-up question: (.*)\n",
                "translate": r"Question: (.*)\n", "summarize": r'theme "(.*?)"',
                "theme_name": r'<source n="1" title="([^"]*)"',
                "overview": r"literature summary about (.*?)\. Write"}
    match = re.search(patterns.get(exchange["prompt"], r"^$"), prompt)
    return match.group(1) if match else ""


def _save(name: str, exchanges: list[dict], model: str) -> None:
    """One fixture per prompt kind: the streamed and the whole reply of the same request."""
    whole = next((e for e in exchanges if not e["stream"]), None)
    streamed = next((e for e in exchanges if e["stream"]), None)
    first = whole or streamed
    if first is None:
        return
    fixture = {"prompt": first["prompt"], "key": _key(first), "model": model,
               "recorded": time.strftime("%Y-%m-%d"), "request_prompt": first["request_prompt"],
               "response": (whole or streamed)["response"],
               "finish_reason": (whole or streamed)["finish_reason"],
               "usage": (whole or streamed).get("usage"),
               "seconds": (whole or streamed)["seconds"]}
    if streamed:
        fixture["stream_chunks"] = streamed["stream_chunks"]
    FIXTURES.mkdir(parents=True, exist_ok=True)
    path = FIXTURES / f"{name}.json"
    path.write_text(json.dumps(fixture, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"recorded {path.relative_to(REPO)} ({first['prompt']}, "
          f"{len(fixture['response'])} chars)", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="record only these (ask_list, ask_fact, "
                        "ask_absent, ask_titles, translate, condense, summarize, screen)")
    args = parser.parse_args()
    upstream = os.environ.get("OPENAI_BASE_URL")
    if not upstream:
        sys.exit("record_llm: set OPENAI_BASE_URL to the real model's endpoint")
    recorder = Recorder(upstream)
    home = Path(tempfile.mkdtemp(prefix="ragqa-record-"))
    os.environ.update({"RAGQA_HOME": str(home), "OPENAI_BASE_URL": recorder.url,
                       "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "none"),
                       "RAGQA_ENV_FILE": str(home / "no.env"), "RAGQA_LLM_RETRIES": "0",
                       "RAGQA_SCREEN": "off", "RAGQA_LLM_CONCURRENCY": "1"})
    from typer.testing import CliRunner

    from ragqa.answering.answer import answer_question
    from ragqa.answering.chat import ask_in_session, new_session
    from ragqa.answering.summarize import summarize
    from ragqa.config import load_settings
    from ragqa.faces.cli import app
    from ragqa.index.store import Store
    from ragqa.models.encoders import make_encoder
    from ragqa.models.llm import make_llm
    from ragqa.retrieval.retriever import Retriever

    result = CliRunner().invoke(app, ["ingest", "--seeds", "--quiet"])
    assert result.exit_code == 0, result.output
    settings = load_settings()
    model = settings.llm_model
    retriever = Retriever(Store(settings, "default", make_encoder(settings)))
    llm = make_llm(settings)

    def run(name: str, work) -> None:
        """Record what `work` asks; one fixture per distinct prompt, NAME_PROMPT[_i].json."""
        if args.only and name not in args.only:
            return
        start = len(recorder.exchanges)
        work()
        time.sleep(1.0)  # the proxy keeps a stream's exchange after its client has read it
        made = recorder.exchanges[start:]
        for kind in dict.fromkeys(e["prompt"] for e in made):
            groups: dict[str, list[dict]] = {}
            for exchange in (e for e in made if e["prompt"] == kind):
                groups.setdefault(exchange["request_prompt"], []).append(exchange)
            for i, group in enumerate(groups.values(), start=1):
                _save(f"{name}_{kind}" + (f"_{i}" if len(groups) > 1 else ""), group, model)

    def ask_twice(question: str) -> None:
        answer_question(retriever, question, llm=llm)
        answer_question(retriever, question, llm=llm, on_token=lambda token: None)

    run("ask_list", lambda: ask_twice(LIST_QUESTION))
    run("ask_fact", lambda: ask_twice(FACT_QUESTION))
    run("ask_absent", lambda: ask_twice(ABSENT_QUESTION))
    run("ask_titles", lambda: ask_twice(TITLES_QUESTION))
    run("translate", lambda: answer_question(retriever, CHINESE_QUESTION, llm=llm))

    def chat() -> None:
        session = new_session("default")
        for line in CHAT:
            ask_in_session(session, line, retriever, llm)

    run("condense", chat)
    run("summarize", lambda: summarize(retriever, SUMMARY_TOPIC, llm=llm))
    if not args.only or "screen" in args.only:
        record_screening(recorder, retriever, llm, model)


# What the screening recording is made with: short candidate texts and small batches, so that
# the 1.5B CPU model reads each batch in about half a minute.
SCREEN_SETTINGS = {"RAGQA_SCREEN_BATCH": "10", "RAGQA_SCREEN_TOKENS": "60"}


def record_screening(recorder: Recorder, retriever, llm, model: str) -> None:  # noqa: ANN001
    """Every screening batch of the seeds' questions, in one fixture."""
    from ragqa.screening.screen import screener_for

    settings = retriever.store.settings.with_overrides(screen_batch=10, screen_tokens=60)
    retriever.store.settings = settings
    questions = [json.loads(line) for line in
                 (REPO / "bench" / "lists" / "seeds.questions.jsonl").open(encoding="utf-8")]
    start = len(recorder.exchanges)
    for q in questions:
        screener = screener_for(retriever, llm, "auto")
        ranked = retriever.search(q["question"], k=2 * screener.limit, cut=False).hits
        screener.cache = None  # every batch asked, none read from an earlier run
        screener.screen(q["question"], ranked)
        print(f"screened {q['id']}", file=sys.stderr)
    exchanges = [{"key": re.search(r"^Question: (.*)$", e["request_prompt"], re.M).group(1),
                  "request_prompt": e["request_prompt"], "response": e["response"],
                  "usage": e.get("usage"), "seconds": e["seconds"]}
                 for e in recorder.exchanges[start:] if e["prompt"] == "screen"]
    fixture = {"prompt": "screen", "model": model, "recorded": time.strftime("%Y-%m-%d"),
               "settings": SCREEN_SETTINGS, "exchanges": exchanges}
    path = FIXTURES / "screen_seeds.json"
    path.write_text(json.dumps(fixture, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"recorded {path.relative_to(REPO)} ({len(exchanges)} batches)", file=sys.stderr)


if __name__ == "__main__":
    main()
