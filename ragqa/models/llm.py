"""The LLM client: llama-index `OpenAI` for the official API, `OpenAILike` for any other
OpenAI-compatible server (vLLM, llama.cpp server, Ollama, LM Studio). Streaming, timeouts,
retries, and one clear error for every way an endpoint can fail. Prompts are built elsewhere
(answer.py); this module only sends them.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ragqa.config import client_endpoint
from ragqa.errors import LLMError
from ragqa.models import LLM

if TYPE_CHECKING:
    from ragqa.config import Settings

# llama-index logs a WARNING before each retry ("Retrying ... as it raised RateLimitError: <the
# server's error body>"). With no logging configured Python prints it on stderr: a second line
# beside ragqa's one-line error, and one that repeats whatever the server echoed (an API key).
logging.getLogger("llama_index.llms.openai.utils").setLevel(logging.ERROR)


# The longest answer asked for; the prompt's sources are trimmed so that prompt plus this fit
# RAGQA_LLM_CONTEXT (answer.fit_sources).
MAX_ANSWER_TOKENS = 1024
# The longest JSON reply asked for (a screening verdict): its list comes first, so a reply cut
# here still holds it (screening.judge.parse_reply); the quotes after it are what is cut. The
# 1.5B local model once wrote 540 tokens of quotes for ten candidates, at 3 tokens a second.
MAX_JSON_TOKENS = 400


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


def _client_retries(base: type) -> type:
    """A llama-index OpenAI class whose openai client retries `_client_retries` times while
    llama-index itself does not retry (its max_retries, 0, also went to the client), and waits
    `_read_timeout` for data but only `_connect_timeout` to connect."""
    from pydantic import PrivateAttr

    class OneRetryLayer(base):  # type: ignore[misc, valid-type]
        _client_retries: int = PrivateAttr(default=0)
        _timeouts: tuple[float, float] = PrivateAttr(default=(60.0, 60.0))
        _query: dict[str, str] = PrivateAttr(default_factory=dict)  # the base URL's query

        def _get_credential_kwargs(self, is_async: bool = False) -> dict[str, Any]:
            import httpx

            connect, read = self._timeouts
            return {**super()._get_credential_kwargs(is_async),
                    "max_retries": self._client_retries, "default_query": self._query,
                    "timeout": httpx.Timeout(read, connect=connect, write=connect,
                                             pool=connect)}

    return OneRetryLayer


class ChatLLM:
    """Completions from the configured endpoint, streamed or whole."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.model = settings.llm_model
        self._llm = self._build()
        # "length" when the last reply stopped at the model's output limit: a cut answer
        self.last_finish_reason: str | None = None
        # the server's token counts of the last reply, when it sent them
        self.last_usage: dict[str, int] = {}
        # False once the server refused `response_format` (complete_json)
        self._structured_output = True

    def _build(self) -> Any:
        # max_retries=0 turns off llama-index's own retry layer; the openai client under it
        # retries (RAGQA_LLM_RETRIES times, honouring Retry-After). Both layers at once would
        # multiply the attempts: 3 x 3 requests, minutes of silence, for RAGQA_LLM_RETRIES=2.
        # A CPU model may read a long prompt for minutes before its first token: reads wait
        # llm_first_token_timeout; stream() holds the tokens after the first to llm_timeout.
        read = max(self.settings.llm_first_token_timeout, self.settings.llm_timeout)
        key = self.settings.openai_api_key.reveal()
        common: dict[str, Any] = {
            "model": self.settings.llm_model, "timeout": read, "max_tokens": MAX_ANSWER_TOKENS,
            "max_retries": 0, "temperature": 0.0, "api_key": key or "not-needed",
        }
        query: dict[str, str] = {}
        if self.settings.openai_base_url:
            from llama_index.llms.openai_like import OpenAILike

            # Query and credentials apart from the URL (config.ClientEndpoint says why).
            endpoint = client_endpoint(self.settings.openai_base_url, key)
            query = endpoint.query
            llm = _client_retries(OpenAILike)(
                api_base=endpoint.base_url, default_headers=endpoint.headers or None,
                is_chat_model=True, context_window=32768, **common)
        else:
            from llama_index.llms.openai import OpenAI

            llm = _client_retries(OpenAI)(**common)
        llm._client_retries = self.settings.llm_retries
        llm._timeouts = (self.settings.llm_timeout, read)
        llm._query = query
        return llm

    @property
    def _json_llm(self) -> Any:
        """The client for JSON replies: the same endpoint, at most MAX_JSON_TOKENS."""
        if getattr(self, "_json_client", None) is None:
            client = self._llm.model_copy(update={"max_tokens": MAX_JSON_TOKENS})
            client._client_retries, client._timeouts = self._llm._client_retries, \
                self._llm._timeouts
            client._query = self._llm._query
            self._json_client = client
        return self._json_client

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

    def _messages(self, prompt: str) -> list:
        from llama_index.core.llms import ChatMessage

        return [ChatMessage(role="user", content=prompt)]

    def complete(self, prompt: str) -> str:
        """The whole reply, within llm_first_token_timeout (a reply that is not streamed has
        no first token before its last)."""
        try:
            response = self._within(self.settings.llm_first_token_timeout,
                                    lambda: self._llm.chat(self._messages(prompt)))
            text = response.message.content
            self.last_finish_reason = _finish_reason(response)
            self.last_usage = _usage(response)
        except LLMError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure of the endpoint is one error
            raise LLMError(describe_failure(exc, self.settings)) from None
        if text is None:  # an empty reply (a model that wrote nothing): the caller judges it
            return ""
        if not isinstance(text, str):
            raise LLMError(describe_failure(ValueError("no text in the reply"), self.settings))
        return text

    def complete_json(self, prompt: str, schema: dict) -> tuple[str, dict[str, int]]:
        """The reply to a prompt that asks for a JSON object, with `schema` sent as structured
        output (`response_format`); a server that refuses that (HTTP 400 naming it) is asked
        again without, and from then on never with it. Thread-safe: nothing is kept on self
        but that one flag."""
        structured = {"type": "json_schema",
                      "json_schema": {"name": "reply", "schema": schema, "strict": False}}
        while True:
            extra = {"response_format": structured} if self._structured_output else {}
            try:
                response = self._within(self.settings.llm_first_token_timeout,
                                        lambda extra=extra: self._json_llm.chat(
                                            self._messages(prompt), **extra))
            except LLMError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure of the endpoint is one error
                if extra and _refuses_structured_output(exc):
                    self._structured_output = False
                    continue
                raise LLMError(describe_failure(exc, self.settings)) from None
            text = response.message.content
            return (text if isinstance(text, str) else ""), _usage(response)

    def stream(self, prompt: str) -> Iterator[str]:
        """Text deltas as they arrive. The first may take llm_first_token_timeout (the model
        reads the prompt), each next one llm_timeout. A stream that breaks off or stalls
        raises LLMError: the caller must not present what arrived as a complete answer."""
        finished = False
        self.last_finish_reason, self.last_usage = None, {}
        chunks: queue.Queue = queue.Queue()

        def produce() -> None:
            try:
                for chunk in self._llm.stream_chat(self._messages(prompt)):
                    chunks.put(("chunk", chunk))
                chunks.put(("end", None))
            except Exception as exc:  # noqa: BLE001 - every failure of the endpoint is one error
                chunks.put(("error", exc))

        threading.Thread(target=produce, daemon=True, name="llm-stream").start()
        first_wait = max(self.settings.llm_first_token_timeout, self.settings.llm_timeout)
        started = False
        while True:
            try:
                kind, item = chunks.get(timeout=self.settings.llm_timeout if started
                                        else first_wait)
            except queue.Empty:
                raise LLMError(self._stalled(started)) from None
            if kind == "error":
                raise LLMError(describe_failure(item, self.settings)) from None
            if kind == "end":
                break
            reason = _finish_reason(item)
            if reason is not None:
                finished, self.last_finish_reason = True, reason
            self.last_usage = _usage(item) or self.last_usage
            if item.delta:
                started = True
                yield item.delta
        if not finished:  # the connection closed before the server said the answer was done
            where = self.settings.llm_endpoint
            raise LLMError(f"LLM endpoint {where} broke off the answer mid-stream")

    def _within(self, seconds: float, call: Any) -> Any:
        """call() in a thread, given `seconds`: the client's own read timeout is the longest
        of the two waits, so the shorter one is held here."""
        result: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: result.put(_outcome(call)), daemon=True,
                         name="llm-call").start()
        try:
            ok, value = result.get(timeout=max(seconds, 0.001))
        except queue.Empty:
            raise LLMError(self._stalled(started=False)) from None
        if not ok:
            raise value
        return value

    def _stalled(self, started: bool) -> str:
        where = self.settings.llm_endpoint
        if started:
            return (f"LLM endpoint {where} sent no token for {self.settings.llm_timeout:g} s "
                    "mid-answer (RAGQA_LLM_TIMEOUT)")
        return (f"LLM endpoint {where} did not answer within "
                f"{self.settings.llm_first_token_timeout:g} s (RAGQA_LLM_FIRST_TOKEN_TIMEOUT)")


class LocalGGUF:
    """A GGUF model run in-process by llama-cpp-python (`pip install '.[local]'`), no server.
    Optional and not part of CI: llama-cpp-python compiles from source for about ten minutes."""

    last_finish_reason: str | None = None
    last_usage: dict[str, int] = {}  # noqa: RUF012 - llama-cpp-python's stream reports none

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
        self._llm = Llama(model_path=str(path), n_ctx=8192, verbose=False)

    @property
    def description(self) -> str:
        return f"{self.model} (local GGUF)"

    def context_window(self) -> int | None:
        """None: the answer prompt is fitted to RAGQA_LLM_CONTEXT."""
        return None

    def complete(self, prompt: str) -> str:
        return "".join(self.stream(prompt))

    def complete_json(self, prompt: str, schema: dict) -> tuple[str, dict[str, int]]:
        """The reply, unconstrained (the screening parser reads JSON leniently); no counts."""
        return self.complete(prompt), {}

    def stream(self, prompt: str) -> Iterator[str]:
        messages = [{"role": "user", "content": prompt}]
        self.last_finish_reason = None
        try:
            for chunk in self._llm.create_chat_completion(messages=messages, stream=True,
                                                          temperature=0.0):
                choice = chunk["choices"][0]
                self.last_finish_reason = choice.get("finish_reason") or self.last_finish_reason
                delta = choice.get("delta", {}).get("content")
                if delta:
                    yield delta
        except Exception as exc:  # noqa: BLE001
            raise LLMError(f"local model {self.model} failed: {type(exc).__name__}") from None


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


def _outcome(call: Any) -> tuple[bool, Any]:
    try:
        return True, call()
    except Exception as exc:  # noqa: BLE001 - re-raised in the caller's thread
        return False, exc


def _refuses_structured_output(exc: BaseException) -> bool:
    """A 400 that names response_format or a schema: the server offers no structured output
    (older llama.cpp, some proxies)."""
    text = str(getattr(exc, "message", "") or exc).lower()
    return getattr(exc, "status_code", None) == 400 and any(
        word in text for word in ("response_format", "json_schema", "schema", "grammar"))


def _usage(response: Any) -> dict[str, int]:
    usage = getattr(getattr(response, "raw", None), "usage", None)
    if usage is None:
        return {}
    return {name: int(getattr(usage, name, 0) or 0)
            for name in ("prompt_tokens", "completion_tokens")}


def _finish_reason(chunk: Any) -> str | None:
    choices = getattr(getattr(chunk, "raw", None), "choices", None) or []
    return getattr(choices[0], "finish_reason", None) if choices else None


def make_llm(settings: Settings) -> LLM | None:
    """The configured LLM, or None when answers are extractive."""
    if not settings.llm_configured:
        return None
    if settings.llm_gguf and not (settings.openai_base_url or settings.openai_api_key):
        return LocalGGUF(settings)
    return ChatLLM(settings)
