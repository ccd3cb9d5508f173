"""`ragqa serve` as an OpenAI-compatible model: the official `openai` client, pointed at the real
server process, lists the collections as models and gets cited answers (streamed and not),
with the earlier messages as the chat history and the turn object in the `ragqa` field."""

from __future__ import annotations

import json
import re
import shutil

import httpx
import openai
import pytest

from .conftest import FULL_DUPLEX, Ragqa
from .helpers.llm_server import LoopbackLLM, Reply, prompt_of
from .helpers.serve import RagqaServer

pytestmark = pytest.mark.server

KEY = "sk-openai-compat-canary-61d0b7"
TOKEN = "openai-compat-token-canary-2f9e"
PAGE = "http://page.example"
FOLLOW_UP = "Which of them uses retrieval?"


def _scripted(body: dict) -> Reply:
    """The loopback LLM: a condensed question for the condense prompt, an answer otherwise."""
    prompt = prompt_of(body)
    if "<source n=" not in prompt:
        return Reply("Which of Moshi-RAG and τ-Voice uses retrieval?")
    numbers = dict((t, n) for n, t in re.findall(r'<source n="(\d+)" title="([^"]*)"', prompt))
    return Reply(f"Moshi-RAG adds selective retrieval to a full-duplex model "
                 f"[{numbers['Moshi-RAG']}].")


@pytest.fixture(scope="module")
def llm():
    server = LoopbackLLM().start()
    server.reply = _scripted
    yield server
    server.stop()


@pytest.fixture(scope="module")
def served(_seeded_template, tmp_path_factory, llm):
    home = tmp_path_factory.mktemp("openai") / "home"
    shutil.copytree(_seeded_template, home)
    server = RagqaServer(home, "--cors", PAGE, "--token", TOKEN, OPENAI_API_KEY=KEY,
                         OPENAI_BASE_URL=llm.url, RAGQA_LLM_MODEL="loopback-model",
                         RAGQA_LLM_RETRIES="0")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def client(served):
    # The server's token is the client's API key: the client sends it as a bearer token.
    with openai.OpenAI(base_url=f"{served.url}/v1", api_key=TOKEN, max_retries=0) as c:
        yield c


def _extractive(served) -> dict:
    result = Ragqa({"RAGQA_HOME": str(served.home), "RAGQA_LLM": "none"})(
        "ask", FULL_DUPLEX, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _references(text: str) -> list[tuple[int, str, str]]:
    return [(int(n), title, pid) for n, title, pid in
            re.findall(r"^- \[(\d+)\] (.*) \([^()]*, id (\S+)\)$", text, re.M)]


def test_models_are_the_collections(client):
    assert [m.id for m in client.models.list().data] == ["ragqa-default"]


def test_completion_is_the_cited_answer_with_its_references(client, served):
    response = client.chat.completions.create(
        model="ragqa-default", messages=[{"role": "user", "content": FULL_DUPLEX}],
        extra_body={"llm": "none"})
    text = response.choices[0].message.content
    turn = response.model_extra["ragqa"]
    expected = _extractive(served)
    assert turn["answer"] == expected["answer"] and turn["citations"] == expected["citations"]
    assert turn["standalone_question"] == FULL_DUPLEX and turn["session_id"] is None
    assert text.startswith(expected["answer"])
    # The message ends with its references: one line per citation, in order.
    assert text.rstrip().endswith(f"id {expected['citations'][-1]['paper_id']})")
    assert _references(text) == [(c["n"], c["title"], c["paper_id"])
                                 for c in expected["citations"]]
    assert response.choices[0].finish_reason == "stop"


def test_streamed_completion_is_the_same_message(client):
    messages = [{"role": "user", "content": FULL_DUPLEX}]
    whole = client.chat.completions.create(model="ragqa-default", messages=messages,
                                           extra_body={"llm": "none"})
    stream = client.chat.completions.create(model="ragqa-default", messages=messages,
                                            stream=True, extra_body={"llm": "none"})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == whole.choices[0].message.content
    assert len(chunks) >= 3 and chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].model_extra["ragqa"]["citations"] == whole.model_extra["ragqa"]["citations"]
    assert all("ragqa" not in (c.model_extra or {}) for c in chunks[:-1])


def test_earlier_messages_are_the_chat_history(client):
    first = client.chat.completions.create(
        model="ragqa-default", messages=[{"role": "user", "content": FULL_DUPLEX}],
        extra_body={"llm": "none"})
    cited = {c["paper_id"] for c in first.model_extra["ragqa"]["citations"]}
    follow = client.chat.completions.create(model="ragqa-default", extra_body={"llm": "none"},
                                            messages=[
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": FULL_DUPLEX},
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": FOLLOW_UP}])
    turn = follow.model_extra["ragqa"]
    assert turn["question"] == FOLLOW_UP and turn["turn"] == 2
    # "them": the papers the earlier message cited, read back from its references.
    assert "Moshi-RAG" in turn["standalone_question"]
    assert turn["citations"] and {c["paper_id"] for c in turn["citations"]} <= cited


def test_with_an_llm_the_follow_up_is_condensed_and_streamed(client, llm):
    first = client.chat.completions.create(
        model="ragqa-default", messages=[{"role": "user", "content": FULL_DUPLEX}])
    assert first.model_extra["ragqa"]["mode"] == "llm"
    asked = len(llm.requests)
    stream = client.chat.completions.create(model="ragqa-default", stream=True, messages=[
        {"role": "user", "content": FULL_DUPLEX},
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": FOLLOW_UP}])
    chunks = list(stream)
    turn = chunks[-1].model_extra["ragqa"]
    condense_prompt = prompt_of(llm.requests[asked]["body"])
    assert FULL_DUPLEX in condense_prompt and FOLLOW_UP in condense_prompt
    assert turn["standalone_question"] == "Which of Moshi-RAG and τ-Voice uses retrieval?"
    assert [c["title"] for c in turn["citations"]] == ["Moshi-RAG"]
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text.startswith("Moshi-RAG adds selective retrieval to a full-duplex model [1].")
    assert _references(text)[0][1] == "Moshi-RAG"


def test_errors_are_openai_errors(client, served):
    with openai.OpenAI(base_url=f"{served.url}/v1", api_key="wrong", max_retries=0) as other, \
            pytest.raises(openai.AuthenticationError):
        other.models.list()
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="ragqa-nosuch",
                                       messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="ragqa-default",
                                       messages=[{"role": "assistant", "content": "x"}])
    with pytest.raises(openai.UnprocessableEntityError) as invalid:
        client.chat.completions.create(model="ragqa-default", messages="not a list")
    # OpenAI's error object, as its clients read it (message, type, code)
    error = invalid.value.response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_value"
    assert error["message"] == "messages: Input should be a valid list"
    assert invalid.value.code == "invalid_value"  # the client reads the object
    missing = httpx.post(f"{served.url}/v1/chat/completions", headers={
        "Authorization": f"Bearer {TOKEN}"}, json={"model": "ragqa-nosuch", "messages": [
            {"role": "user", "content": "x"}]}).json()["error"]
    assert (missing["type"], missing["code"]) == ("invalid_request_error", "not_found")
    unauthorised = httpx.get(f"{served.url}/v1/models").json()["error"]
    assert (unauthorised["type"], unauthorised["code"]) == ("authentication_error",
                                                            "invalid_api_key")


def test_stream_chunks_share_one_id_and_the_usage_is_counted(client):
    messages = [{"role": "user", "content": FULL_DUPLEX}]
    chunks = list(client.chat.completions.create(model="ragqa-default", messages=messages,
                                                 stream=True, extra_body={"llm": "none"}))
    assert len({c.id for c in chunks}) == 1 and len({c.created for c in chunks}) == 1
    whole = client.chat.completions.create(model="ragqa-default", messages=messages)
    assert whole.model_extra["ragqa"]["mode"] == "llm"
    timings = whole.model_extra["ragqa"]["timings"]
    assert whole.usage.prompt_tokens == timings["prompt_tokens"] > 0
    assert whole.usage.completion_tokens == timings["completion_tokens"] > 0
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens
    assert chunks[-1].usage and chunks[-1].usage.completion_tokens > 0


def test_cors_answers_only_the_origin_it_was_given(served):
    for origin, allowed in ((PAGE, True), ("http://other.example", False)):
        # A preflight carries no token: answered by CORS before the token check.
        preflight = httpx.options(f"{served.url}/v1/chat/completions", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type"})
        assert (preflight.headers.get("access-control-allow-origin") == origin) is allowed
        assert preflight.status_code == (200 if allowed else 400)
        # A request without the token is refused, and the page may read why.
        refused = httpx.get(f"{served.url}/v1/models", headers={"Origin": origin})
        assert refused.status_code == 401 and set(refused.json()) == {"error"}
        assert set(refused.json()["error"]) == {"message", "type", "code", "param"}
        assert (refused.headers.get("access-control-allow-origin") == origin) is allowed


def test_no_secret_in_the_logs(served):
    for secret in (KEY, TOKEN):
        assert secret not in served.stdout and secret not in served.stderr
    assert "Traceback" not in served.stderr
