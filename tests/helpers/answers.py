"""`ragqa ask` through the CLI, and the environment of an LLM on the loopback server."""

from __future__ import annotations

import json
import re

from ragqa.config import load_settings
from ragqa.index.store import Store
from ragqa.models.encoders import make_encoder
from ragqa.retrieval.retriever import Retriever

CANARY = "sk-test-canary-7f3a9c1e5b2d4680"


def _ask(ragqa, *args: str, **env: str) -> dict:
    result = ragqa("ask", *args, "--json", **env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _source_numbers(prompt: str) -> dict[str, int]:
    """title -> n, read from the sources block of a prompt."""
    return {title: int(n) for n, title in re.findall(r'<source n="(\d+)" title="([^"]*)"', prompt)}


def _llm_env(server, **extra: str) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": CANARY,
            "RAGQA_LLM_MODEL": "loopback-model", "RAGQA_LLM_RETRIES": "0",
            "RAGQA_SCREEN": "off", **extra}


def _retriever(home, server, **extra: str) -> Retriever:
    settings = load_settings({"RAGQA_HOME": str(home), "RAGQA_ENV_FILE": "/x",
                              **_llm_env(server), **extra})
    return Retriever(Store(settings, "default", make_encoder(settings)))
