"""The Model Context Protocol face: ragqa's operations as MCP tools (the official `mcp` SDK),
over stdio (`ragqa mcp`, for Claude Desktop, Cursor, ...) or streamable HTTP (`/mcp` of
`ragqa serve`). Each tool returns the `--json` object of the matching command.

Tools are plain functions over one `ragqa.app.App`; the SDK runs them in worker threads, so a
long answer never blocks the HTTP server's other requests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragqa import __version__
from ragqa.errors import error_message

if TYPE_CHECKING:
    from ragqa.app import App

INSTRUCTIONS = (
    "Search and cite ML-paper abstracts. search_papers finds the papers relevant to a question; "
    "ask answers with citations [n] that point at real, retrieved papers; get_paper gives one "
    "paper's full abstract and metadata; summarize writes a themed, cited literature summary.")


def build(core: App) -> Any:
    """The MCPServer with ragqa's tools over `core`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError


    server = MCPServer("ragqa", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")

    def run(fn, *args: Any, **kwargs: Any) -> Any:
        """The operation's result, or its error as the tool's error (one line, no traceback)."""
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure is the tool's one-line error
            raise ToolError(error_message(exc)) from None

    @server.tool(description=(
        "Find the papers of the collection that matter for a query. Returns the `ragqa search "
        "--json` object: query, total_papers, filters, and results, a list of papers (rank, "
        "paper_id, title, source, score, best_sentence, venue, year, authors, url), all that "
        "pass the relevance cut, or the top k. venue and year filter the papers."))
    def search_papers(query: str, k: int | None = None, venue: str | None = None,
                      year: int | None = None) -> dict[str, Any]:
        return run(core.search, query, k=k, venue=venue, year=year)

    @server.tool(description=(
        "Answer a question from the papers. Returns the `ragqa ask --json` object: answer (text "
        "whose [n] cite papers), citations (n, paper_id, title, source, quote: the sentence of "
        "the abstract that supports it), mode (extractive, or llm when the server has an LLM), "
        "papers (the ones retrieved), notice. Every citation points at a retrieved paper."))
    def ask(question: str) -> dict[str, Any]:
        return run(core.ask, question)

    @server.tool(description=(
        "One paper by its paper_id (or a unique start of it), as cited by search_papers or ask. "
        "Returns the `ragqa show --json` object: paper_id, title, text (the full abstract), "
        "authors, venue, year, url, source, code_urls."))
    def get_paper(paper_id: str) -> dict[str, Any]:
        return run(core.show, paper_id)

    @server.tool(description=(
        "A literature summary of the papers on a topic. Returns the `ragqa summarize --json` "
        "object: overview, themes (name, size, text with [n] citations, papers), references "
        "(n, paper_id, title, source), mode."))
    def summarize(topic: str) -> dict[str, Any]:
        return run(lambda: core.summarize(topic)[0])

    @server.tool(description=(
        "The collections of this ragqa store. Returns {\"current\": the collection the tools "
        "answer from, \"papers\": how many papers it holds, \"collections\": [{\"name\"}]}."))
    def list_collections() -> dict[str, Any]:
        return run(lambda: {"current": core.name, "papers": core.retriever().total_papers,
                            "collections": core.collections()})

    return server


def http_app(core: App, host: str = "127.0.0.1") -> Any:
    """The streamable-HTTP app (its route is /mcp); loopback binds keep the SDK's DNS-rebinding
    check, other binds rely on the server's token."""
    from mcp.server.transport_security import TransportSecuritySettings

    security = None if host in ("127.0.0.1", "localhost", "::1") else \
        TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return build(core).streamable_http_app(streamable_http_path="/mcp", host=host,
                                           transport_security=security)


def run_stdio(core: App) -> None:
    import anyio

    anyio.run(build(core).run_stdio_async)
