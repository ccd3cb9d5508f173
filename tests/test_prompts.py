"""Prompt files and their placeholders: every bundled prompt fills, and a user's prompt file
(RAGQA_PROMPTS_DIR) that lacks a placeholder or holds an unknown one is refused with a line that
names the file, before any model is called."""

from __future__ import annotations

import pytest

from ragqa.config import load_settings
from ragqa.errors import ConfigError
from ragqa.prompts import PLACEHOLDERS, load_prompt


def _settings(tmp_path, prompts_dir=None):
    env = {"RAGQA_HOME": str(tmp_path / "home"), "RAGQA_ENV_FILE": "/nonexistent"}
    if prompts_dir:
        env["RAGQA_PROMPTS_DIR"] = str(prompts_dir)
    return load_settings(env)


@pytest.mark.parametrize("name", sorted(PLACEHOLDERS))
def test_every_bundled_prompt_has_exactly_its_placeholders(tmp_path, name):
    prompt = load_prompt(name, _settings(tmp_path))
    values = {p: f"<{p.upper()}-VALUE>" for p in PLACEHOLDERS[name]}
    text = prompt.fill(**values)
    assert all(v in text for v in values.values())
    assert not any("{" + p + "}" in text for p in PLACEHOLDERS[name])


def test_a_prompt_file_without_a_placeholder_is_refused_naming_it(tmp_path):
    custom = tmp_path / "prompts"
    custom.mkdir()
    (custom / "answer.txt").write_text("Answer {question} in {language}.", encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_prompt("answer", _settings(tmp_path, custom))
    assert str(custom / "answer.txt") in str(error.value) and "lacks {sources}" in str(error.value)


def test_an_unknown_placeholder_is_refused(tmp_path):
    custom = tmp_path / "prompts"
    custom.mkdir()
    (custom / "condense.txt").write_text("{history}\n{question}\n{qestion}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"has unknown \{qestion\}"):
        load_prompt("condense", _settings(tmp_path, custom))


def test_other_braces_stay_and_only_declared_names_are_replaced(tmp_path):
    custom = tmp_path / "prompts"
    custom.mkdir()
    (custom / "translate.txt").write_text('Reply as {"q": "..."}: {question}', encoding="utf-8")
    prompt = load_prompt("translate", _settings(tmp_path, custom))
    assert prompt.fill(question="what?") == 'Reply as {"q": "..."}: what?'
    with pytest.raises(TypeError):
        prompt.fill(question="what?", extra="x")


def test_the_cli_reports_a_broken_prompt_file_in_one_line(seeded, tmp_path):
    custom = tmp_path / "prompts"
    custom.mkdir()
    (custom / "answer.txt").write_text("Q: {question}", encoding="utf-8")
    result = seeded("ask", "Which papers do full-duplex speech?", "--llm", "openai",
                   RAGQA_PROMPTS_DIR=str(custom), OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    assert result.exit_code == 2
    assert result.stderr.startswith("ragqa: error: prompt file ") and \
        result.stderr.count("\n") == 1
