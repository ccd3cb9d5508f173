"""`ragqa doctor`: can this installation embed, store and (if configured) reach its LLM?"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ragqa.config import client_endpoint
from ragqa.index.store import Store
from ragqa.models.encoders import make_encoder, make_multilingual_encoder
from ragqa.models.llm import LocalGGUF, describe_failure, make_llm
from ragqa.text import safe

if TYPE_CHECKING:
    from ragqa.config import Settings


def _check(name: str, fn: Callable[[], str]) -> dict:
    try:
        return {"check": name, "ok": True, "detail": fn()}
    except Exception as exc:  # noqa: BLE001 - doctor reports every failure, it does not stop
        return {"check": name, "ok": False, "detail": " ".join(safe(str(exc)).split())[:300]}


def _embedder(settings: Settings) -> str:

    encoder = make_encoder(settings)
    vector = encoder.embed(["full-duplex speech"])[0]
    return f"{encoder.embedder_id}, {len(vector)} dimensions"


def _store(settings: Settings, name: str) -> str:

    store = Store(settings, name, make_encoder(settings))
    where = (f"server {settings.chroma_host}:{settings.chroma_port}"
             if settings.uses_chroma_server else str(settings.home / "chroma"))
    if not store.exists():
        return f"{where}; collection {name!r} not created yet"
    store.collection()  # raises if another embedder built it
    detail = f"{where}; collection {name!r}: {store.count()} chunks"
    if store.multilingual_embedder():  # the sibling collection (ingest --multilingual)

        side = store.multilingual_store(make_multilingual_encoder(settings))
        detail += f", {side.count()} with multilingual vectors"
    else:
        detail += "; no multilingual vectors (`ragqa ingest --multilingual` adds them)"
    return detail


def _llm(settings: Settings) -> str:
    import openai


    if settings.llm_gguf and not (settings.openai_base_url or settings.openai_api_key):
        local = make_llm(settings)
        assert isinstance(local, LocalGGUF)
        return f"{local.description} loads"

    # as the answers' client reaches it: the URL's query after the route, no userinfo in it
    key = settings.openai_api_key.reveal()
    endpoint = client_endpoint(settings.openai_base_url, key) \
        if settings.openai_base_url else None
    client = openai.OpenAI(api_key=key or "not-needed",
                           base_url=endpoint.base_url if endpoint else None,
                           default_query=endpoint.query if endpoint else None,
                           default_headers=endpoint.headers if endpoint else None,
                           timeout=min(settings.llm_timeout, 15.0), max_retries=0)
    try:
        models = [m.id for m in client.models.list()]
    except openai.APIError as exc:
        raise RuntimeError(describe_failure(exc, settings)) from None
    where = settings.llm_endpoint
    note = "" if settings.llm_model in models or not models else (
        f"; model {settings.llm_model!r} not among {len(models)} listed")
    return f"{where} answers; model {settings.llm_model}{note}"


def run_checks(settings: Settings, name: str) -> list[dict]:
    checks = [_check("embedder", lambda: _embedder(settings)),
              _check("store", lambda: _store(settings, name))]
    if settings.llm_configured:
        checks.append(_check("llm", lambda: _llm(settings)))
    else:
        checks.append({"check": "llm", "ok": True,
                       "detail": "not configured: answers are extractive (set OPENAI_API_KEY or "
                                 "OPENAI_BASE_URL for written answers)"})
    return checks
