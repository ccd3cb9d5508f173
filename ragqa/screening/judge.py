"""The judge of a batch of candidates: a protocol any judge meets, and the LLM judge.

The LLM judge sends one chat completion per batch (prompts/screen.txt): the question, then the
candidates as blocks that each begin on a new line with `[n] ` followed by the paper's title as
stored, then its text within RAGQA_SCREEN_TOKENS. The reply is read as a JSON object
`{"relevant": [n, ...]}`, optionally with `"why": {"n": "a sentence of paper n"}`; structured
output asks the server for exactly that where it offers it, and the parser is lenient where it
does not (code fences, text around the object, numbers written as strings). A reply with no
such object is asked again once; a second one raises LLMError naming the batch (the screener
then falls back on the offline list, screen.py), and is never read as "nothing relevant".
Numbers outside the batch are ignored and counted.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ragqa.errors import LLMError
from ragqa.models import LLM
from ragqa.prompts import load_prompt
from ragqa.text import split_sentences

# The reply's schema, sent as structured output (response_format) where the server takes it.
REPLY_SCHEMA = {
    "type": "object",
    "properties": {
        "relevant": {"type": "array", "items": {"type": "integer"}},
        "why": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["relevant"],
}
ATTEMPTS = 2  # a batch whose reply is not a verdict is asked once more


@dataclass(frozen=True)
class Candidate:
    paper_id: str
    title: str
    text: str  # what the judge reads of the paper (its abstract within the token budget)


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    quote: str = ""  # the judge's sentence for an accepted paper, unchecked


@dataclass
class BatchReply:
    verdicts: dict[str, Verdict]  # paper_id -> verdict, for every candidate of the batch
    prompt_tokens: int = 0
    completion_tokens: int = 0
    ignored: int = 0  # numbers in the reply outside the batch
    retried: int = 0  # replies that were not a verdict and were asked again


class Judge(Protocol):
    """Says which candidates of a batch answer the question."""

    #: What the judge is, for the verdict cache's key and for people (a model's name).
    name: str

    def judge(self, question: str, batch: Sequence[Candidate]) -> BatchReply: ...


def candidate_text(title: str, text: str, budget: int, count: Callable[[str], int]) -> str:
    """The abstract's first sentences that fit `budget` tokens beside the title (at least
    the first sentence, so that no candidate is shown as a bare title)."""
    sentences = split_sentences(text) or ([text] if text else [])
    kept, used = [], count(title)
    for sentence in sentences:
        cost = count(sentence)
        if kept and used + cost > budget:
            break
        kept.append(sentence)
        used += cost
    return " ".join(kept)


def candidate_blocks(batch: Sequence[Candidate]) -> str:
    """The candidates as the prompt lists them: `[n] Title` on a line, the text below."""
    return "\n\n".join(f"[{n}] {' '.join(c.title.split())}\n{' '.join(c.text.split())}"
                       for n, c in enumerate(batch, start=1))


@dataclass
class ParsedReply:
    numbers: list[int]
    quotes: dict[int, str] = field(default_factory=dict)
    ignored: int = 0


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)


def _values(text: str):
    """The JSON values a reply may hold its verdict in: a bare list that is the whole reply
    (or the whole of a fenced block), then every object that starts at a `{` (fenced first)."""
    decoder = json.JSONDecoder()
    sources = [*_FENCE.findall(text), text]
    for source in sources:
        stripped = source.strip()
        if stripped.startswith("["):
            try:
                value, end = decoder.raw_decode(stripped)
            except ValueError:
                continue
            if isinstance(value, list) and not stripped[end:].strip():
                yield value
    for source in sources:
        for start, char in enumerate(source):
            if char == "{":
                try:
                    value, _ = decoder.raw_decode(source, start)
                except ValueError:
                    continue
                yield value


def _number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*\[?\s*(\d+)\s*\]?\s*", value)
        return int(match.group(1)) if match else None
    return None


# A reply cut at the output limit: its "relevant" list, written first, is whole.
_CUT_VERDICT = re.compile(r'^\s*(?:```(?:json)?\s*)?\{\s*"relevant"\s*:\s*(\[[^\]]*\])', re.I)


def parse_reply(text: str, size: int) -> ParsedReply | None:
    """The verdict in a reply about a batch of `size`, or None when it holds none: the first
    object with a `relevant` list (or a bare list of numbers) found in it; or, in a reply cut
    short after it, that list."""
    cut = _CUT_VERDICT.match(text or "")
    values = list(_values(text or ""))
    if cut and not any(isinstance(v, dict) and "relevant" in v for v in values):
        with contextlib.suppress(ValueError):
            values.append({"relevant": json.loads(cut.group(1))})
    for value in values:
        if isinstance(value, dict) and isinstance(value.get("relevant"), list):
            listed, why = value["relevant"], value.get("why")
        elif isinstance(value, list) and all(_number(v) is not None for v in value):
            listed, why = value, None
        else:
            continue
        numbers = [n for n in map(_number, listed) if n is not None]
        inside = list(dict.fromkeys(n for n in numbers if 1 <= n <= size))
        return ParsedReply(inside, _quotes(why, size), len(numbers) - len(
            [n for n in numbers if 1 <= n <= size]) + len(listed) - len(numbers))
    return None


def _quotes(why: object, size: int) -> dict[int, str]:
    pairs: list[tuple[object, object]] = []
    if isinstance(why, dict):
        pairs = list(why.items())
    elif isinstance(why, list):
        pairs = [(item.get("n", item.get("number")), item.get("sentence", item.get("why")))
                 for item in why if isinstance(item, dict)]
    out = {}
    for key, sentence in pairs:
        n = _number(key)
        if n is not None and 1 <= n <= size and isinstance(sentence, str) and sentence.strip():
            out[n] = sentence.strip()
    return out


class LLMJudge:
    """The configured LLM as the judge (one chat completion per batch)."""

    def __init__(self, llm: LLM, settings) -> None:  # noqa: ANN001 - config.Settings
        self.llm = llm
        self.name = llm.model
        self.description = llm.description
        self.prompt = load_prompt("screen", settings)

    def judge(self, question: str, batch: Sequence[Candidate]) -> BatchReply:
        prompt = self.prompt.fill(question=" ".join(question.split()),
                                  candidates=candidate_blocks(batch))
        reply = BatchReply({})
        for _ in range(ATTEMPTS):
            answer = self.llm.complete_json(prompt, REPLY_SCHEMA)
            text, usage = answer.text, answer.usage
            reply.prompt_tokens += usage.get("prompt_tokens", 0)
            reply.completion_tokens += usage.get("completion_tokens", 0)
            parsed = parse_reply(text, len(batch))
            if parsed is not None:
                reply.ignored = parsed.ignored
                reply.verdicts = {c.paper_id: Verdict(n in parsed.numbers, parsed.quotes.get(n, ""))
                                  for n, c in enumerate(batch, start=1)}
                return reply
            reply.retried += 1
        first = batch[0].title if batch else ""
        raise LLMError(f"LLM endpoint {self.llm.description} sent no verdict for the screening "
                       f"batch of {len(batch)} candidates starting with \"{first[:60]}\" "
                       f"({ATTEMPTS} tries): no JSON object with \"relevant\"")
