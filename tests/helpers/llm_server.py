"""A small OpenAI-compatible server for the tests, on 127.0.0.1: the real `openai` client talks
HTTP to it, streaming and not (and llama-index's OpenAILike, in tests/test_llama_index.py). A
test sets `server.reply` to decide what each request gets, and reads `server.requests` to see
what ragqa sent.

/v1/embeddings answers with vectors unless `server.embed_reply(n, body)` (n: the 1-based number
of the embeddings request) returns a failing Reply; a Reply of status 200 means vectors after its
`delay`. `replay(...)` answers with the raw replies recorded from a real model
(tests/fixtures/llm/, bench/record_llm.py), and `context_limit` refuses prompts that do not
fit a context window, as llama.cpp's server does. The server records each embeddings
request's batch size and arrival time (`embed_calls`) and the most requests it was answering at
once (`max_in_flight`); `max_chats_in_flight` is the same for chat completions (how many answers
a server let run at once). `seen` holds every request's method, path, query and Authorization
header, GETs (`/props`, `/models`) too: what a client made of its base URL."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    text: str = ""
    status: int = 200  # != 200: an error response with this status
    delay: float = 0.0  # seconds before answering (past the client's timeout: a hang)
    malformed: bool = False  # a 200 whose body is not JSON
    cut_after: int | None = None  # streaming: drop the connection after this many chunks
    headers: dict | None = None
    cut_body: bool = False  # not streaming: send half of the JSON body, then close
    error_message: str = ""  # status != 200: the error body's message (default: scripted)
    finish_reason: str = "stop"  # "length": the reply stopped at the model's output limit
    chunks: list[str] | None = None  # streaming: these deltas exactly (a recorded stream)
    chunk_delay: float = 0.0  # streaming: seconds between two chunks (a model that stalls)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client that gave up (a timeout test) is expected, not an error to print


def prompt_of(body: dict) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def rough_tokens(text: str) -> int:
    """About what a BPE tokenizer (Qwen's, GPT's) makes of a text: a token per 4 characters of
    words, one per digit or mark, one per CJK character."""
    words = sum((len(w) + 3) // 4 for w in re.findall(r"[A-Za-z]+", text))
    others = len(re.findall(r"[^A-Za-z\s]", text))
    return words + others


FIXTURES = Path(__file__).parents[1] / "fixtures" / "llm"
# The prompt a request was built from, told by a line of its template.
PROMPT_MARKERS = {
    "answer": "You are ragqa, a research assistant",
    "condense": "Rewrite the follow-up question",
    "translate": "Translate the following question",
    "theme_name": "Name the theme in",
    "summarize": "You are writing one paragraph",
    "overview": "Write a short overview",
    "screen": "You are screening papers",
}


def prompt_name(body: dict) -> str:
    prompt = prompt_of(body)
    return next((name for name, marker in PROMPT_MARKERS.items() if marker in prompt), "")


def load_fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def replay(*names: str) -> Callable[[dict], Reply]:
    """Replies recorded from a real model (tests/fixtures/llm/NAME.json): each request gets
    the recording of its prompt whose `key` (the question, or theme) it contains, else the next
    recording of the same prompt not yet replayed (a theme whose papers have changed since the
    recording still gets real model text); streamed requests get the recorded stream chunks,
    others the recorded whole reply."""
    recordings = [load_fixture(n) for n in names]
    replayed: list[int] = []

    def chosen(prompt: str, kind: str) -> dict | None:
        same_kind = [i for i, f in enumerate(recordings) if f["prompt"] == kind]
        for i in same_kind:
            if recordings[i].get("key", "") in prompt:
                return recordings[i]
        fresh = [i for i in same_kind if i not in replayed] or same_kind
        if not fresh:
            return None
        replayed.append(fresh[0])
        return recordings[fresh[0]]

    def reply(body: dict) -> Reply:
        prompt, kind = prompt_of(body), prompt_name(body)
        fixture = chosen(prompt, kind)
        if fixture is None:
            return Reply(status=404, error_message=f"no recording for this {kind or 'unknown'} "
                                                   "prompt")
        streamed = bool(body.get("stream")) and fixture.get("stream_chunks")
        text = "".join(fixture["stream_chunks"]) if streamed else fixture["response"]
        return Reply(text, chunks=fixture["stream_chunks"] if streamed else None,
                     finish_reason=fixture.get("finish_reason", "stop"))

    return reply


@dataclass
class Seen:
    """One request as it arrived: where it went and how it authenticated."""

    method: str
    path: str  # without the query
    query: dict[str, list[str]]
    authorization: str | None


@dataclass
class EmbedCall:
    number: int  # 1-based, in arrival order
    size: int  # texts in the request
    started: float  # time.monotonic() on arrival
    status: int = 200


class LoopbackLLM:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.reply: Callable[[dict], Reply] = lambda body: Reply("No reply scripted.")
        self.embed_reply: Callable[[int, dict], Reply | None] = lambda n, body: None
        self.embed_calls: list[EmbedCall] = []
        self.max_in_flight = 0
        # A context window in rough_tokens: a prompt that, with the answer it asks room for
        # (max_tokens), does not fit is refused with HTTP 400, as llama.cpp's server does.
        self.context_limit: int | None = None
        self._in_flight = 0
        self._embed_lock = threading.Lock()
        self.max_chats_in_flight = 0
        self._chats_in_flight = 0
        self._chat_lock = threading.Lock()
        self.seen: list[Seen] = []
        # Streams whose client closed the connection before the answer's end, and the chunks
        # each stream got out before it ended (or was cut).
        self.streams_left = 0
        self.chunks_sent: list[int] = []
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> LoopbackLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def embedded_texts(self) -> int:
        """Texts of the embeddings requests that were answered with vectors."""
        return sum(c.size for c in self.embed_calls if c.status == 200)

    @property
    def prompts(self) -> list[str]:
        return [prompt_of(r["body"]) for r in self.requests if "messages" in r["body"]]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send_json(self, status: int, payload: object, headers: dict | None = None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _send_scripted_failure(self, reply: Reply) -> bool:
                """An error status or a 200 that is not JSON, as the reply asks; False: none."""
                if reply.status != 200:
                    message = reply.error_message or f"scripted failure {reply.status}"
                    self._send_json(reply.status, {"error": {"message": message, "type": "test"}},
                                    reply.headers)
                    return True
                if reply.malformed:
                    data = b"this is not json"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return True
                return False

            def _see(self) -> str:
                """Record the request; its path without the query."""
                url = urlsplit(self.path)
                server.seen.append(Seen(self.command, url.path, parse_qs(url.query),
                                        self.headers.get("Authorization")))
                return url.path

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path = self._see().rstrip("/")
                if path == "/props" and server.context_limit:
                    # llama.cpp's server says its context here
                    self._send_json(200, {"default_generation_settings": {
                        "n_ctx": server.context_limit}})
                elif path.endswith("/models"):
                    self._send_json(200, {"object": "list", "data": [
                        {"id": "loopback-model", "object": "model", "owned_by": "tests"}]})
                else:
                    self._send_json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self._see()
                server.requests.append({"path": self.path, "body": body,
                                        "headers": dict(self.headers)})
                if path.rstrip("/").endswith("/embeddings"):
                    return self._embeddings(body)
                if self._exceeds_context(body):
                    return None
                with server._chat_lock:
                    server._chats_in_flight += 1
                    server.max_chats_in_flight = max(server.max_chats_in_flight,
                                                     server._chats_in_flight)
                try:
                    reply = server.reply(body)
                    if reply.delay:
                        time.sleep(reply.delay)
                finally:
                    # Before answering, as for embeddings: a client that sends its next request
                    # once this one is answered never sees the two counted as overlapping.
                    with server._chat_lock:
                        server._chats_in_flight -= 1
                if self._send_scripted_failure(reply):
                    return None
                if body.get("stream"):
                    return self._stream(body, reply)
                if reply.cut_body:
                    return self._cut_body(body, reply)
                return self._send_json(200, {
                    "id": "chatcmpl-test", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "loopback-model"),
                    "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                                 "message": {"role": "assistant", "content": reply.text}}],
                    "usage": {"prompt_tokens": rough_tokens(prompt_of(body)),
                              "completion_tokens": rough_tokens(reply.text),
                              "total_tokens": rough_tokens(prompt_of(body) + reply.text)},
                })

            def _exceeds_context(self, body: dict) -> bool:
                if server.context_limit is None:
                    return False
                needed = rough_tokens(prompt_of(body)) + int(body.get("max_tokens") or 0)
                if needed <= server.context_limit:
                    return False
                self._send_json(400, {"error": {
                    "code": 400, "type": "exceed_context_size_error",
                    "message": f"the request exceeds the available context size "
                               f"({needed} > {server.context_limit} tokens), try increasing it"}})
                return True

            def _cut_body(self, body: dict, reply: Reply) -> None:
                data = json.dumps({"id": "chatcmpl-test", "object": "chat.completion",
                                   "created": 0, "model": body.get("model", "loopback-model"),
                                   "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                       "role": "assistant", "content": reply.text}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))  # promises all of it
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.connection.shutdown(2)  # the body breaks off halfway
                self.close_connection = True

            def _stream(self, body: dict, reply: Reply) -> None:
                sent = [0]
                try:
                    self._write_stream(body, reply, sent)
                except (BrokenPipeError, ConnectionResetError):
                    server.streams_left += 1
                    self.close_connection = True
                finally:
                    server.chunks_sent.append(sent[0])

            def _write_stream(self, body: dict, reply: Reply, sent: list[int]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                words = reply.chunks if reply.chunks is not None else \
                    [w + " " for w in reply.text.split(" ")]
                for i, word in enumerate(words):
                    if reply.cut_after is not None and i >= reply.cut_after:
                        self.wfile.flush()
                        self.connection.shutdown(2)  # the stream breaks off mid-answer
                        return
                    chunk = {"id": "chatcmpl-test", "object": "chat.completion.chunk",
                             "created": 0, "model": body.get("model", "loopback-model"),
                             "choices": [{"index": 0, "delta": {"content": word},
                                          "finish_reason": None}]}
                    if i and reply.chunk_delay:
                        time.sleep(reply.chunk_delay)
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    sent[0] += 1
                done = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0,
                        "model": body.get("model", "loopback-model"),
                        "choices": [{"index": 0, "delta": {},
                                     "finish_reason": reply.finish_reason}]}
                self.wfile.write(f"data: {json.dumps(done)}\n\n".encode())
                if (body.get("stream_options") or {}).get("include_usage"):
                    # As OpenAI's API streams the counts: one last chunk with no choices.
                    text = "".join(words)
                    usage = {"id": "chatcmpl-test", "object": "chat.completion.chunk",
                             "created": 0, "model": body.get("model", "loopback-model"),
                             "choices": [], "usage": {
                                 "prompt_tokens": rough_tokens(prompt_of(body)),
                                 "completion_tokens": rough_tokens(text),
                                 "total_tokens": rough_tokens(prompt_of(body) + text)}}
                    self.wfile.write(f"data: {json.dumps(usage)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _embeddings(self, body: dict) -> None:
                texts = body.get("input", [])
                texts = [texts] if isinstance(texts, str) else texts
                with server._embed_lock:
                    call = EmbedCall(len(server.embed_calls) + 1, len(texts), time.monotonic())
                    server.embed_calls.append(call)
                    server._in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server._in_flight)
                try:
                    reply = server.embed_reply(call.number, body) or Reply()
                    if reply.delay:
                        time.sleep(reply.delay)
                finally:
                    # Before answering: a client that waits for this answer to send its next
                    # request must never see the two counted as overlapping.
                    with server._embed_lock:
                        server._in_flight -= 1
                call.status = reply.status
                if self._send_scripted_failure(reply):
                    return None
                data = [{"object": "embedding", "index": i,
                         "embedding": [float(len(t) % 7 + 1), float(i + 1), 1.0]}
                        for i, t in enumerate(texts)]
                return self._send_json(200, {"object": "list", "data": data,
                                             "model": body.get("model"),
                                             "usage": {"prompt_tokens": 1, "total_tokens": 1}})

        return Handler
