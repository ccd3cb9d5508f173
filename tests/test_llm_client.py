"""The LLM client (ragqa.models.llm.ChatLLM) on the `openai` SDK, against the loopback server:
each call returns its own Reply (text, finish reason, the server's token counts), one client
serves many threads, a request field the server refuses is dropped once and for all, and the
summaries send RAGQA_LLM_CONCURRENCY requests at once."""

from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from ragqa.config import load_settings
from ragqa.models import Reply as ModelReply
from ragqa.models.llm import MAX_ANSWER_TOKENS, ChatLLM

from .helpers.llm_server import Reply, prompt_of, rough_tokens

pytestmark = pytest.mark.server


def _client(tmp_path, server, **env: str) -> ChatLLM:
    return ChatLLM(load_settings({"RAGQA_HOME": str(tmp_path), "RAGQA_ENV_FILE": "/nonexistent",
                                  "OPENAI_BASE_URL": server.url, "RAGQA_LLM_RETRIES": "0",
                                  **env}))


def test_complete_returns_the_reply_with_its_finish_reason_and_counts(tmp_path, llm_server):
    llm_server.reply = lambda body: Reply("cut here", finish_reason="length")
    reply = _client(tmp_path, llm_server).complete("Say something.")
    assert reply == ModelReply("cut here", "length", {
        "prompt_tokens": rough_tokens("Say something."),
        "completion_tokens": rough_tokens("cut here")})
    body = llm_server.requests[-1]["body"]
    # an OpenAI-compatible server reads max_tokens (the official API: max_completion_tokens)
    assert body["max_tokens"] == MAX_ANSWER_TOKENS and "max_completion_tokens" not in body
    assert body["temperature"] == 0.0 and not body.get("stream")


def test_a_stream_yields_deltas_then_the_whole_reply(tmp_path, llm_server):
    llm_server.reply = lambda body: Reply("one two three")
    stream = _client(tmp_path, llm_server).stream("Count.")
    assert stream.reply is None
    deltas = list(stream)
    assert "".join(deltas) == "one two three " and len(deltas) == 3
    assert stream.reply.text == "one two three " and stream.reply.finish_reason == "stop"
    assert stream.reply.usage == {"prompt_tokens": rough_tokens("Count."),
                                  "completion_tokens": rough_tokens("one two three ")}
    assert llm_server.requests[-1]["body"]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("field", ["stream_options", "temperature"])
def test_a_field_the_server_refuses_is_dropped_once_and_for_all(tmp_path, llm_server, field):
    def reply(body):
        if field in body:
            return Reply(status=400, error_message=f"Unsupported parameter: '{field}'")
        return Reply("fine")

    llm_server.reply = reply
    client = _client(tmp_path, llm_server)
    assert "".join(client.stream("First.")) == "fine "
    assert "".join(client.stream("Second.")) == "fine "
    assert client.complete("Third.").text == "fine"
    sent = [field in r["body"] for r in llm_server.requests]
    assert sent == [True, False, False, False]  # refused once, never sent again


def test_a_server_that_wants_max_completion_tokens_gets_it(tmp_path, llm_server):
    """OpenAI's reasoning models, reached through a base URL (a proxy, Azure)."""
    def reply(body):
        if "max_tokens" in body:
            return Reply(status=400, error_message="Unsupported parameter: 'max_tokens' is not "
                         "supported with this model. Use 'max_completion_tokens' instead.")
        return Reply("fine")

    llm_server.reply = reply
    client = _client(tmp_path, llm_server)
    assert client.complete("First.").text == "fine"
    assert "".join(client.stream("Second.")) == "fine "
    limits = [(r["body"].get("max_tokens"), r["body"].get("max_completion_tokens"))
              for r in llm_server.requests]
    assert limits == [(MAX_ANSWER_TOKENS, None), (None, MAX_ANSWER_TOKENS),
                      (None, MAX_ANSWER_TOKENS)]


def test_the_official_api_is_asked_with_max_completion_tokens(tmp_path):
    client = ChatLLM(load_settings({"RAGQA_HOME": str(tmp_path), "RAGQA_ENV_FILE": "/x",
                                    "OPENAI_API_KEY": "sk-test"}))
    request = client._request("Hello.", 10)
    assert request["max_completion_tokens"] == 10 and "max_tokens" not in request
    assert str(client._client.base_url).startswith("https://api.openai.com/v1")


def test_the_environment_s_openai_organization_is_never_sent(tmp_path, llm_server,
                                                              monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-from-the-environment")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-from-the-environment")
    llm_server.reply = lambda body: Reply("fine")
    assert _client(tmp_path, llm_server).complete("Hello.").text == "fine"
    headers = {k.lower(): v for k, v in llm_server.requests[-1]["headers"].items()}
    assert "openai-organization" not in headers and "openai-project" not in headers


def test_a_stream_left_early_closes_the_connection(tmp_path, llm_server):
    """A caller that stops reading (an interrupted notebook cell, a web client gone) ends the
    request: the server stops writing an answer no one reads."""
    llm_server.reply = lambda body: Reply(" ".join(["word"] * 60), chunk_delay=0.05)
    stream = _client(tmp_path, llm_server).stream("Talk.")
    for _ in stream:
        break
    deadline = time.monotonic() + 10
    while not llm_server.chunks_sent and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llm_server.streams_left == 1 and llm_server.chunks_sent[0] < 30
    assert stream.reply is None


def test_another_400_is_an_error_not_a_retry_without_fields(tmp_path, llm_server):
    llm_server.reply = lambda body: Reply(status=400, error_message="the prompt is too long")
    from ragqa.errors import LLMError

    with pytest.raises(LLMError, match="failed with HTTP 400"):
        _client(tmp_path, llm_server).complete("Hello.")
    assert len(llm_server.requests) == 1


def test_one_client_serves_many_threads_each_its_own_reply(tmp_path, llm_server):
    def reply(body):
        number = re.search(r"\d+", prompt_of(body)).group()
        return Reply(f"answer {number} " + "word " * int(number),
                     finish_reason="length" if int(number) % 2 else "stop", delay=0.05)

    llm_server.reply = reply
    client = _client(tmp_path, llm_server)

    def ask(n: int) -> tuple[int, ModelReply]:
        if n % 3 == 0:
            stream = client.stream(f"Question {n}.")
            for _ in stream:
                pass
            return n, stream.reply
        return n, client.complete(f"Question {n}.")

    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(ask, range(1, 17)))
    assert llm_server.max_chats_in_flight > 1
    for n, got in replies:
        assert got.text.startswith(f"answer {n} ") and got.text.count("word") == n
        assert got.finish_reason == ("length" if n % 2 else "stop")
        assert got.usage["completion_tokens"] == rough_tokens(got.text)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_summaries_send_as_many_requests_at_once_as_configured(seeded, llm_server,
                                                               concurrency):
    def reply(body):
        prompt = prompt_of(body)
        if "name" in prompt.lower() and "theme" in prompt.lower() and len(prompt) < 4000:
            return Reply("Speech models", delay=0.3)
        return Reply("These papers study speech [1].", delay=0.3)

    llm_server.reply = reply
    result = seeded("summarize", "speech", "--json", OPENAI_BASE_URL=llm_server.url,
                    RAGQA_LLM_CONCURRENCY=str(concurrency), RAGQA_LLM_RETRIES="0")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert len(summary["themes"]) >= 2 and summary["mode"] == "llm"
    if concurrency == 1:
        assert llm_server.max_chats_in_flight == 1
    else:
        assert 1 < llm_server.max_chats_in_flight <= concurrency
