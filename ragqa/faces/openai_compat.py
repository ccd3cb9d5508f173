"""The OpenAI-compatible face of `ragqa serve`: `/v1/models` and `/v1/chat/completions`, so that
any OpenAI client (the `openai` package, Open WebUI, LibreChat) talks to ragqa as to a model.

A completion is a chat turn: the last user message is the question, the earlier messages the
conversation it follows (condensed as `ragqa chat` condenses a follow-up). The message text is
the checked answer followed by its references; the turn object (`ragqa chat --json`) rides in an
extra `ragqa` field (of the final chunk when streamed).

Streaming sends the checked answer, not the model's draft: citations are renumbered and
checked only once the draft is whole, and an OpenAI client shows the concatenated deltas as the
message, so a draft's "[7]" could never be corrected. The stream opens at once (the role chunk)
and the answer follows in pieces when it is ready.
"""

import re
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ragqa.answering.messages import CATALOGUE
from ragqa.answering.messages import message as catalogue_message
from ragqa.errors import NotFound, UserError, error_message, http_status
from ragqa.requests import ChatRequest
from ragqa.text import json_text

if TYPE_CHECKING:
    from ragqa.app import App

MODEL_PREFIX = "ragqa-"
# "- [2] Title (file.txt#4, id abc123)": one reference line of an answer's message text.
_REFERENCE = re.compile(r"^- \[(\d+)\] (.*) \(([^()]*), id ([^\s()]+)\)$")
# "- Title (file.txt#4, id abc123)": a folded paper listed below the answer (message_text).
_FOLDED = re.compile(r"^- (?!\[\d+\] )(.*) \(([^()]*), id ([^\s()]+)\)$")
# The references heading in every language of the message catalogue: a client sends back the
# messages it was given, in whichever language each turn was answered.
_REFERENCES_HEADERS = tuple(dict.fromkeys(
    str(texts["chat.references"]) for texts in CATALOGUE.values()))


def message_text(turn: dict) -> str:
    """The answer, then its references, as a chat client shows a message (Markdown). A list's
    folded papers (its tail, which the answer's last line leads into) are listed below it,
    uncited: a chat client has no fold to open."""
    lines = [turn["answer"]]
    cited = {c["paper_id"] for c in turn["citations"]}
    folded = [p for p in turn.get("papers", []) if p.get("tier") == "tail"
              and p["paper_id"] not in cited]
    if folded:
        lines += [""] + [f"- {p['title']} ({p['source']}, id {p['paper_id']})" for p in folded]
    if turn.get("notice"):
        lines += ["", f"*{turn['notice']}*"]
    if turn["citations"]:
        lines += ["", catalogue_message("chat.references", turn.get("language", "English")), ""]
        lines += [f"- [{c['n']}] {c['title']} ({c['source']}, id {c['paper_id']})"
                  for c in turn["citations"]]
    return "\n".join(lines)


def read_message(text: str) -> tuple[str, list[dict]]:
    """An earlier assistant message -> its answer text and the papers its references name (so
    that a follow-up's "them" finds them, as in `ragqa chat`)."""
    head, marker, tail = max((text.rpartition("\n" + header + "\n")
                              for header in _REFERENCES_HEADERS), key=lambda parts: len(parts[0]))
    if not marker:
        return _without_folded(text), []
    citations = []
    for line in tail.splitlines():
        match = _REFERENCE.match(line.strip())
        if match:
            n, title, source, paper_id = match.groups()
            citations.append({"n": int(n), "title": title, "source": source,
                              "paper_id": paper_id})
    return (_without_folded(head.strip()), citations) if citations else (text, [])


def _without_folded(text: str) -> str:
    """The message less the folded papers message_text listed below its answer (lines no
    answer writes: a title, then its source and id in brackets, without a number)."""
    lines = text.split("\n")
    kept = [line for line in lines if not _FOLDED.match(line.strip())]
    if len(kept) == len(lines):
        return text
    out = "\n".join(kept)
    while "\n\n\n" in out:
        out = out.replace("\n\n\n", "\n\n")
    return out.strip()


OPENAI_ERROR_CODES = {400: "bad_request", 401: "invalid_api_key", 404: "not_found",
                      413: "request_too_large", 421: "misdirected_request", 422: "invalid_value",
                      429: "rate_limit_exceeded", 503: "service_unavailable"}


def error_payload(status: int, message: str, path: str = "") -> dict:
    """The JSON body of an error: `{"error": "one line"}`, or under /v1 OpenAI's own shape
    (`{"error": {"message", "type", "code"}}`), which OpenAI clients read."""
    if not path.startswith("/v1/"):
        return {"error": message}
    kind = ("authentication_error" if status == 401 else "invalid_request_error"
            if status < 500 else "server_error")
    return {"error": {"message": message, "type": kind,
                      "code": OPENAI_ERROR_CODES.get(status, "internal_error"), "param": None}}


def _content(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def conversation(messages: list[dict]) -> tuple[list[tuple[str, str, list[dict]]], str]:
    """OpenAI messages -> the earlier (question, answer, citations) turns and the question."""
    talk = [m for m in messages if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
    if not talk or talk[-1].get("role") != "user":
        raise UserError("messages must end with a user message (the question)")
    history: list[tuple[str, str, list[dict]]] = []
    question: str | None = None
    for message in talk[:-1]:
        if message["role"] == "user":
            question = _content(message)
        elif question is not None:  # an answer to the question before it
            history.append((question, *read_message(_content(message))))
            question = None
    return history, _content(talk[-1])


def _completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def usage(turn: dict, text: str) -> dict:
    """Token counts of a turn: the model's own when an LLM wrote it (its server's counts, or
    ragqa's tokenizer's), else the words of the question and of the message (an extractive
    answer runs no model)."""
    timings = turn.get("timings") or {}
    prompt = int(timings.get("prompt_tokens") or len(str(turn.get("question", "")).split()))
    completion = int(timings.get("completion_tokens") or len(text.split()))
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def completion(model: str, turn: dict) -> dict:
    text = message_text(turn)
    return {
        "id": _completion_id(), "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": text}}],
        "usage": usage(turn, text),
        "ragqa": turn,
    }


def _pieces(text: str, size: int = 80) -> Iterator[str]:
    """The message in pieces that end at a space (a client renders them as they come)."""
    while text:
        cut = text.find(" ", size)
        cut = len(text) if cut < 0 else cut + 1
        yield text[:cut]
        text = text[cut:]


def chunks(model: str, turn: dict, cid: str, created: int) -> Iterator[dict]:
    """The chat.completion.chunk objects after the role chunk (the same `cid` and `created`
    as it); the last carries `usage` and `ragqa`."""

    def chunk(delta: dict, finish: str | None = None, **extra: Any) -> dict:
        return {"id": cid, "object": "chat.completion.chunk", "created": created,
                "model": model, "choices": [{"index": 0, "delta": delta,
                                             "finish_reason": finish, "logprobs": None}],
                **extra}

    text = message_text(turn)
    for piece in _pieces(text):
        yield chunk({"content": piece})
    yield chunk({}, "stop", usage=usage(turn, text), ragqa=turn)


def add_openai_routes(api: Any, core: "App", call: Callable) -> None:
    import asyncio

    from fastapi.responses import Response, StreamingResponse
    from pydantic import BaseModel, ConfigDict

    class ChatCompletionBody(BaseModel):
        # OpenAI clients send more (temperature, max_tokens, user, ...): accepted, unused.
        model_config = ConfigDict(extra="allow")
        model: str
        messages: list[dict]
        stream: bool = False
        llm: str = "auto"  # ragqa's own: "none" for the extractive answer

    @api.get("/v1/models", summary="OpenAI-compatible: one model per collection")
    def list_models() -> Any:
        def listing() -> dict:
            names = {core.name} | {c["name"] for c in core.collections()}
            return {"object": "list", "data": [
                {"id": MODEL_PREFIX + name, "object": "model", "created": 0, "owned_by": "ragqa"}
                for name in sorted(names)]}

        return call(listing)

    def prepare(body: ChatCompletionBody) -> Callable[[], dict]:
        """Checks the request (before a stream opens, so that a bad one gets its status)."""
        if not body.model.startswith(MODEL_PREFIX):
            raise NotFound(f"no model {body.model!r}: models are ragqa-<collection> "
                           "(GET /v1/models)")
        history, question = conversation(body.messages)
        request = ChatRequest(message=question, llm=body.llm)
        target = core.other(body.model[len(MODEL_PREFIX):])
        return lambda: target.chat_history(history, request)

    @api.post("/v1/chat/completions", summary="OpenAI-compatible chat completion (a chat turn)")
    def chat_completions(body: ChatCompletionBody) -> Any:
        answer = call(prepare, body)
        if isinstance(answer, Response):
            return answer  # the request's error
        if not body.stream:
            turn = call(answer)
            return completion(body.model, turn) if isinstance(turn, dict) else turn

        async def events() -> Any:
            cid, created = _completion_id(), int(time.time())
            opening = {"id": cid, "object": "chat.completion.chunk",
                       "created": created, "model": body.model,
                       "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                    "finish_reason": None, "logprobs": None}]}
            yield f"data: {json_text(opening)}\n\n"
            try:
                turn = await asyncio.get_running_loop().run_in_executor(None, answer)
            except Exception as exc:  # noqa: BLE001 - the stream is open: say it in the stream
                failed = error_payload(http_status(exc), error_message(exc), "/v1/")
                yield f"data: {json_text(failed)}\n\n"
                return
            for item in chunks(body.model, turn, cid, created):
                yield f"data: {json_text(item)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})
