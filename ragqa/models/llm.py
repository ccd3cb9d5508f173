"""The LLM client, on the `openai` SDK: the official API, or any OpenAI-compatible server (vLLM,
llama.cpp server, Ollama, LM Studio). Streaming, timeouts, retries with backoff (the SDK's,
honouring Retry-After), structured output where the server offers it, and one clear error for
every way an endpoint can fail. Each call returns its Reply (text, finish reason, token counts):
one client serves every thread. Prompts are built elsewhere (answer.py); this module only sends
them.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ragqa.config import client_endpoint
from ragqa.errors import LLMError
from ragqa.models import LLM, Deltas, Reply, ReplyStream

if TYPE_CHECKING:
    from ragqa.config import Settings


# The longest answer asked for; the prompt's sources are trimmed so that prompt plus this fit
# RAGQA_LLM_CONTEXT (answer.fit_sources).
MAX_ANSWER_TOKENS = 1024
# The longest JSON reply asked for (a screening verdict): its list comes first, so a reply cut
# here still holds it (screening.judge.parse_reply); the quotes after it are what is cut. The
# 1.5B local model once wrote 540 tokens of quotes for ten candidates, at 3 tokens a second.
MAX_JSON_TOKENS = 400
OPENAI_API = "https://api.openai.com/v1"
# Request fields a server may refuse (HTTP 400 naming them): the request is sent again without
# the field, and the client never sends it again. `response_format`: older llama.cpp and some
# proxies offer no structured output; `temperature`: OpenAI's reasoning models take only the
# default; `stream_options`: servers that predate streamed usage.
OPTIONAL_FIELDS = ("response_format", "temperature", "stream_options")


def describe_failure(exc: BaseException, settings: Settings) -> str:
    """One line for any failure of the endpoint, without secrets."""
    import httpx
    import openai

    where = settings.llm_endpoint
    status = getattr(exc, "status_code", None)
    if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
        what = (f"did not answer within {settings.llm_first_token_timeout:g} s "
                "(RAGQA_LLM_FIRST_TOKEN_TIMEOUT)")
    elif isinstance(exc, openai.APIConnectionError | httpx.TransportError):
        what = "cannot be reached (connection refused or dropped)"
    elif isinstance(exc, openai.AuthenticationError):
        what = "rejected the API key (HTTP 401)"
    elif isinstance(exc, openai.RateLimitError):
        what = "is rate limiting (HTTP 429) and retries ran out (RAGQA_LLM_RETRIES)"
    elif status:
        what = f"failed with HTTP {status}"
    else:
        what = f"sent a reply ragqa cannot read ({type(exc).__name__})"
    message = f"LLM endpoint {where} {what}"
    key = settings.openai_api_key.reveal()
    return message.replace(key, "***") if key else message


class ChatLLM:
    """Chat completions from the configured endpoint, streamed or whole. Thread-safe."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.model = settings.llm_model
        self._client = _openai_client(settings)
        # The official API counts `max_completion_tokens` (its reasoning models refuse
        # `max_tokens`); servers that copy the API read `max_tokens`, older ones only that. A
        # server that refuses `max_tokens` (OpenAI behind a proxy or a base URL) is asked with
        # the other from then on.
        self._limit = "max_tokens" if settings.openai_base_url else "max_completion_tokens"
        self._refused: set[str] = set()  # OPTIONAL_FIELDS this server refused

    @property
    def description(self) -> str:
        return f"{self.model} via {self.settings.llm_endpoint}"

    def context_window(self) -> int | None:
        """The context the server says it has (llama.cpp's server: `n_ctx` in /props), asked
        once; None when it does not say (the OpenAI API, vLLM, Ollama)."""
        if not hasattr(self, "_context"):
            self._context = _served_context(self.settings) if self.settings.openai_base_url \
                else None
        return self._context

    def _request(self, prompt: str, max_tokens: int, **optional: Any) -> dict[str, Any]:
        """The chat request's fields, less those this server refused."""
        optional = {"temperature": 0.0, **optional}
        return {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                self._limit: max_tokens,
                **{k: v for k, v in optional.items() if k not in self._refused}}

    def _create(self, prompt: str, max_tokens: int, **optional: Any) -> Any:
        """One chat completion; a field the server refuses is dropped and the request sent
        again (OPTIONAL_FIELDS)."""
        while True:
            request = self._request(prompt, max_tokens, **optional)
            try:
                return self._client.chat.completions.create(**request)
            except Exception as exc:  # noqa: BLE001 - told by the caller, one line
                # Of the fields this request sent: another thread may have dropped it already.
                refused = _refused_field(exc, [f for f in (*OPTIONAL_FIELDS, "max_tokens")
                                               if f in request])
                if refused is None:
                    raise
                if refused == "max_tokens":
                    self._limit = "max_completion_tokens"
                else:
                    self._refused.add(refused)

    def complete(self, prompt: str) -> Reply:
        """The whole reply, within llm_first_token_timeout (a reply that is not streamed has
        no first token before its last)."""
        return self._whole(lambda: self._create(prompt, MAX_ANSWER_TOKENS))

    def complete_json(self, prompt: str, schema: dict) -> Reply:
        """The reply to a prompt that asks for a JSON object, with `schema` sent as structured
        output (`response_format`) unless the server refused it once."""
        structured = {"type": "json_schema",
                      "json_schema": {"name": "reply", "schema": schema, "strict": False}}
        return self._whole(lambda: self._create(prompt, MAX_JSON_TOKENS,
                                                response_format=structured))

    def _whole(self, call: Callable[[], Any]) -> Reply:
        try:
            response = _within(self.settings.llm_first_token_timeout, call,
                               lambda: self._stalled(started=False))
            choice = response.choices[0]
            text = choice.message.content
        except LLMError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure of the endpoint is one error
            raise LLMError(describe_failure(exc, self.settings)) from None
        if text is not None and not isinstance(text, str):
            raise LLMError(describe_failure(ValueError("no text in the reply"), self.settings))
        # An empty reply (a model that wrote nothing) is "": the caller judges it.
        return Reply(text or "", choice.finish_reason, _usage(response))

    def stream(self, prompt: str) -> ReplyStream:
        """Text deltas as they arrive. The first may take llm_first_token_timeout (the model
        reads the prompt), each next one llm_timeout. A stream that breaks off or stalls
        raises LLMError: the caller must not present what arrived as a complete answer."""
        return ReplyStream(self._deltas(prompt))

    def _deltas(self, prompt: str) -> Deltas:
        chunks: queue.Queue = queue.Queue()
        # Streamed token counts: the official API sends them when asked; other servers either
        # send them unasked or refuse the field once (OPTIONAL_FIELDS).
        options = {"stream": True, "stream_options": {"include_usage": True}}
        stop, opened = threading.Event(), queue.Queue(maxsize=1)

        def produce() -> None:
            try:
                response = self._create(prompt, MAX_ANSWER_TOKENS, **options)
                opened.put(response)
                for chunk in response:
                    if stop.is_set():
                        break
                    chunks.put(("chunk", chunk))
                chunks.put(("end", None))
            except Exception as exc:  # noqa: BLE001 - every failure of the endpoint is one error
                chunks.put(("error", exc))

        threading.Thread(target=produce, daemon=True, name="llm-stream").start()
        try:
            return (yield from self._received(chunks))
        finally:
            # Whatever ended it (the whole answer, a stall, a failure, or a caller that stopped
            # reading): the connection is closed, so that the server stops writing an answer no
            # one reads (billed, or holding a local server's one slot).
            stop.set()
            with contextlib.suppress(queue.Empty, Exception):
                opened.get_nowait().close()

    def _received(self, chunks: queue.Queue) -> Deltas:
        first_wait = max(self.settings.llm_first_token_timeout, self.settings.llm_timeout)
        started, finish_reason, usage = False, None, {}
        while True:
            try:
                kind, chunk = chunks.get(timeout=self.settings.llm_timeout if started
                                         else first_wait)
            except queue.Empty:
                raise LLMError(self._stalled(started)) from None
            if kind == "error":
                raise LLMError(describe_failure(chunk, self.settings)) from None
            if kind == "end":
                break
            usage = _usage(chunk) or usage
            for choice in chunk.choices or []:
                finish_reason = choice.finish_reason or finish_reason
                delta = choice.delta.content if choice.delta else None
                if delta:
                    started = True
                    yield delta
        if finish_reason is None:  # the connection closed before the server said it was done
            where = self.settings.llm_endpoint
            raise LLMError(f"LLM endpoint {where} broke off the answer mid-stream")
        return finish_reason, usage

    def _stalled(self, started: bool) -> str:
        where = self.settings.llm_endpoint
        if started:
            return (f"LLM endpoint {where} sent no token for {self.settings.llm_timeout:g} s "
                    "mid-answer (RAGQA_LLM_TIMEOUT)")
        return (f"LLM endpoint {where} did not answer within "
                f"{self.settings.llm_first_token_timeout:g} s (RAGQA_LLM_FIRST_TOKEN_TIMEOUT)")


def _openai_client(settings: Settings) -> Any:
    """The SDK's client: it retries (RAGQA_LLM_RETRIES times, with exponential backoff and the
    server's Retry-After) a refused connection, a timeout, a 408, 409, 429 or 5xx. A CPU model
    may read a long prompt for minutes before its first token: reads wait
    llm_first_token_timeout (stream() holds the tokens after the first to llm_timeout);
    connecting waits llm_timeout."""
    import httpx
    import openai

    key = settings.openai_api_key.reveal()
    read = max(settings.llm_first_token_timeout, settings.llm_timeout)
    connect = settings.llm_timeout
    options: dict[str, Any] = {
        "api_key": key or "not-needed", "max_retries": settings.llm_retries,
        "timeout": httpx.Timeout(read, connect=connect, write=connect, pool=connect),
        # Named, never read from the environment: the settings say where answers come from.
        "base_url": OPENAI_API, "organization": None, "project": None}
    if settings.openai_base_url:
        # Query and credentials apart from the URL (config.ClientEndpoint says why).
        endpoint = client_endpoint(settings.openai_base_url, key)
        options.update(base_url=endpoint.base_url, default_headers=endpoint.headers or None,
                       default_query=endpoint.query or None)
    client = openai.OpenAI(**options)
    # The SDK fills these from OPENAI_ORG_ID and OPENAI_PROJECT_ID when not given, and sends
    # them as headers to whatever server the base URL names: never read from the environment.
    client.organization = client.project = None
    return client


class LocalGGUF:
    """A GGUF model run in-process by llama-cpp-python (`pip install '.[local]'`), no server.
    Optional and not part of CI: llama-cpp-python compiles from source for about ten minutes.
    Its context is RAGQA_LLM_CONTEXT, the window answer prompts are fitted to."""

    def __init__(self, settings: Settings) -> None:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise LLMError("RAGQA_LLM_GGUF is set but llama-cpp-python is not installed: "
                           "pip install 'ragqa[local]'") from None
        path = settings.llm_gguf
        if path is None or not path.is_file():
            raise LLMError(f"RAGQA_LLM_GGUF names no file: {path}")
        self.settings = settings
        self.model = path.name
        self._llm = Llama(model_path=str(path), n_ctx=settings.llm_context, verbose=False)
        self._lock = threading.Lock()  # one llama.cpp context: one reply at a time

    @property
    def description(self) -> str:
        return f"{self.model} (local GGUF)"

    def context_window(self) -> int | None:
        """RAGQA_LLM_CONTEXT: the context the model was loaded with."""
        return self.settings.llm_context

    def complete(self, prompt: str, max_tokens: int = MAX_ANSWER_TOKENS) -> Reply:
        stream = ReplyStream(self._deltas(prompt, max_tokens))
        for _ in stream:
            pass
        return stream.reply or Reply("")

    def complete_json(self, prompt: str, schema: dict) -> Reply:
        """The reply, unconstrained (the screening parser reads JSON leniently)."""
        return self.complete(prompt, MAX_JSON_TOKENS)

    def stream(self, prompt: str) -> ReplyStream:
        return ReplyStream(self._deltas(prompt, MAX_ANSWER_TOKENS))

    def _deltas(self, prompt: str, max_tokens: int) -> Deltas:
        """The model writes on a thread of its own, holding the one llama.cpp context; a
        caller that stops reading stops it at the next token and never keeps the context."""
        chunks: queue.Queue = queue.Queue()
        stop = threading.Event()
        messages = [{"role": "user", "content": prompt}]

        def produce() -> None:
            try:
                with self._lock:
                    for chunk in self._llm.create_chat_completion(
                            messages=messages, stream=True, temperature=0.0,
                            max_tokens=max_tokens):
                        if stop.is_set():
                            break
                        chunks.put(("chunk", chunk["choices"][0]))
                chunks.put(("end", None))
            except Exception as exc:  # noqa: BLE001 - told in the caller's thread
                chunks.put(("error", exc))

        threading.Thread(target=produce, daemon=True, name="gguf-stream").start()
        finish_reason = None
        try:
            while True:
                kind, choice = chunks.get()
                if kind == "error":
                    raise LLMError(f"local model {self.model} failed: "
                                   f"{type(choice).__name__}") from None
                if kind == "end":
                    break
                finish_reason = choice.get("finish_reason") or finish_reason
                delta = choice.get("delta", {}).get("content")
                if delta:
                    yield delta
        finally:
            stop.set()
        return finish_reason, {}  # llama-cpp-python's stream reports no token counts


def _served_context(settings: Settings) -> int | None:
    import httpx

    # The base URL's query and credentials go as the chat requests send them: glued to the
    # URL as text, `/v1?api-version=x` became `/v1?api-version=x/props`.
    key = settings.openai_api_key.reveal()
    endpoint = client_endpoint(settings.openai_base_url, key)
    headers = {"Authorization": f"Bearer {key}"} if key else endpoint.headers
    try:
        reply = httpx.get(endpoint.root + "/props", params=endpoint.query, headers=headers,
                          timeout=min(settings.llm_timeout, 5.0))
        n_ctx = reply.json()["default_generation_settings"]["n_ctx"] if reply.is_success \
            else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None
    return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None


def _within(seconds: float, call: Callable[[], Any], stalled: Callable[[], str]) -> Any:
    """call() in a thread, given `seconds`: the client's own read timeout is the longest of
    the two waits, so the shorter one is held here."""
    result: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: result.put(_outcome(call)), daemon=True,
                     name="llm-call").start()
    try:
        ok, value = result.get(timeout=max(seconds, 0.001))
    except queue.Empty:
        raise LLMError(stalled()) from None
    if not ok:
        raise value
    return value


def _outcome(call: Callable[[], Any]) -> tuple[bool, Any]:
    try:
        return True, call()
    except Exception as exc:  # noqa: BLE001 - re-raised in the caller's thread
        return False, exc


def _refused_field(exc: BaseException, fields: list[str]) -> str | None:
    """The request field that a 400 names, of `fields`: the server does not offer it."""
    if getattr(exc, "status_code", None) != 400:
        return None
    text = str(getattr(exc, "message", "") or exc).lower()
    if "response_format" in fields and any(
            word in text for word in ("response_format", "json_schema", "schema", "grammar")):
        return "response_format"
    if "max_tokens" in fields and "max_tokens" in text and "max_completion_tokens" in text:
        # Only a server that names the other field (OpenAI's reasoning models: "Use
        # 'max_completion_tokens' instead"): an older server knows no other, and a context
        # error may name max_tokens too.
        return "max_tokens"
    return next((f for f in fields if f in OPTIONAL_FIELDS and f != "response_format"
                 and f in text), None)


def _usage(response: Any) -> dict[str, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return {}
    return {name: int(getattr(usage, name, 0) or 0)
            for name in ("prompt_tokens", "completion_tokens")}


def make_llm(settings: Settings) -> LLM | None:
    """The configured LLM, or None when answers are extractive."""
    if not settings.llm_configured:
        return None
    if settings.llm_gguf and not (settings.openai_base_url or settings.openai_api_key):
        return LocalGGUF(settings)
    return ChatLLM(settings)
