"""Every setting ragqa reads, read once from the environment and a `.env` file.

No other module reads the environment. The real environment wins over `.env`; `.env` is looked
for in the current directory (or at RAGQA_ENV_FILE). Secrets are kept in `Secret` so that
printing a Settings object, or an error built from it, never shows a key.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from ragqa.errors import ConfigError


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


EMBED_PROVIDERS = ("local", "openai")
LLM_CHOICES = ("auto", "openai", "none")


@dataclass(frozen=True)
class Settings:
    home: Path
    collection: str = "default"
    # Embeddings
    embed_provider: str = "local"
    embed_model: str = "text-embedding-3-small"
    embed_base_url: str = ""
    embed_api_key: Secret = field(default_factory=lambda: Secret(""))
    embed_batch_size: int = 0  # 0: the provider's own default (embeddings.make_encoder)
    embed_concurrency: int = 4
    embed_threads: int = 0
    # Store
    chroma_host: str = ""
    chroma_port: int = 8000
    chroma_ssl: bool = False
    chroma_token: Secret = field(default_factory=lambda: Secret(""))
    # Chunking, in tokens of the embedder's tokenizer: title + chunk at most chunk_tokens
    # (MiniLM reads 256 tokens including its two special ones)
    chunk_tokens: int = 254
    # 0: SciFact test nDCG@10 0.7308 without overlap, 0.7298 with 30 tokens (README)
    chunk_overlap: int = 0
    # Retrieval
    candidates: int = 100
    # LLM
    llm: str = "auto"
    openai_api_key: Secret = field(default_factory=lambda: Secret(""))
    openai_base_url: str = ""
    llm_model: str = "gpt-4o-mini"
    llm_timeout: float = 60.0  # seconds between tokens of a streamed answer, and to connect
    # seconds to wait for the first token (a CPU model processing a long prompt) or, not
    # streaming, for the whole answer
    llm_first_token_timeout: float = 600.0
    llm_context: int = 8192  # the model's context in tokens: prompt plus answer must fit
    llm_context_set: bool = False  # RAGQA_LLM_CONTEXT given: else the server's own, if it says
    llm_retries: int = 2
    prompts_dir: Path | None = None
    llm_gguf: Path | None = None  # a local GGUF model (optional extra "local")
    chat_memory_tokens: int = 2000  # history a follow-up is condensed with
    # Behaviour
    lock_timeout: float = 60.0
    # `ragqa serve`: the bearer token its routes require (empty: none, loopback only)
    serve_token: Secret = field(default_factory=lambda: Secret(""))

    @property
    def uses_chroma_server(self) -> bool:
        return bool(self.chroma_host)

    @property
    def llm_configured(self) -> bool:
        if self.llm == "none":
            return False
        return (self.llm == "openai" or bool(self.openai_api_key) or bool(self.openai_base_url)
                or self.llm_gguf is not None)

    def with_overrides(self, **changes: object) -> Settings:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return Settings(**values)

    def describe(self) -> list[tuple[str, str]]:
        """(name, value) pairs for `ragqa doctor`, secrets masked."""
        rows = []
        for f in fields(self):
            value = getattr(self, f.name)
            shown = value.masked() if isinstance(value, Secret) else str(value)
            rows.append((f.name, shown))
        return rows


def _default_home() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("ragqa", appauthor=False))


def _read_env(environ: Mapping[str, str] | None) -> dict[str, str]:
    from dotenv import dotenv_values

    real = dict(os.environ if environ is None else environ)
    env_file = Path(real.get("RAGQA_ENV_FILE", ".env"))
    from_file: dict[str, str] = {}
    if env_file.is_file():
        from_file = {k: v for k, v in dotenv_values(env_file).items() if v is not None}
    return {**from_file, **real}


def _int(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, not {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{name} must be at least {minimum}, not {value}")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, not {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{name} must be a finite, non-negative number, not {raw!r}")
    return value


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    value = env.get(name, "").strip().lower() or choices[0]
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _bool(env: Mapping[str, str], name: str) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name} must be true or false, not {raw!r}")


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build Settings from `environ` (default: os.environ) layered over `.env`."""
    env = _read_env(environ)
    home = Path(env["RAGQA_HOME"]).expanduser() if env.get("RAGQA_HOME") else _default_home()
    prompts_dir = env.get("RAGQA_PROMPTS_DIR", "").strip()
    gguf = env.get("RAGQA_LLM_GGUF", "").strip()
    openai_key = env.get("OPENAI_API_KEY", "").strip()
    openai_url = env.get("OPENAI_BASE_URL", "").strip()
    settings = Settings(
        home=home,
        collection=env.get("RAGQA_COLLECTION", "").strip() or "default",
        embed_provider=_choice(env, "RAGQA_EMBED_PROVIDER", EMBED_PROVIDERS),
        embed_model=env.get("RAGQA_EMBED_MODEL", "").strip() or "text-embedding-3-small",
        embed_base_url=env.get("RAGQA_EMBED_BASE_URL", "").strip() or openai_url,
        embed_api_key=Secret(env.get("RAGQA_EMBED_API_KEY", "").strip() or openai_key),
        embed_batch_size=_int(env, "RAGQA_EMBED_BATCH_SIZE", 0, minimum=1),
        embed_concurrency=_int(env, "RAGQA_EMBED_CONCURRENCY", 4, minimum=1),
        embed_threads=_int(env, "RAGQA_EMBED_THREADS", 0),
        chroma_host=env.get("RAGQA_CHROMA_HOST", "").strip(),
        chroma_port=_int(env, "RAGQA_CHROMA_PORT", 8000, minimum=1),
        chroma_ssl=_bool(env, "RAGQA_CHROMA_SSL"),
        chroma_token=Secret(env.get("RAGQA_CHROMA_TOKEN", "").strip()),
        chunk_tokens=_int(env, "RAGQA_CHUNK_TOKENS", 254, minimum=32),
        chunk_overlap=_int(env, "RAGQA_CHUNK_OVERLAP", 0),
        candidates=_int(env, "RAGQA_CANDIDATES", 100, minimum=10),
        llm=_choice(env, "RAGQA_LLM", LLM_CHOICES),
        openai_api_key=Secret(openai_key),
        openai_base_url=openai_url,
        llm_model=env.get("RAGQA_LLM_MODEL", "").strip() or "gpt-4o-mini",
        llm_timeout=_float(env, "RAGQA_LLM_TIMEOUT", 60.0),
        llm_first_token_timeout=_float(env, "RAGQA_LLM_FIRST_TOKEN_TIMEOUT", 600.0),
        llm_context=_int(env, "RAGQA_LLM_CONTEXT", 8192, minimum=1024),
        llm_context_set=bool(env.get("RAGQA_LLM_CONTEXT", "").strip()),
        llm_retries=_int(env, "RAGQA_LLM_RETRIES", 2),
        prompts_dir=Path(prompts_dir).expanduser() if prompts_dir else None,
        llm_gguf=Path(gguf).expanduser() if gguf else None,
        chat_memory_tokens=_int(env, "RAGQA_CHAT_MEMORY_TOKENS", 2000, minimum=100),
        lock_timeout=_float(env, "RAGQA_LOCK_TIMEOUT", 60.0),
        serve_token=Secret(env.get("RAGQA_SERVE_TOKEN", "").strip()),
    )
    if settings.chunk_overlap >= settings.chunk_tokens:
        raise ConfigError("RAGQA_CHUNK_OVERLAP must be smaller than RAGQA_CHUNK_TOKENS")
    if settings.chunk_tokens > 254 and settings.embed_provider == "local":
        raise ConfigError("RAGQA_CHUNK_TOKENS must be at most 254 with the local embedder")
    if any(secret.reveal() for secret in (settings.openai_api_key, settings.embed_api_key,
                                          settings.chroma_token, settings.serve_token)):
        _scrub_heap_memory()
    return settings


def _scrub_heap_memory() -> None:
    """Have glibc fill memory it hands out (and memory it takes back) with a fixed byte.

    hnswlib, inside Chroma, writes its index's whole capacity to disk (data_level0.bin), slots
    malloc never initialised included: stale heap bytes, such as an HTTP request that carried
    an API key, would otherwise land in RAGQA_HOME (tests/test_faults.py caught a canary key
    there). Only with a secret set: it costs ~4 % of embedding speed. A no-op where malloc is
    not glibc's."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    m_perturb = -6  # <malloc.h>: M_PERTURB
    mallopt(m_perturb, 0xA5)
