"""Settings: one declaration per setting (ragqa/config.py), and what is written from it: the
checks of values and their messages, `.env.example`, the README's table, .env and the
environment."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragqa import config
from ragqa.config import ConfigError, Secret, Settings, declarations, load_settings

REPO = Path(__file__).resolve().parents[1]
START, END = "<!-- settings-table:start -->", "<!-- settings-table:end -->"
REGENERATE = ("python -c \"from ragqa.config import env_example; print(env_example(), end='')\""
              " > .env.example")


def _load(tmp_path: Path, **env: str) -> Settings:
    return load_settings({"RAGQA_HOME": str(tmp_path), "RAGQA_ENV_FILE": "/nonexistent", **env})


def _error(tmp_path: Path, **env: str) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, **env)
    return str(caught.value)


# --- The declarations and the files written from them -----------------------------------------


def test_every_field_but_one_is_declared_once():
    names = [name for name, _ in declarations()]
    assert [f.name for f in dataclasses.fields(Settings)] == \
        names[:names.index("llm_retries")] + ["llm_context_set"] + \
        names[names.index("llm_retries"):]
    envs = [d.env for _, d in declarations()]
    assert len(set(envs)) == len(envs)
    assert all(d.description.strip() and d.section for _, d in declarations())
    for name, declared in declarations():
        if declared.choices:
            assert Settings.__dataclass_fields__[name].default == declared.choices[0]


def test_env_example_is_what_the_declarations_write():
    text = (REPO / ".env.example").read_text(encoding="utf-8")
    shown = dict(re.findall(r"^# ([A-Z][A-Z0-9_]*)=(.*)$", text, flags=re.M))
    expected = {d.env: config.env_text(name) for name, d in declarations()}
    assert shown == expected, "every declared variable with its default, and no other one"
    assert text == config.env_example(), f".env.example is stale: {REGENERATE}"


def test_env_example_read_back_gives_the_defaults(tmp_path):
    """Every line of .env.example, uncommented as it is, leaves every setting at its default
    (RAGQA_LLM_CONTEXT then is given, though: the server's own context is not asked for)."""
    env_file = tmp_path / ".env"
    env_file.write_text(re.sub(r"^# ([A-Z][A-Z0-9_]*=)", r"\1", config.env_example(),
                               flags=re.M), encoding="utf-8")
    from_file = load_settings({"RAGQA_ENV_FILE": str(env_file), "RAGQA_HOME": str(tmp_path)})
    assert from_file.with_overrides(llm_context_set=False).describe() == \
        _load(tmp_path).describe()
    assert from_file.llm_context_set


def test_readme_table_is_what_the_declarations_write():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    if START not in readme or END not in readme:
        pytest.skip(f"README.md has no {START} ... {END} markers yet")
    between = readme.split(START, 1)[1].split(END, 1)[0]
    assert between.strip() == config.settings_table().strip(), \
        "the README's settings table is stale: paste ragqa.config.settings_table() in"


def test_settings_table_has_a_row_per_setting():
    rows = config.settings_table().strip().splitlines()[2:]
    assert [row.split(" | ")[0].strip("| `") for row in rows] == \
        [d.env for _, members in config._by_section() for _, d in members]
    assert "| `RAGQA_CHUNK_TOKENS` | `254` | whole number ≥ 32 |" in config.settings_table()


def test_import_and_writers_leave_pydantic_alone():
    """`ragqa --help` imports no more than it did: pydantic is loaded by load_settings only."""
    probe = ("import sys\nimport ragqa.config as c\nc.env_example(); c.settings_table()\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('pydantic', 'pydantic_settings', 'pydantic_core', 'dotenv')))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


# --- Types and bounds, with the messages ragqa has always printed ------------------------------


@pytest.mark.parametrize(("env", "message"), [
    ({"RAGQA_EMBED_PROVIDER": "bogus"},
     "RAGQA_EMBED_PROVIDER must be one of local, openai, not 'bogus'"),
    ({"RAGQA_LLM": " Maybe "}, "RAGQA_LLM must be one of auto, openai, none, not 'maybe'"),
    ({"RAGQA_CHUNK_TOKENS": "abc"}, "RAGQA_CHUNK_TOKENS must be a whole number, not 'abc'"),
    ({"RAGQA_CHUNK_TOKENS": " 12.5 "}, "RAGQA_CHUNK_TOKENS must be a whole number, not '12.5'"),
    ({"RAGQA_CHUNK_TOKENS": "31"}, "RAGQA_CHUNK_TOKENS must be at least 32, not 31"),
    ({"RAGQA_EMBED_BATCH_SIZE": "0"}, "RAGQA_EMBED_BATCH_SIZE must be at least 1, not 0"),
    ({"RAGQA_LLM_RETRIES": "-1"}, "RAGQA_LLM_RETRIES must be at least 0, not -1"),
    ({"RAGQA_LLM_CONTEXT": "1000"}, "RAGQA_LLM_CONTEXT must be at least 1024, not 1000"),
    ({"RAGQA_LLM_TIMEOUT": "soon"}, "RAGQA_LLM_TIMEOUT must be a number, not 'soon'"),
    ({"RAGQA_LLM_TIMEOUT": "-1"},
     "RAGQA_LLM_TIMEOUT must be a finite, non-negative number, not '-1'"),
    ({"RAGQA_LOCK_TIMEOUT": "inf"},
     "RAGQA_LOCK_TIMEOUT must be a finite, non-negative number, not 'inf'"),
    ({"RAGQA_LLM_FIRST_TOKEN_TIMEOUT": "nan"},
     "RAGQA_LLM_FIRST_TOKEN_TIMEOUT must be a finite, non-negative number, not 'nan'"),
    ({"RAGQA_CHROMA_SSL": "Perhaps"}, "RAGQA_CHROMA_SSL must be true or false, not 'perhaps'"),
    ({"RAGQA_CHUNK_OVERLAP": "254"},
     "RAGQA_CHUNK_OVERLAP must be smaller than RAGQA_CHUNK_TOKENS"),
    ({"RAGQA_CHUNK_TOKENS": "300"},
     "RAGQA_CHUNK_TOKENS must be at most 254 with the local embedder"),
    # the first bad one, in the order of the fields
    ({"RAGQA_LLM_RETRIES": "x", "RAGQA_CHUNK_TOKENS": "1", "RAGQA_EMBED_PROVIDER": "x"},
     "RAGQA_EMBED_PROVIDER must be one of local, openai, not 'x'"),
])
def test_bad_values_give_the_messages(tmp_path, env, message):
    assert _error(tmp_path, **env) == message


BOUNDED = [(name, declared) for name, declared in declarations() if declared.ge is not None]


@pytest.mark.parametrize(("name", "declared"), BOUNDED, ids=lambda v: getattr(v, "env", v))
def test_every_bound_is_enforced(tmp_path, name, declared):
    kind = config._kinds()[name]
    if kind is int:
        low, message = declared.ge - 1, f"must be at least {declared.ge}, not {declared.ge - 1}"
        assert _error(tmp_path, **{declared.env: "many"}) == \
            f"{declared.env} must be a whole number, not 'many'"
    else:
        low, message = -0.5, "must be a finite, non-negative number, not '-0.5'"
    assert _error(tmp_path, **{declared.env: str(low)}) == f"{declared.env} {message}"
    at_bound = {declared.env: str(declared.ge)}
    if name == "chunk_tokens":
        at_bound["RAGQA_CHUNK_OVERLAP"] = "0"
    assert getattr(_load(tmp_path, **at_bound), name) == declared.ge


@pytest.mark.parametrize(("env", "value"), [
    # read as int(), float() and ragqa's true/false read them, whichever pydantic is installed
    # (its own lax parsing of strings changed between versions: "+5", "12.0", "t")
    ({"RAGQA_CANDIDATES": "+40"}, 40), ({"RAGQA_CANDIDATES": "1_000"}, 1000),
    ({"RAGQA_CANDIDATES": "12.0"}, "must be a whole number, not '12.0'"),
    ({"RAGQA_CANDIDATES": "1e3"}, "must be a whole number, not '1e3'"),
    ({"RAGQA_LOCK_TIMEOUT": "1e2"}, 100.0), ({"RAGQA_LOCK_TIMEOUT": " .5 "}, 0.5),
    ({"RAGQA_LOCK_TIMEOUT": "1e400"}, "must be a finite, non-negative number, not '1e400'"),
    ({"RAGQA_LOCK_TIMEOUT": "0x10"}, "must be a number, not '0x10'"),
    ({"RAGQA_CHROMA_SSL": "t"}, "must be true or false, not 't'"),
    ({"RAGQA_CHROMA_SSL": "Y"}, "must be true or false, not 'y'"),
])
def test_numbers_and_switches_read_as_they_always_were(tmp_path, env, value):
    (name,) = env
    if isinstance(value, str):
        assert _error(tmp_path, **env) == f"{name} {value}"
    else:
        field = {d.env: n for n, d in declarations()}[name]
        assert getattr(_load(tmp_path, **env), field) == value


def test_errors_are_config_errors_without_a_cause(tmp_path):
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, RAGQA_CANDIDATES="x", OPENAI_API_KEY="sk-never-shown-1234567890")
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert "sk-never" not in str(caught.value)


def test_values_are_typed_and_normalised(tmp_path):
    settings = _load(tmp_path, RAGQA_EMBED_PROVIDER=" OpenAI ", RAGQA_LLM="NONE",
                     RAGQA_CHROMA_SSL=" Yes ", RAGQA_CHROMA_PORT=" 8443 ",
                     RAGQA_LLM_TIMEOUT="2.5", RAGQA_COLLECTION=" papers ",
                     RAGQA_LLM_GGUF="~/m.gguf", RAGQA_PROMPTS_DIR=" ~/prompts ",
                     RAGQA_CHUNK_TOKENS="300")
    assert settings.embed_provider == "openai" and settings.llm == "none"
    assert settings.chroma_ssl is True and settings.chroma_port == 8443
    assert settings.llm_timeout == 2.5 and isinstance(settings.llm_timeout, float)
    assert settings.collection == "papers" and settings.chunk_tokens == 300
    assert settings.llm_gguf == Path("~/m.gguf").expanduser()
    assert settings.prompts_dir == Path("~/prompts").expanduser()
    assert settings.home == tmp_path
    for word, value in (("0", False), ("off", False), ("no", False), ("1", True), ("on", True)):
        assert _load(tmp_path, RAGQA_CHROMA_SSL=word).chroma_ssl is value


def test_defaults_and_blanks(tmp_path):
    blank = {d.env: " " for _, d in declarations() if d.env != "RAGQA_HOME"}
    for settings in (_load(tmp_path), _load(tmp_path, **blank)):
        for field in dataclasses.fields(Settings):
            value = getattr(settings, field.name)
            if field.name == "home":
                assert value == tmp_path
            elif isinstance(value, Secret):
                assert not value
            else:
                assert value == field.default, field.name
    assert isinstance(_load(tmp_path).embed_api_key, Secret)
    default_home = load_settings({"RAGQA_ENV_FILE": "/nonexistent"}).home
    assert default_home.is_absolute() and default_home.name == "ragqa"


def test_fallbacks_and_llm_context_set(tmp_path):
    openai = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-fallback-0123"}
    settings = _load(tmp_path, **openai)
    assert settings.embed_base_url == "http://127.0.0.1:9/v1"
    assert settings.embed_api_key.reveal() == "sk-fallback-0123"
    own = _load(tmp_path, **openai, RAGQA_EMBED_BASE_URL="http://e/v1", RAGQA_EMBED_API_KEY="k")
    assert own.embed_base_url == "http://e/v1" and own.embed_api_key.reveal() == "k"
    assert _load(tmp_path, **openai, RAGQA_EMBED_API_KEY=" ").embed_api_key.reveal() == \
        "sk-fallback-0123"
    assert not _load(tmp_path).llm_context_set
    assert not _load(tmp_path, RAGQA_LLM_CONTEXT=" ").llm_context_set
    given = _load(tmp_path, RAGQA_LLM_CONTEXT="8192")
    assert given.llm_context_set and given.llm_context == 8192


def test_secrets_never_show(tmp_path):
    assert not config.scrub_heap_if_secrets(_load(tmp_path))  # no secret: malloc as it was
    key = "sk-canary-0123456789abcdef-SECRET"
    settings = _load(tmp_path, OPENAI_API_KEY=key, RAGQA_SERVE_TOKEN="serve-token-canary-42")
    if sys.platform.startswith("linux"):  # in a process of its own: it changes malloc for good
        code = ("from ragqa.config import load_settings, scrub_heap_if_secrets; "
                f"print(scrub_heap_if_secrets(load_settings({{'RAGQA_HOME': {str(tmp_path)!r}, "
                f"'RAGQA_ENV_FILE': '/x', 'OPENAI_API_KEY': {key!r}}})))")
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert run.stdout.strip() == "True", run.stderr
    shown = dict(settings.describe())
    assert shown["openai_api_key"] == "sk-…CRET" and shown["embed_api_key"] == "sk-…CRET"
    assert shown["chroma_token"] == "(not set)" and shown["serve_token"] == "ser…y-42"
    for text in (repr(settings), str(settings), str(shown)):
        assert key not in text and "serve-token-canary" not in text
    assert repr(Secret("x")) == "Secret('***')" and repr(Secret("")) == "Secret('')"
    assert Secret("short").masked() == "***" and not Secret("")


def test_settings_stay_a_frozen_dataclass(tmp_path):
    settings = _load(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.collection = "x"  # type: ignore[misc]
    changed = settings.with_overrides(embed_threads=1, llm="none")
    assert changed.embed_threads == 1 and changed.llm == "none" and settings.embed_threads == 0
    assert [name for name, _ in settings.describe()] == \
        [f.name for f in dataclasses.fields(Settings)]
    assert not settings.uses_chroma_server and not settings.llm_configured
    assert _load(tmp_path, RAGQA_CHROMA_HOST="127.0.0.1").uses_chroma_server
    assert _load(tmp_path, OPENAI_BASE_URL="http://x/v1").llm_configured
    assert not _load(tmp_path, OPENAI_BASE_URL="http://x/v1", RAGQA_LLM="none").llm_configured


# --- .env and the environment ------------------------------------------------------------------


def test_dotenv_is_read_and_the_environment_wins(tmp_path):
    env_file = tmp_path / "settings.env"
    env_file.write_text("# a comment\nRAGQA_COLLECTION=from_file\nRAGQA_CHUNK_TOKENS='120'\n"
                        "export RAGQA_LLM=none\nRAGQA_CANDIDATES=50\nRAGQA_LLM_MODEL\n"
                        "OPENAI_API_KEY=sk-from-the-file-0123\nNOT_A_SETTING=1\n",
                        encoding="utf-8")
    base = {"RAGQA_ENV_FILE": str(env_file), "RAGQA_HOME": str(tmp_path)}
    from_file = load_settings(base)
    assert (from_file.collection, from_file.chunk_tokens, from_file.llm,
            from_file.candidates) == ("from_file", 120, "none", 50)
    assert from_file.llm_model == "gpt-4o-mini"  # a name without a value: unset
    assert from_file.embed_api_key.reveal() == "sk-from-the-file-0123"
    wins = load_settings({**base, "RAGQA_COLLECTION": "from_env", "RAGQA_CANDIDATES": " "})
    assert wins.collection == "from_env" and wins.chunk_tokens == 120
    assert wins.candidates == 100  # an empty value in the environment: the default
    bad = env_file.read_text(encoding="utf-8") + "RAGQA_CHROMA_PORT=http\n"
    env_file.write_text(bad, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(base)
    assert str(caught.value) == "RAGQA_CHROMA_PORT must be a whole number, not 'http'"
    assert load_settings({**base, "RAGQA_CHROMA_PORT": "9000"}).chroma_port == 9000


def test_os_environ_and_the_dotenv_in_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("RAGQA_COLLECTION=here\nRAGQA_CANDIDATES=20\n",
                                   encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAGQA_ENV_FILE")
    monkeypatch.setenv("RAGQA_CANDIDATES", "30")
    settings = load_settings()
    assert settings.collection == "here" and settings.candidates == 30
    assert settings.home == tmp_path / "home"  # conftest's RAGQA_HOME
    # a mapping replaces os.environ altogether (and still finds .env in the current folder)
    only = load_settings({"RAGQA_HOME": str(tmp_path)})
    assert only.candidates == 20 and only.home == tmp_path
    assert load_settings({"RAGQA_HOME": str(tmp_path),
                          "RAGQA_ENV_FILE": str(tmp_path / "none.env")}).collection == "default"
