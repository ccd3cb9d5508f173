"""The Model Context Protocol face: ragqa's operations as MCP tools (the official `mcp` SDK),
over stdio (`ragqa mcp`, for Claude Desktop, Cursor, ...) or streamable HTTP (`/mcp` of
`ragqa serve`). Each tool returns the `--json` object of the matching command.

Tools are plain functions over one `ragqa.app.App`; the SDK runs them in worker threads, so a
long answer never blocks the HTTP server's other requests."""

# No `from __future__ import annotations`: the tools' parameter annotations are built from the
# request types (`_param`) and must be objects the SDK can read when each tool is defined.

from typing import TYPE_CHECKING, Annotated, Any, Literal, get_type_hints

from ragqa import __version__
from ragqa.errors import error_message
from ragqa.requests import (
    AskRequest,
    MapRequest,
    PapersRequest,
    SearchRequest,
    ShowRequest,
    SummarizeRequest,
    TrendsRequest,
    options_of,
)

if TYPE_CHECKING:
    from ragqa.app import App

INSTRUCTIONS = (
    "Search and cite ML-paper abstracts. search_papers finds the papers relevant to a question; "
    "ask answers with citations [n] that point at real, retrieved papers; get_paper gives one "
    "paper's full abstract and metadata; list_papers pages through the collection; summarize "
    "writes a themed, cited literature summary of a topic or of the whole collection; "
    "collection_map names the collection's themes and says in which the papers of a question "
    "fall; topic_trends counts a topic's papers per year.")


def _param(request_type: type, name: str) -> Any:
    """A tool parameter declared as the request type declares the field: its type, bounds and
    help become the tool's JSON schema."""
    from pydantic import Field

    _, spec = options_of(request_type)[name]
    kind = Literal[spec.choices] if spec.choices else get_type_hints(request_type)[name]
    return Annotated[kind, Field(description=spec.help, ge=spec.ge, le=spec.le,
                                 max_length=spec.max_length)]


def build(core: "App") -> Any:
    """The MCPServer with ragqa's tools over `core`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server = MCPServer("ragqa", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")
    # Every tool reads the collection; none changes it. Answers from an LLM are not
    # idempotent, and with one configured the server calls it (open world).
    reads = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
    writes_prose = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                   idempotent_hint=False, open_world_hint=True)

    def run(fn, *args: Any, **kwargs: Any) -> Any:
        """The operation's result, or its error as the tool's error (one line, no traceback)."""
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure is the tool's one-line error
            raise ToolError(error_message(exc)) from None

    S, A, Z = SearchRequest, AskRequest, SummarizeRequest

    @server.tool(annotations=reads, description=(
        "Find the papers of the collection that matter for a query. Returns the `ragqa search "
        "--json` object: query, total_papers, filters, and results, a list of papers (rank, "
        "paper_id, title, source, score, best_sentence, venue, year, authors, url), all that "
        "pass the relevance cut, or the top k. venue, year and category filter the papers."))
    def search_papers(query: _param(S, "question"),
                      k: _param(S, "k") = None,
                      cut: _param(S, "cut") = True,
                      venue: _param(S, "venue") = None, year: _param(S, "year") = None,
                      category: _param(S, "category") = None) -> dict[str, Any]:
        return run(lambda: core.search(SearchRequest(
            question=query, k=k, cut=cut, venue=venue, year=year, category=category)))

    @server.tool(annotations=writes_prose, description=(
        "Answer a question from the papers. Returns the `ragqa ask --json` object: answer (text "
        "whose [n] cite papers), citations (n, paper_id, title, source, quote: the sentence of "
        "the abstract that supports it), mode (extractive, or llm when the server has an LLM), "
        "papers (the ones retrieved, each with its sentence), notice, screening (when an LLM "
        "screened a list's candidates: how many it read, batches, accepted, tokens, seconds). "
        "Every citation points at a retrieved paper."))
    def ask(question: _param(A, "question"), llm: _param(A, "llm") = "auto",
            k: _param(A, "k") = None, screen: _param(A, "screen") = None,
            venue: _param(A, "venue") = None, year: _param(A, "year") = None,
            category: _param(A, "category") = None) -> dict[str, Any]:
        return run(lambda: core.ask(AskRequest(question=question, llm=llm, k=k, screen=screen,
                                               venue=venue, year=year, category=category)))

    @server.tool(annotations=reads, description=(
        "One paper by its paper_id (exactly as search_papers or ask cite it). Returns the "
        "`ragqa show --json` object: paper_id, title, text (the full abstract), authors, venue, "
        "year, url, source, code_urls."))
    def get_paper(paper_id: _param(ShowRequest, "paper_id")) -> dict[str, Any]:
        return run(lambda: core.show(ShowRequest(paper_id=paper_id)))

    @server.tool(annotations=reads, description=(
        "The papers of the collection, a page at a time. Returns {total, offset, limit, papers: "
        "[the `ragqa show --json` object of each]}."))
    def list_papers(offset: _param(PapersRequest, "offset") = 0,
                    limit: _param(PapersRequest, "limit") = 50) -> dict[str, Any]:
        return run(lambda: core.papers(PapersRequest(offset=offset, limit=limit)))

    @server.tool(annotations=writes_prose, description=(
        "A literature summary of the papers on a topic, or of the whole collection (all=true, "
        "no topic; max_papers samples it). Returns the `ragqa summarize --json` object: "
        "overview, themes (name, size, text with [n] citations, papers), references (n, "
        "paper_id, title, source), mode."))
    def summarize(topic: _param(Z, "topic") = None, all: _param(Z, "all") = False,  # noqa: A002
                  max_papers: _param(Z, "max_papers") = None,
                  llm: _param(Z, "llm") = "auto", screen: _param(Z, "screen") = None,
                  venue: _param(Z, "venue") = None, year: _param(Z, "year") = None,
                  category: _param(Z, "category") = None) -> dict[str, Any]:
        return run(lambda: core.summarize(SummarizeRequest(
            topic=topic, all=all, max_papers=max_papers, llm=llm, screen=screen, venue=venue,
            year=year, category=category))[0])

    @server.tool(annotations=reads, description=(
        "The map of the collection: its themes (theme, name, papers, and x, y: where its label "
        "sits in the unit square) and, with highlight (a list question), the papers it returns "
        "with the theme each falls in. Returns the `ragqa map --json` object without its "
        "per-paper points (a conference's are megabytes): collection, papers, method, themes, "
        "highlight {question, paper_ids, papers: [paper_id, title, source, theme]}."))
    def collection_map(highlight: _param(MapRequest, "highlight") = None) -> dict[str, Any]:
        from ragqa.app import map_digest

        return run(lambda: map_digest(core.map(MapRequest(highlight=highlight))))

    @server.tool(annotations=reads, description=(
        "A topic's papers per year against the collection's papers per year (the papers the "
        "list decision keeps for the topic). Returns the `ragqa trends --json` object: topic, "
        "papers, years [{year, papers, collection, share}], without_year {papers, collection}, "
        "results [paper_id, title, source, year, venue]. Needs papers of three or more years."))
    def topic_trends(topic: _param(TrendsRequest, "topic"),
                     venue: _param(TrendsRequest, "venue") = None,
                     year: _param(TrendsRequest, "year") = None,
                     category: _param(TrendsRequest, "category") = None) -> dict[str, Any]:
        return run(lambda: core.trends(TrendsRequest(topic=topic, venue=venue, year=year,
                                                     category=category)))

    @server.tool(annotations=reads, description=(
        "The collections of this ragqa store. Returns {\"current\": the collection the tools "
        "answer from, \"papers\": how many papers it holds, \"collections\": [{\"name\"}]}."))
    def list_collections() -> dict[str, Any]:
        return run(lambda: {"current": core.name, "papers": core.retriever().total_papers,
                            "collections": core.collections()})

    return server


def http_app(core: "App", host: str = "127.0.0.1") -> Any:
    """The streamable-HTTP app (its route is /mcp). The SDK's own Host and Origin checks are
    off: `ragqa serve` checks the Host header of every route (faces/http.py, HostCheck) and
    `--cors` decides origins for /mcp as for every other route."""
    from mcp.server.transport_security import TransportSecuritySettings

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return build(core).streamable_http_app(streamable_http_path="/mcp", host=host,
                                           transport_security=security)


def run_stdio(core: "App") -> None:
    import anyio

    anyio.run(build(core).run_stdio_async)
