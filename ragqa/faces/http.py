"""`ragqa serve`: the same operations as the CLI over HTTP (FastAPI + uvicorn).

One process keeps one `ragqa.app.App` warm; every route calls it and answers the `--json` object
of the matching command (docs: README, "Serving"; the contract: API.md). Nothing here decides
an answer: routes parse a body, call the App, and turn its errors into JSON with a status.

Routes: `/api/*` (JSON, SSE for streamed answers), `/v1/*` (OpenAI-compatible, serve_openai.py),
`/mcp` (MCP streamable HTTP, mcp_server.py), `/` and `/static/*` (the web page in ragqa/faces/web/),
`/docs` (an offline page over `/openapi.json`).

Heavy imports (fastapi, uvicorn, starlette) stay inside functions: the CLI imports this module
only when `ragqa serve` runs, and then pays for them once.
"""

import asyncio
import contextlib
import functools
import hmac
import json
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragqa.errors import TooLarge, UserError, error_message, http_status
from ragqa.faces.mcp import DEFAULT_MAX_CONCURRENT, RETRY_AFTER_SECONDS, Busy, Slots, http_app
from ragqa.faces.openai_compat import add_openai_routes, error_payload
from ragqa.requests import (
    EXPENSIVE,
    AskRequest,
    ChatRequest,
    MapRequest,
    PapersPage,
    SearchRequest,
    ShowRequest,
    SummarizeRequest,
    TrendsRequest,
    options_of,
)
from ragqa.text import json_text
from ragqa.version import __version__

if TYPE_CHECKING:
    from ragqa.app import App

MAX_BODY = 64 * 1024  # bytes; a question, a chat history or an MCP message fits in far less
WEB_DIR = Path(__file__).resolve().parent / "web"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# Reachable without the token: the page itself and the check of whether it needs one.
OPEN_PATHS = ("/", "/index.html", "/api/health", "/favicon.ico")
OPEN_PREFIXES = ("/static/",)


# ---------------------------------------------------------------- errors

def _error_response(status: int, message: str, headers: dict | None = None, path: str = ""):
    from fastapi.responses import JSONResponse

    return JSONResponse(error_payload(status, message, path), status_code=status,
                        headers=headers)


def as_json(result: Any) -> Any:
    """An operation's object as the response itself: it is plain JSON already, and FastAPI's
    own conversion (jsonable_encoder) costs 0.5 ms of a search's ~14 ms CPU."""
    from fastapi.responses import JSONResponse

    return JSONResponse(result) if isinstance(result, dict) else result


def _validation_message(exc: Any) -> str:
    """FastAPI's validation errors as one line: 'question: Field required; k: ...'."""
    parts = []
    for error in exc.errors()[:5]:
        if error.get("type") == "json_invalid":
            return "the body is not valid JSON"
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


# ---------------------------------------------------------------- ASGI guards

def allowed_hosts(extra: tuple[str, ...] = ()) -> frozenset[str]:
    """The names a loopback server answers to: its own, and those `--allow-host` adds."""
    return frozenset({"127.0.0.1", "localhost", "::1", *(h.lower() for h in extra)})


def host_of(header: bytes) -> str:
    """The name in a Host header, without its port: `[::1]:8000` -> `::1`."""
    value = header.decode("latin-1").strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    return value.rpartition(":")[0] if value.count(":") == 1 else value


class HostCheck:
    """DNS rebinding: a page on evil.example whose name an attacker points at 127.0.0.1 reaches
    a loopback server, with its own Host header. A loopback server answers only requests for
    its own names (and `--allow-host` ones): anything else gets 421, on every route."""

    def __init__(self, app: Any, hosts: frozenset[str]) -> None:
        self.app, self.hosts = app, hosts

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers") or []).get(b"host", b"")
            if host_of(header) not in self.hosts:
                await _send_json(send, 421, error_payload(
                    421, "this server answers only requests for 127.0.0.1, localhost or [::1] "
                    "(and names given with --allow-host)", scope["path"]))
                return
        await self.app(scope, receive, send)


class Guard:
    """Outermost ASGI layer: the token check and the body limit, for every route (the MCP mount
    included), before any route reads a byte."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.token = app, token.encode()

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.token and not self._open(scope["path"]) and not self._authorized(scope):
            await _send_json(send, 401, error_payload(
                401, "missing or wrong token: send 'Authorization: Bearer <token>'",
                scope["path"]),
                             {b"www-authenticate": b"Bearer"})
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is None:  # a chunked body: counted as it arrives, whole before any route
            receive = await _buffered(receive)
        if receive is None or (length is not None and (not length.isdigit()
                                                       or int(length) > MAX_BODY)):
            await _refuse(send, TooLarge(f"request body over {MAX_BODY // 1024} KB"),
                          scope["path"])
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _open(path: str) -> bool:
        return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)

    def _authorized(self, scope: dict) -> bool:
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, given = header.partition(b" ")
        # compare_digest: the time taken says nothing about how much of the token matched
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)


# The routes of the operations that cost seconds of CPU (or an LLM's time), and /v1's chat
# turn: at most `max_concurrent` run at once. /mcp is not among them: a POST there may be a
# tool call or a listing of tools, so its expensive tools take the same slots themselves
# (faces/mcp.py), answering MCP's own error rather than an HTTP status its client cannot read.
EXPENSIVE_ROUTES = frozenset({f"/api/{operation}" for operation in EXPENSIVE} |
                             {"/v1/chat/completions"})


class Shed:
    """Load shedding over the server's `Slots`: an expensive request runs once it holds one,
    and any beyond the queue get 503 with Retry-After at once, so that the latency of the
    requests taken stays bounded instead of growing with every client that arrives. Searches
    and pages are never held."""

    def __init__(self, app: Any, slots: Slots) -> None:
        self.app, self.slots = app, slots

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if not self.slots.limit or scope["type"] != "http" or scope["method"] != "POST" or \
                scope["path"] not in EXPENSIVE_ROUTES:
            await self.app(scope, receive, send)
            return
        try:
            await self.slots.acquire()
        except Busy as exc:
            await _send_json(send, 503, error_payload(503, error_message(exc), scope["path"]),
                             {b"retry-after": str(RETRY_AFTER_SECONDS).encode()})
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.slots.release()


async def _buffered(receive: Callable) -> Callable | None:
    """The body read up to MAX_BODY and replayed to the route; None when it is longer."""
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            parts.append(message)  # a disconnect: the route sees it
            break
        size += len(message.get("body", b""))
        if size > MAX_BODY:
            return None
        parts.append(message)
        if not message.get("more_body"):
            break

    async def replay() -> dict:
        return parts.pop(0) if parts else await receive()

    return replay


async def _refuse(send: Callable, exc: Exception, path: str) -> None:
    """An error raised before any route, answered with its class's status (ragqa/errors.py)."""
    status = http_status(exc)
    await _send_json(send, status, error_payload(status, error_message(exc), path))


async def _send_json(send: Callable, status: int, payload: dict,
                     headers: dict | None = None) -> None:
    body = json.dumps(payload).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += list((headers or {}).items())
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


# ---------------------------------------------------------------- streaming

class _Cancelled(Exception):
    """The client went away: stop writing the answer (raised inside the LLM's token loop)."""


Run = Callable[[Callable[[str], None], Callable[[int, int], None]], dict]


async def sse_events(run: Run) -> AsyncIterator[str]:
    """Server-Sent Events for one answer: `screening` events while an LLM screens a list's
    candidates ({"screened", "expected"}), `token` events while it writes, then one `answer`
    event with the checked object, or one `error` event. `run(on_token, on_screen)` runs in a
    worker thread; a client that disconnects cancels it at its next token or screening wave."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    cancelled = threading.Event()

    def put(item: tuple[str, dict]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone (shutdown): nobody listens
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def on_token(text: str) -> None:
        if cancelled.is_set():
            raise _Cancelled
        put(("token", {"text": text}))

    def on_screen(screened: int, expected: int) -> None:
        if cancelled.is_set():
            raise _Cancelled
        put(("screening", {"screened": screened, "expected": expected}))

    def work() -> None:
        try:
            put(("answer", run(on_token, on_screen)))
        except _Cancelled:
            pass
        except Exception as exc:  # noqa: BLE001 - every failure is one error event
            put(("error", {"error": error_message(exc)}))

    worker = loop.run_in_executor(None, work)
    try:
        while True:
            event, data = await queue.get()
            yield f"event: {event}\ndata: {json_text(data)}\n\n"
            if event not in ("token", "screening"):
                break
    finally:
        cancelled.set()
        del worker  # it ends at its next token, or finishes (a turn is saved whole or not)


def _sse_response(run: Run):
    from fastapi.responses import StreamingResponse

    return StreamingResponse(sse_events(run), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


# ---------------------------------------------------------------- the application

def body_model(request_type: type, name: str, **extra: Any) -> Any:
    """The pydantic model of a route's JSON body, built from the request type's declared
    options (ragqa/requests.py): the same fields, defaults, bounds and help as every face;
    unknown fields are refused. `extra`: fields only HTTP has (name -> (type, default))."""
    from typing import Literal, get_type_hints

    from pydantic import ConfigDict, Field, create_model

    types = get_type_hints(request_type)  # the annotations are strings in ragqa.requests
    fields: dict[str, Any] = {}
    for field_name, (default, spec) in options_of(request_type).items():
        kind = types[field_name]
        if spec.choices:
            kind = Literal[spec.choices]  # type: ignore[valid-type]
        fields[field_name] = (kind, Field(default=default, description=spec.help, ge=spec.ge,
                                          le=spec.le, max_length=spec.max_length,
                                          pattern=spec.pattern))
    for field_name, (kind, default) in extra.items():
        fields[field_name] = (kind, default)
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)


def _bodies():
    """The request bodies (pydantic models), built on first use: pydantic is a heavy import."""
    return (body_model(AskRequest, "AskBody", stream=(bool, False)),
            body_model(SearchRequest, "SearchBody"),
            body_model(SummarizeRequest, "SummarizeBody"),
            body_model(ChatRequest, "ChatBody", stream=(bool, False)),
            body_model(MapRequest, "MapBody"),
            body_model(TrendsRequest, "TrendsBody"))


def _query(request_type: type, name: str) -> Any:
    """A query parameter declared as the request type declares the field (default, bounds,
    help), as `body_model` does for bodies; the request type checks the value again when the
    route builds it, as every face's requests are checked."""
    from fastapi import Query

    default, spec = options_of(request_type)[name]
    return Query(default, description=spec.help, ge=spec.ge, le=spec.le)


def _request(request_type: type, body: Any) -> Any:
    """The operation's request from a validated body (HTTP-only fields left out)."""
    values = body.model_dump()
    return request_type(**{k: v for k, v in values.items() if k in options_of(request_type)})


def create_app(core: "App", token: str = "", cors: str | None = None,
               host: str = "127.0.0.1", allow_hosts: tuple[str, ...] = (),
               max_concurrent: int = DEFAULT_MAX_CONCURRENT) -> Any:
    """The ASGI application: routes over `core`, guarded by the token and the body limit, and
    (bound to loopback) by the Host header."""
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException
    from starlette.requests import Request


    AskBody, SearchBody, SummarizeBody, ChatBody, MapBody, TrendsBody = _bodies()
    slots = Slots(max_concurrent)  # one set for /api, /v1 and /mcp's tools
    mcp = _mcp_app(core, host, slots)
    api = FastAPI(title="ragqa", version=__version__, docs_url=None, redoc_url=None,
                  lifespan=mcp.router.lifespan_context if mcp else None,
                  description="Cited answers from ML-paper abstracts. Schemas: the README's "
                  "'JSON output' section; every error is {\"error\": \"one line\"}.")

    @api.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        return _error_response(422, _validation_message(exc), path=request.url.path)

    @api.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException):
        return _error_response(exc.status_code, str(exc.detail), getattr(exc, "headers", None),
                               request.url.path)

    @api.exception_handler(Exception)
    async def _failed(request: Request, exc: Exception):
        return _error_response(http_status(exc), error_message(exc), path=request.url.path)

    def call(fn: Callable, *args: Any, openai: bool = False, **kwargs: Any) -> Any:
        """An operation's answer, or its error as JSON with the CLI's meaning as a status (in
        OpenAI's shape for the /v1 routes)."""
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - turned into a status here, once
            return _error_response(http_status(exc), error_message(exc),
                                   path="/v1/" if openai else "")

    @api.get("/api/health", summary="Status, collection size and answer mode (no token needed)")
    def health() -> Any:
        result = call(core.health)
        return result | {"auth": bool(token)} if isinstance(result, dict) else result

    @api.post("/api/search", summary="The papers that matter: `ragqa search --json`")
    def search(body: SearchBody) -> Any:  # type: ignore[valid-type]
        return as_json(call(lambda: core.search(_request(SearchRequest, body))))

    @api.post("/api/ask", summary="A cited answer: `ragqa ask --json` (SSE with stream)")
    def ask(body: AskBody) -> Any:  # type: ignore[valid-type]
        def run(on_token: Callable[[str], None] | None,
                on_screen: Callable[[int, int], None] | None = None) -> dict:
            return core.ask(_request(AskRequest, body), on_token=on_token, on_screen=on_screen)

        return _sse_response(run) if body.stream else as_json(call(run, None))

    @api.post("/api/chat", summary="One chat turn: `ragqa chat --json` (SSE with stream)")
    def chat(body: ChatBody) -> Any:  # type: ignore[valid-type]
        def run(on_token: Callable[[str], None] | None,
                on_screen: Callable[[int, int], None] | None = None) -> dict:
            return core.chat(_request(ChatRequest, body), on_token=on_token,
                             on_screen=on_screen)

        return _sse_response(run) if body.stream else call(run, None)

    @api.post("/api/summarize", summary="A themed summary: `ragqa summarize --json` + markdown")
    def summarize(body: SummarizeBody) -> Any:  # type: ignore[valid-type]
        result = call(lambda: core.summarize(_request(SummarizeRequest, body)))
        return result[0] | {"markdown": result[1]} if isinstance(result, tuple) else result

    @api.post("/api/map", summary="Every paper's place and theme: `ragqa map --json`")
    def paper_map(body: MapBody) -> Any:  # type: ignore[valid-type]
        return call(lambda: core.map(_request(MapRequest, body)))

    @api.post("/api/trends", summary="A topic's papers per year: `ragqa trends --json`")
    def trends(body: TrendsBody) -> Any:  # type: ignore[valid-type]
        return call(lambda: core.trends(_request(TrendsRequest, body)))

    @api.get("/api/papers", summary="The collection's papers, a page at a time")
    def papers(offset: int = _query(PapersPage, "offset"),
               limit: int = _query(PapersPage, "limit")) -> Any:
        return call(lambda: core.papers(PapersPage(offset=offset, limit=limit)))

    @api.get("/api/papers/{paper_id}", summary="One paper: `ragqa show --json`")
    def paper(paper_id: str) -> Any:
        return call(lambda: core.show(ShowRequest(paper_id=paper_id)))


    add_openai_routes(api, core, functools.partial(call, openai=True))
    _add_docs(api)
    _add_web(api)
    if mcp:  # its one route, /mcp (a mount would answer at /mcp/ and redirect /mcp)
        api.router.routes.extend(mcp.routes)
    app: Any = Guard(Shed(api, slots), token)
    if cors:  # outside the guard: preflights carry no token, and a 401 must reach the page
        from starlette.middleware.cors import CORSMiddleware

        app = CORSMiddleware(app, allow_origins=[cors], allow_methods=["GET", "POST"],
                             allow_headers=["Authorization", "Content-Type", "Mcp-Session-Id",
                                            "Mcp-Protocol-Version", "Last-Event-ID"])
    if host in LOOPBACK:  # outermost: a rebound name gets nothing, not even a preflight
        app = HostCheck(app, allowed_hosts(allow_hosts))
    return app


def _mcp_app(core: "App", host: str, slots: Slots):
    """The MCP tools as a streamable-HTTP app, or None when the mcp SDK is missing."""
    try:
        return http_app(core, host, slots)
    except ModuleNotFoundError as exc:
        if exc.name != "mcp" and not (exc.name or "").startswith("mcp."):
            raise
        return None


def _add_web(api: Any) -> None:
    """The static page of ragqa/faces/web/ (built by its own engineer; absent: a JSON 404)."""
    from fastapi.responses import FileResponse
    from starlette.staticfiles import StaticFiles

    index = WEB_DIR / "index.html"

    @api.get("/", include_in_schema=False)
    def page() -> Any:
        if not index.is_file():
            return _error_response(404, "this installation has no web page (ragqa/faces/web/)")
        return FileResponse(index, media_type="text/html")

    # /static/x is web/static/x, or web/x when the page keeps its files beside it
    assets = WEB_DIR / "static" if (WEB_DIR / "static").is_dir() else WEB_DIR
    if assets.is_dir():
        api.mount("/static", StaticFiles(directory=assets), name="static")


def _add_docs(api: Any) -> None:
    """`/docs` without a CDN: FastAPI's Swagger UI loads its JS from one, so this page renders
    the routes of /openapi.json itself (plain HTML, no script)."""
    from fastapi.responses import HTMLResponse

    @api.get("/docs", include_in_schema=False)
    def docs() -> Any:
        return HTMLResponse(docs_page(api.openapi()))


def docs_page(schema: dict) -> str:
    import html

    rows = []
    for path, methods in schema.get("paths", {}).items():
        for method, spec in methods.items():
            body = spec.get("requestBody", {}).get("content", {}).get("application/json", {})
            ref = body.get("schema", {}).get("$ref", "")
            fields = schema.get("components", {}).get("schemas", {}).get(ref.split("/")[-1], {})
            params = [p["name"] for p in spec.get("parameters", [])]
            what = ", ".join(list(fields.get("properties", {})) + params)
            rows.append(f"<tr><td><code>{method.upper()} {html.escape(path)}</code></td>"
                        f"<td>{html.escape(spec.get('summary', ''))}</td>"
                        f"<td><code>{html.escape(what)}</code></td></tr>")
    title = html.escape(schema.get("info", {}).get("title", "ragqa"))
    return (f"<!doctype html><meta charset='utf-8'><title>{title} API</title>"
            f"<h1>{title} {html.escape(schema.get('info', {}).get('version', ''))} API</h1>"
            f"<p>{html.escape(schema.get('info', {}).get('description', ''))}</p>"
            "<p>The full schema: <a href='/openapi.json'>/openapi.json</a>.</p>"
            "<table border=1 cellpadding=4><tr><th>route</th><th>what</th><th>fields</th></tr>"
            + "".join(rows) + "</table>")


# ---------------------------------------------------------------- running

def check_bind(host: str, token: str, cors: str | None = None) -> None:
    """Anything but loopback needs a token: the routes answer whoever reaches them. So does
    CORS for every origin: any page the user visits could call the API otherwise."""
    if host not in LOOPBACK and not token:
        raise UserError(f"--host {host} serves other machines: set a token with --token or "
                        "RAGQA_SERVE_TOKEN (or bind 127.0.0.1)")
    if cors is not None and cors.strip() in ("*", "") and not token:
        raise UserError("--cors '*' lets every web page call this server: name one origin "
                        "(--cors https://app.example) or set a token")


def run(core: "App", listening: socket.socket, token: str = "", cors: str | None = None,
        allow_hosts: tuple[str, ...] = (), max_concurrent: int = DEFAULT_MAX_CONCURRENT
        ) -> None:
    """Serve until Ctrl-C or SIGTERM; uvicorn lets requests in flight finish (a chat turn is
    saved whole or not at all: chat.save_session writes atomically)."""
    import uvicorn

    host, port = listening.getsockname()[:2]
    app = create_app(core, token, cors, host, allow_hosts, max_concurrent)
    sys.stderr.write(f"ragqa: serving collection {core.name!r} on http://{host}:{port}/ "
                     f"({'token required' if token else 'no token'}; Ctrl-C stops)\n")
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=30,
                            server_header=False)
    # uvicorn stops gracefully on the signal, then raises it again for the handler it found:
    # this one, so that a stop asked for is exit code 0, not death by signal.
    for stop in (signal.SIGTERM, signal.SIGINT):
        signal.signal(stop, _stopped)
    uvicorn.Server(config).run(sockets=[listening])


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything says "serving" (a port in use is one line,
    exit 1, rather than uvicorn's log and exit 3)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _stopped(signum: int, frame: Any) -> None:
    sys.stderr.write("ragqa: stopped\n")
    raise SystemExit(0)
