"""Every setting ragqa reads, read once from the environment and a `.env` file.

No other module reads the environment. The real environment wins over `.env`; `.env` is looked
for in the current directory (or at RAGQA_ENV_FILE). Secrets are kept in `Secret` so that
printing a Settings object, or an error built from it, never shows a key.

Each setting is declared once, as a field of `Settings` made by `setting(...)`: its variable,
default, type, bounds and help text. pydantic-settings reads and checks the variables from those
declarations (`load_settings`), and the same declarations write `.env.example` (`env_example()`)
and the README's table of settings (`settings_table()`); tests/test_settings.py checks that both
files match. pydantic is imported by the first `load_settings` only (its model is built there,
once): importing this module, for `ragqa --help` or error handling, never loads it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from ragqa.errors import ConfigError
from ragqa.text import public_endpoint

# Settings that hold a URL, which may carry credentials (`http://user:KEY@host/v1?key=KEY`).
_ENDPOINTS = ("openai_base_url", "embed_base_url")


class Secret:
    """A string that never shows itself in repr, str or f-strings."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret('')"

    __str__ = __repr__

    def masked(self) -> str:
        """`sk-…abcd` style: enough to tell two keys apart, not enough to use one."""
        v = self._value
        if not v:
            return "(not set)"
        return "***" if len(v) < 12 else f"{v[:3]}…{v[-4:]}"


@dataclass(frozen=True)
class ClientEndpoint:
    """An OpenAI-compatible endpoint URL taken apart for the openai client.

    The client appends its route to `base_url` as text: a query left in it ended up before the
    route (`/v1?api-version=x/chat/completions`), so the query travels apart (`query`, the
    client's `default_query`). Credentials in the URL (`http://user:pw@host/v1`) made httpx
    send HTTP Basic auth in place of the client's `Bearer <key>`: the API key was dropped. So
    the key, when there is one, is what authenticates; the URL's user and password are sent as
    Basic auth only when no key is set (what every HTTP client does with such a URL). HTTP has
    one Authorization header: both at once is impossible."""

    base_url: str  # scheme, host, port and path: no credentials, query or fragment
    query: dict[str, str]
    headers: dict[str, str]  # Authorization: Basic, from the URL, when no key is set

    @property
    def root(self) -> str:
        """The server's root: `base_url` without its trailing /v1 (llama.cpp's /props)."""
        return self.base_url.removesuffix("/v1")


def client_endpoint(url: str, api_key: str = "") -> ClientEndpoint:
    """`url` (OPENAI_BASE_URL, RAGQA_EMBED_BASE_URL) as the client must use it: see
    ClientEndpoint. Nothing returned here may be shown: use `public_endpoint` for that."""
    import base64
    from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    base = urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    headers = {}
    if not api_key and (parts.username or parts.password):
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return ClientEndpoint(base.rstrip("/"), query, headers)


EMBED_PROVIDERS = ("local", "openai")
LLM_CHOICES = ("auto", "openai", "none")


@dataclass(frozen=True)
class Declared:
    """What a setting's field carries besides its name, type and default."""

    env: str  # the variable
    description: str  # help text: .env.example's comment, the README table's last column
    section: str  # its heading in .env.example
    ge: int | float | None = None  # the smallest value the variable may give
    choices: tuple[str, ...] = ()  # the values it may take (lower-cased before the check)
    fallback: str = ""  # a field whose value an empty one takes


def setting(env: str, default: Any = MISSING, *, description: str, section: str,
            ge: int | float | None = None, choices: tuple[str, ...] = (),
            fallback: str = "") -> Any:
    """A Settings field read from the variable `env`: the one declaration of that setting.

    An empty or blank value means the default. A default below `ge` can only be had that way
    (RAGQA_EMBED_BATCH_SIZE: 0, "the provider's own")."""
    declared = Declared(env, description, section, ge, choices, fallback)
    return field(default=default, metadata={"setting": declared})


_DATA, _EMBED, _STORE, _CHUNKS = "Data", "Embeddings", "Store", "Chunking and retrieval"
_LLM, _SERVE = "LLM (written answers)", "ragqa serve"
_SCREEN = "Screening (the LLM reads the candidates of a list)"
_OPENAI = "With RAGQA_EMBED_PROVIDER=openai:"


@dataclass(frozen=True)
class Settings:
    home: Path = setting(
        "RAGQA_HOME", section=_DATA,
        description="Where ragqa keeps its index (Chroma store, BM25 snapshots, locks). Default: "
        "the user data folder (~/.local/share/ragqa on Linux).")
    collection: str = setting(
        "RAGQA_COLLECTION", "default", section=_DATA,
        description="The collection commands use when --collection is not given.")
    chat_max_sessions: int = setting(
        "RAGQA_CHAT_MAX_SESSIONS", 1000, ge=1, section=_DATA,
        description="Chat sessions kept under chats/ (ragqa chat, ragqa serve): when one more "
        "starts, the least recently continued ones beyond this are removed.")
    chat_session_days: int = setting(
        "RAGQA_CHAT_SESSION_DAYS", 0, ge=0, section=_DATA,
        description="Days a chat session is kept after its last turn (removed when a new one "
        "starts); 0: as long as RAGQA_CHAT_MAX_SESSIONS allows.")
    embed_provider: str = setting(
        "RAGQA_EMBED_PROVIDER", "local", choices=EMBED_PROVIDERS, section=_EMBED,
        description="local (all-MiniLM-L6-v2 int8 ONNX, offline) or openai (any "
        "OpenAI-compatible /v1/embeddings).")
    embed_model: str = setting(
        "RAGQA_EMBED_MODEL", "text-embedding-3-small", section=_EMBED,
        description=f"{_OPENAI} the embedding model.")
    embed_base_url: str = setting(
        "RAGQA_EMBED_BASE_URL", "", fallback="openai_base_url", section=_EMBED,
        description=f"{_OPENAI} the server, e.g. http://127.0.0.1:8080/v1 (empty: "
        "OPENAI_BASE_URL).")
    embed_api_key: Secret = setting(
        "RAGQA_EMBED_API_KEY", Secret(""), fallback="openai_api_key", section=_EMBED,
        description=f"{_OPENAI} its key (empty: OPENAI_API_KEY); never printed.")
    embed_batch_size: int = setting(
        "RAGQA_EMBED_BATCH_SIZE", 0, ge=1, section=_EMBED,  # 0: embeddings.make_encoder decides
        description="Texts per embedding batch. Empty: 1 for local (fastest on CPU), 32 per "
        "request for openai.")
    embed_concurrency: int = setting(
        "RAGQA_EMBED_CONCURRENCY", 4, ge=1, section=_EMBED,
        description="Embedding requests sent at once (openai).")
    embed_threads: int = setting(
        "RAGQA_EMBED_THREADS", 0, ge=0, section=_EMBED,
        description="Threads of the local embedders (0: all cores).")
    chroma_host: str = setting(
        "RAGQA_CHROMA_HOST", "", section=_STORE,
        description="The host of a Chroma server (`chroma run --port 8000`) to use instead of "
        "the embedded store, e.g. 127.0.0.1.")
    chroma_port: int = setting(
        "RAGQA_CHROMA_PORT", 8000, ge=1, section=_STORE,
        description="The Chroma server's port.")
    chroma_ssl: bool = setting(
        "RAGQA_CHROMA_SSL", False, section=_STORE,
        description="Talk to the Chroma server over HTTPS.")
    chroma_token: Secret = setting(
        "RAGQA_CHROMA_TOKEN", Secret(""), section=_STORE,
        description="Sent to the Chroma server as `Authorization: Bearer <token>`; never "
        "printed.")
    chunk_tokens: int = setting(
        "RAGQA_CHUNK_TOKENS", 254, ge=32, section=_CHUNKS,
        description="Largest embedding input (title + chunk), in the embedder's tokens: an "
        "abstract that fits is one chunk. MiniLM reads 256 tokens, two of them its own: at "
        "most 254 with the local embedder.")
    chunk_overlap: int = setting(
        "RAGQA_CHUNK_OVERLAP", 0, ge=0, section=_CHUNKS,
        description="Tokens a chunk repeats from the one before it (less than "
        "RAGQA_CHUNK_TOKENS). SciFact test nDCG@10: 0.7308 without overlap, 0.7298 with 30.")
    candidates: int = setting(
        "RAGQA_CANDIDATES", 100, ge=10, section=_CHUNKS,
        description="Candidates taken from each of the dense and BM25 lists before fusion.")
    llm: str = setting(
        "RAGQA_LLM", "auto", choices=LLM_CHOICES, section=_LLM,
        description="auto: use an LLM when OPENAI_API_KEY, OPENAI_BASE_URL or RAGQA_LLM_GGUF "
        "is set; openai: always; none: never.")
    openai_api_key: Secret = setting(
        "OPENAI_API_KEY", Secret(""), section=_LLM,
        description="The LLM endpoint's key (and the embedding server's, unless "
        "RAGQA_EMBED_API_KEY is set); never printed.")
    openai_base_url: str = setting(
        "OPENAI_BASE_URL", "", section=_LLM,
        description="Any OpenAI-compatible server: vLLM, llama.cpp server, Ollama, LM Studio, "
        "e.g. http://127.0.0.1:8080/v1. Empty: the OpenAI API.")
    llm_model: str = setting(
        "RAGQA_LLM_MODEL", "gpt-4o-mini", section=_LLM,
        description="The model that writes answers.")
    llm_timeout: float = setting(
        "RAGQA_LLM_TIMEOUT", 60.0, ge=0, section=_LLM,
        description="Seconds between two tokens of a streamed answer, and to connect.")
    llm_first_token_timeout: float = setting(
        "RAGQA_LLM_FIRST_TOKEN_TIMEOUT", 600.0, ge=0, section=_LLM,
        description="Seconds to wait for the first token, or for a whole answer that is not "
        "streamed: a CPU model can take minutes to read a long prompt.")
    llm_context: int = setting(
        "RAGQA_LLM_CONTEXT", 8192, ge=1024, section=_LLM,
        description="The model's context window in tokens: the sources are trimmed so that the "
        "prompt and a 1,024-token answer fit (least relevant papers' sentences first). Empty: "
        "what the server reports (llama.cpp's /props), else 8192.")
    llm_context_set: bool = False  # RAGQA_LLM_CONTEXT given: else the server's own, if it says
    llm_retries: int = setting(
        "RAGQA_LLM_RETRIES", 2, ge=0, section=_LLM,
        description="Retries of an LLM request refused, timed out, rate-limited (429, after its "
        "Retry-After) or failed (5xx).")
    prompts_dir: Path | None = setting(
        "RAGQA_PROMPTS_DIR", None, section=_LLM,
        description="A folder of prompt files that override the bundled ones in prompts/.")
    llm_gguf: Path | None = setting(
        "RAGQA_LLM_GGUF", None, section=_LLM,
        description="A GGUF model run in-process (pip install '.[local]'), e.g. "
        "/path/to/model.gguf; used when no OpenAI endpoint is set.")
    chat_memory_tokens: int = setting(
        "RAGQA_CHAT_MEMORY_TOKENS", 2000, ge=100, section=_LLM,
        description="Tokens of chat history a follow-up question is condensed with; older "
        "turns are dropped.")
    llm_concurrency: int = setting(
        "RAGQA_LLM_CONCURRENCY", 4, ge=1, section=_LLM,
        description="LLM requests one question or summary sends at once (screening batches, "
        "summary themes). 1 for a local server with one slot.")
    screen: str = setting(
        "RAGQA_SCREEN", "auto", section=_SCREEN,
        description="auto: with an LLM configured, it reads the candidates of every list "
        "question and summary topic and keeps what it judges relevant; off: never; a number: "
        "auto, reading at most that many candidates (--screen on ask, chat, summarize).")
    screen_max: int = setting(
        "RAGQA_SCREEN_MAX", 200, ge=1, section=_SCREEN,
        description="Candidates a question's screening reads at most. At 200 the ranking "
        "holds 0.995 (NeurIPS 2018) and 0.978 (ACL 2022) of the relevant papers "
        "(docs/benchmarks.md, screening).")
    screen_batch: int = setting(
        "RAGQA_SCREEN_BATCH", 20, ge=1, section=_SCREEN,
        description="Candidates per screening request.")
    screen_tokens: int = setting(
        "RAGQA_SCREEN_TOKENS", 200, ge=16, section=_SCREEN,
        description="Tokens of each candidate's text a screening request shows (its title, "
        "then its abstract's first sentences that fit).")
    lock_timeout: float = setting(
        "RAGQA_LOCK_TIMEOUT", 60.0, ge=0, section=_CHUNKS,
        description="Seconds an ingest waits for another ingest of the same collection to "
        "finish.")
    serve_token: Secret = setting(
        "RAGQA_SERVE_TOKEN", Secret(""), section=_SERVE,
        description="The bearer token every route of `ragqa serve` but /api/health and the web "
        "page requires. Needed to bind an address other than 127.0.0.1; set here rather than "
        "with --token, it stays out of the process list.")

    @property
    def uses_chroma_server(self) -> bool:
        return bool(self.chroma_host)

    @property
    def llm_configured(self) -> bool:
        if self.llm == "none":
            return False
        return (self.llm == "openai" or bool(self.openai_api_key) or bool(self.openai_base_url)
                or self.llm_gguf is not None)

    @property
    def llm_endpoint(self) -> str:
        """The LLM endpoint as people may see it (no credentials, no query): answers, logs,
        saved chats and `doctor` show this, never `openai_base_url` itself."""
        return public_endpoint(self.openai_base_url) or "the OpenAI API"

    def with_overrides(self, **changes: object) -> Settings:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Settings(**values)

    def describe(self) -> list[tuple[str, str]]:
        """(name, value) pairs for `ragqa doctor`, secrets masked."""
        rows = []
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Secret):
                shown = value.masked()
            elif f.name in _ENDPOINTS and value:
                shown = public_endpoint(value)
                if shown != value.rstrip("/"):
                    shown += " (credentials and query hidden)"
            else:
                shown = str(value)
            rows.append((f.name, shown))
        return rows


def declarations() -> list[tuple[str, Declared]]:
    """(field name, declaration) of every setting read from a variable, in field order."""
    return [(f.name, f.metadata["setting"]) for f in fields(Settings) if "setting" in f.metadata]


@functools.lru_cache(maxsize=1)
def _kinds() -> dict[str, type]:
    """Each setting's type: str, int, float, bool, Path or Secret (Path | None is Path)."""
    import typing

    hints = typing.get_type_hints(Settings)
    kinds = {}
    for name, _ in declarations():
        kind = hints[name]
        kinds[name] = Path if kind == Path | None else kind
    return kinds


def _default(name: str) -> Any:
    value = Settings.__dataclass_fields__[name].default
    return None if value is MISSING else value


# --- Reading: pydantic-settings ------------------------------------------------------------


_FALSE, _TRUE = ("0", "false", "no", "off"), ("1", "true", "yes", "on")


def _before(kind: type, lower: bool):
    """The before-validator of a setting: strips the text and reads it as Python's int() and
    float() do (and true/false as ragqa always has), whatever pydantic's own lax parsing of
    strings accepts in the installed version ("12.0", "+5", "t" differ between versions).
    pydantic then checks the type, the bounds, finiteness and the choices."""
    from pydantic_core import PydanticCustomError

    def before(value: object) -> object:
        if not isinstance(value, str):
            return value
        value = value.strip()
        if lower or kind is bool:
            value = value.lower()
        if kind is bool:
            if value in _FALSE or value in _TRUE:
                return value in _TRUE
            raise PydanticCustomError("bool_parsing", "Input should be a valid boolean")
        if kind is int or kind is float:
            try:
                return kind(value)
            except ValueError:
                raise PydanticCustomError(f"{kind.__name__}_parsing",
                                          f"Input should be a valid {kind.__name__}") from None
        return value

    return before


@functools.lru_cache(maxsize=1)
def _model() -> type:
    """The pydantic-settings model of the declarations, built on first use (pydantic and
    pydantic-settings cost ~0.15 s to import; `ragqa --help` and `import ragqa.config` never
    pay it)."""
    from typing import Annotated, Literal

    from pydantic import BeforeValidator, Field, SecretStr, create_model, model_validator
    from pydantic_settings import BaseSettings, SettingsConfigDict

    class RagqaEnvironment(BaseSettings):
        # Defaults are not validated: RAGQA_EMBED_BATCH_SIZE's 0 is below its bound on purpose.
        model_config = SettingsConfigDict(case_sensitive=True, extra="ignore",
                                          env_file_encoding="utf-8", env_ignore_empty=False,
                                          validate_default=False)

        @classmethod
        def settings_customise_sources(cls, settings_cls, init_settings, env_settings,
                                       dotenv_settings, file_secret_settings):
            # load_settings hands the real environment (or its `environ`) in as init values:
            # they win over .env, and `environ` replaces os.environ.
            return init_settings, dotenv_settings

        @model_validator(mode="before")
        @classmethod
        def _blank_is_unset(cls, data: Any) -> Any:
            """An empty or blank value means the default (and leaves the field unset)."""
            if isinstance(data, dict):
                return {k: v for k, v in data.items() if not (isinstance(v, str) and not v.strip())}
            return data

    kinds = _kinds()
    specs: dict[str, Any] = {}
    for name, declared in declarations():
        kind, default = kinds[name], _default(name)
        if declared.choices:
            kind = Literal[declared.choices]
        elif kind is Secret:
            kind, default = SecretStr, SecretStr(default.reveal())
        elif kind is Path:
            kind = Path | None
        specs[name] = (
            Annotated[kind, BeforeValidator(_before(kind, lower=bool(declared.choices)))],
            Field(default, validation_alias=declared.env, description=declared.description,
                  ge=declared.ge, allow_inf_nan=False if kind is float else None))
    return create_model("RagqaEnvironment", __base__=RagqaEnvironment, **specs)


def _message(error: Mapping[str, Any], raw: Mapping[str, str]) -> str:
    """A pydantic error as the one line ragqa has always printed for it. `raw`: each variable's
    text as read (the environment's, else .env's)."""
    declared = dict(declarations())
    by_env = {d.env: name for name, d in declared.items()}
    loc = str(error["loc"][0]) if error["loc"] else ""
    name = by_env.get(loc, loc)
    if name not in declared:
        return f"{loc or 'settings'}: {error['msg']}"
    env, choices, kind = declared[name].env, declared[name].choices, _kinds()[name]
    text, problem = raw.get(env, "").strip(), error["type"]
    if choices or kind is bool:
        text = text.lower()
    if problem == "literal_error":
        return f"{env} must be one of {', '.join(choices)}, not {text!r}"
    if problem == "int_parsing":
        return f"{env} must be a whole number, not {text!r}"
    if kind is int and problem == "greater_than_equal":
        return f"{env} must be at least {declared[name].ge}, not {int(text)}"
    if problem == "float_parsing":
        return f"{env} must be a number, not {text!r}"
    if kind is float and problem in ("finite_number", "greater_than_equal"):
        return f"{env} must be a finite, non-negative number, not {text!r}"
    if problem == "bool_parsing":
        return f"{env} must be true or false, not {text!r}"
    return f"{env}: {error['msg']}"


def _default_home() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("ragqa", appauthor=False))


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from `environ` (default: os.environ) layered over `.env`."""
    from pydantic import SecretStr, ValidationError

    real = os.environ if environ is None else environ
    env_file = Path(real.get("RAGQA_ENV_FILE", ".env"))
    given = {d.env: real[d.env] for _, d in declarations() if d.env in real}
    dotenv = env_file if env_file.is_file() else None
    try:
        read = _model()(_env_file=dotenv, **given)
    except ValidationError as exc:
        from dotenv import dotenv_values

        raw = {k: v for k, v in dotenv_values(dotenv, encoding="utf-8").items()
               if v is not None} if dotenv else {}
        error = exc.errors(include_url=False)[0]
        raise ConfigError(_message(error, {**raw, **given})) from None
    plain = {}
    for name, _ in declarations():
        value = getattr(read, name)
        plain[name] = value.get_secret_value() if isinstance(value, SecretStr) else value
    values: dict[str, Any] = {}
    for name, declared in declarations():
        value = plain[name]
        if declared.fallback and not value:
            value = plain[declared.fallback]
        if _kinds()[name] is Secret:
            value = Secret(value)
        elif isinstance(value, Path):
            value = value.expanduser()
        values[name] = value
    if values["home"] is None:
        values["home"] = _default_home()
    settings = Settings(**values, llm_context_set="llm_context" in read.model_fields_set)
    if settings.chunk_overlap >= settings.chunk_tokens:
        raise ConfigError("RAGQA_CHUNK_OVERLAP must be smaller than RAGQA_CHUNK_TOKENS")
    if settings.chunk_tokens > 254 and settings.embed_provider == "local":
        raise ConfigError("RAGQA_CHUNK_TOKENS must be at most 254 with the local embedder")
    return settings


def scrub_heap_if_secrets(settings: Settings) -> bool:
    """Have glibc fill memory it hands out (and memory it takes back) with a fixed byte, when a
    secret is set (whether it did).

    hnswlib, inside Chroma, writes its index's whole capacity to disk (data_level0.bin), slots
    malloc never initialised included: stale heap bytes, such as an HTTP request that carried
    an API key, would otherwise land in RAGQA_HOME (tests/test_faults.py caught a canary key
    there). Only with a secret set: it costs ~4 % of embedding speed. A no-op where malloc is
    not glibc's. Process-wide: the CLI and the servers call it; a program that uses the Python
    API with a secret set may (docs/python-api.md)."""
    import ctypes
    import sys

    if not any(secret.reveal() for secret in (settings.openai_api_key, settings.embed_api_key,
                                              settings.chroma_token, settings.serve_token)):
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_perturb = -6  # <malloc.h>: M_PERTURB
    mallopt(m_perturb, 0xA5)
    return True


# --- Writing: .env.example and the README's table --------------------------------------------

_ENV_EXAMPLE_HEAD = """\
# ragqa settings. Copy to .env (in the folder you run ragqa from) or export them; the real
# environment wins over .env. RAGQA_ENV_FILE points at another file. Each line shows the
# default; an empty or blank value means the default too.
# Written by ragqa.config.env_example() from the declarations in ragqa/config.py.
"""
_RULE, _WIDTH = 94, 96  # .env.example's section rules, its lines at most


def env_text(name: str) -> str:
    """The setting's default as its variable would spell it ("" where none can: see `setting`)."""
    default, declared = _default(name), dict(declarations())[name]
    if default is None or isinstance(default, Secret):
        return ""
    if isinstance(default, bool):
        return "true" if default else "false"
    if declared.ge is not None and default < declared.ge:
        return ""
    if isinstance(default, float) and default.is_integer():
        return str(int(default))
    return str(default)


def _by_section() -> list[tuple[str, list[tuple[str, Declared]]]]:
    sections: dict[str, list[tuple[str, Declared]]] = {}
    for name, declared in declarations():
        sections.setdefault(declared.section, []).append((name, declared))
    return list(sections.items())


def env_example() -> str:
    """The text of `.env.example`: every setting, commented out, with its help and default."""
    import textwrap

    lines = [_ENV_EXAMPLE_HEAD.rstrip("\n")]
    for section, members in _by_section():
        lines += ["", f"# --- {section} ".ljust(_RULE, "-")]
        for name, declared in members:
            lines += textwrap.wrap(declared.description, _WIDTH, initial_indent="# ",
                                   subsequent_indent="# ", break_long_words=False,
                                   break_on_hyphens=False)
            lines.append(f"# {declared.env}={env_text(name)}")
    return "\n".join(lines) + "\n"


def _values(name: str, declared: Declared) -> str:
    kind = _kinds()[name]
    if declared.choices:
        return ", ".join(f"`{c}`" for c in declared.choices)
    if kind is bool:
        return "`true`, `false`"
    if kind is int:
        return f"whole number ≥ {declared.ge}"
    if kind is float:
        return f"number ≥ {declared.ge:g}"
    return {Path: "path", Secret: "secret text"}.get(kind, "text")


def settings_table() -> str:
    """The README's table of settings (Markdown), in .env.example's order."""
    rows = ["| Variable | Default | Values | What it does |", "|---|---|---|---|"]
    env_of = {name: declared.env for name, declared in declarations()}
    for _, members in _by_section():
        for name, declared in members:
            shown = env_text(name)
            if shown:
                default = f"`{shown}`"
            elif declared.fallback:
                default = f"as `{env_of[declared.fallback]}`"
            else:
                default = "—"
            text = declared.description.replace("|", "\\|")
            rows.append(f"| `{declared.env}` | {default} | {_values(name, declared)} | {text} |")
    return "\n".join(rows) + "\n"
