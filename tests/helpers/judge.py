"""A judge on the loopback server: replies to screening prompts (prompts/screen.txt) with the
candidates a test accepts, and to answer prompts with one cited sentence per source."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from .llm_server import Reply, prompt_name, prompt_of

_BLOCK = re.compile(r"^\[(\d+)\] (.*)$", re.M)
_SOURCE = re.compile(r'<source n="(\d+)" title="([^"]*)"[^>]*>\n(.*?)\n</source>', re.S)


def candidates(prompt: str) -> dict[int, str]:
    """n -> title, as the screening prompt lists them."""
    return {int(n): title for n, title in _BLOCK.findall(prompt)}


def screening_prompts(server) -> list[str]:  # noqa: ANN001 - LoopbackLLM
    return [p for p in server.prompts if "You are screening papers" in p]


def written_answer(prompt: str) -> str:
    """One sentence per source, cited: what a model that lists every source writes."""
    return "\n".join(f"- {title} is about the question's topic [{n}]."
                     for n, title, _ in _SOURCE.findall(prompt))


def judge(accept: Callable[[str], bool], verdict: Callable[[list[int], dict[int, str]], str]
          | None = None) -> Callable[[dict], Reply]:
    """A reply function: a screening prompt gets {"relevant": [the accepted numbers]} (or what
    `verdict(numbers, titles)` makes of them), any other prompt a cited list of its sources."""

    def reply(body: dict) -> Reply:
        prompt = prompt_of(body)
        if prompt_name(body) != "screen":
            return Reply(written_answer(prompt))
        titles = candidates(prompt)
        numbers = [n for n, title in titles.items() if accept(title)]
        return Reply(verdict(numbers, titles) if verdict else json.dumps({"relevant": numbers}))

    return reply
