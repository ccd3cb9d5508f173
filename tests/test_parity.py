"""The faces at parity: every option of an operation's request type (ragqa/requests.py) is offered
by the CLI, the HTTP API and the MCP tools, and no face has an option the request lacks, save
the documented exceptions below (how a face shows a result: --json, --out, stream, ...)."""

from __future__ import annotations

import asyncio
from dataclasses import fields

import typer

from ragqa.faces import cli, http, mcp
from ragqa.requests import OPERATIONS

# Names a face spells its own way -> the request field.
ALIASES = {"no_cut": "cut", "all_": "all", "query": "question"}

# What a face offers that is about showing, saving or choosing the collection, not the
# operation (a server answers from the collection it was started on).
PRESENTATION = {
    "cli": {"collection", "as_json", "debug", "bib", "out_file", "no_stream", "quiet", "full",
            "fmt", "batch", "resume", "list_"},
    "http": {"stream"},
    "mcp": set(),
}

# Request fields a face does not offer, and why.
NOT_OFFERED = {
    # A chat's turns come from the terminal or stdin, a line each.
    ("cli", "chat"): {"message", "session_secret"},  # the data folder's owner needs none
    # MCP clients keep their own conversation; a turn is `ask` over MCP.
    ("mcp", "chat"): {"message", "session_id", "session_secret", "llm", "screen"},
    # Only the CLI ingests: a server answers from what was ingested.
    ("http", "ingest"): {f.name for f in fields(OPERATIONS["ingest"])},
    ("mcp", "ingest"): {f.name for f in fields(OPERATIONS["ingest"])},
}

MCP_TOOLS = {"search": "search_papers", "ask": "ask", "summarize": "summarize",
             "papers": "list_papers", "show": "get_paper", "map": "collection_map",
             "trends": "topic_trends"}


def cli_options() -> dict[str, set[str]]:
    group = typer.main.get_command(cli.app)
    return {name: {p.name for p in command.params}
            for name, command in group.commands.items() if name in OPERATIONS}


def http_options() -> dict[str, set[str]]:
    ask, search, summarize, chat, paper_map, trends = http._bodies()
    options = {name: set(model.model_fields) for name, model in
               (("ask", ask), ("search", search), ("summarize", summarize), ("chat", chat),
                ("map", paper_map), ("trends", trends))}
    options["papers"] = {"offset", "limit"}  # GET /api/papers?offset=&limit=
    options["show"] = {"paper_id"}  # GET /api/papers/{paper_id}
    return options


def mcp_options() -> dict[str, set[str]]:
    tools = asyncio.run(mcp.build(None).list_tools())
    by_name = {tool.name: set(tool.input_schema["properties"]) for tool in tools}
    return {operation: by_name[tool] for operation, tool in MCP_TOOLS.items()}


def faces() -> dict[str, dict[str, set[str]]]:
    return {"cli": cli_options(), "http": http_options(), "mcp": mcp_options()}


def test_every_face_offers_every_option_of_every_operation():
    missing = []
    for face, operations in faces().items():
        for operation, request_type in OPERATIONS.items():
            wanted = {f.name for f in fields(request_type)} - NOT_OFFERED.get(
                (face, operation), set())
            offered = {ALIASES.get(n, n) for n in operations.get(operation, set())}
            for name in sorted(wanted - offered):
                missing.append(f"{face} {operation}: no {name}")
    assert not missing, "options a face lacks:\n" + "\n".join(missing)


def test_no_face_has_an_option_the_request_lacks():
    extra = []
    for face, operations in faces().items():
        for operation, names in operations.items():
            known = {f.name for f in fields(OPERATIONS[operation])}
            for name in sorted({ALIASES.get(n, n) for n in names} - known - PRESENTATION[face]):
                extra.append(f"{face} {operation}: {name}")
    assert not extra, "options no request type declares:\n" + "\n".join(extra)


def test_http_bodies_carry_the_declared_bounds_and_help():
    _, search, summarize, *_ = http._bodies()
    k = search.model_json_schema()["properties"]["k"]
    bounded = next(a for a in k["anyOf"] if a.get("type") == "integer")
    assert (bounded["minimum"], bounded["maximum"]) == (1, 500)
    assert k["description"].startswith("At most this many papers")
    assert "category" in summarize.model_fields


def test_the_check_sees_a_missing_option(monkeypatch):
    """The check itself: a face that drops an option is reported."""
    real = http_options()
    real["search"] = real["search"] - {"category"}
    monkeypatch.setattr("tests.test_parity.http_options", lambda: real)
    try:
        test_every_face_offers_every_option_of_every_operation()
    except AssertionError as exc:
        assert "http search: no category" in str(exc)
    else:
        raise AssertionError("the parity check missed a dropped option")
