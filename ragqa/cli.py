"""The `ragqa` command: parses arguments, calls the library, renders the result.

Heavy libraries (chromadb, llama-index, onnxruntime) are imported inside the commands, never at
the top of this module: `ragqa --help` must stay instant.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ragqa import __version__
from ragqa.render import Renderer, safe

if TYPE_CHECKING:
    from ragqa.config import Settings
    from ragqa.corpus import Paper
    from ragqa.retrieve import Retriever, SearchResult
    from ragqa.store import Store

app = typer.Typer(
    help="Question answering over collections of ML-paper abstracts, with citations that point "
    "at real, retrieved papers. Works offline.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
)

CollectionOpt = Annotated[str | None, typer.Option(
    "--collection", "-c", help="Collection name (default: RAGQA_COLLECTION or 'default').")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (schema in the README).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]


class UsageError(ValueError):
    """Bad arguments (exit code 2)."""


def _exit_code(exc: BaseException) -> int | None:
    """2 for bad input or usage, 1 for a runtime failure, None for a bug (re-raised)."""
    from ragqa.config import ConfigError
    from ragqa.corpus import CorpusError

    if isinstance(exc, UsageError | ConfigError | CorpusError):
        return 2
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"IndexMismatchError"}:
        return 2
    if names & {"StoreError", "EmbeddingError", "LockTimeout", "LLMError", "OSError"}:
        return 1
    return None


@contextmanager
def _errors(debug: bool) -> Iterator[None]:
    """One clear line on stderr and the contract's exit code, never a traceback (unless
    --debug)."""
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("ragqa: interrupted\n")
        raise typer.Exit(130) from None
    except Exception as exc:  # noqa: BLE001 - the one place that turns errors into exit codes
        code = _exit_code(exc)
        if debug or code is None:
            raise
        message = " ".join(safe(str(exc)).split()) or type(exc).__name__
        sys.stderr.write(f"ragqa: error: {message}\n")
        raise typer.Exit(code) from None


def _settings(collection: str | None) -> tuple[Settings, str]:
    from ragqa.config import load_settings
    from ragqa.store import validate_collection_name

    settings = load_settings()
    name = collection or settings.collection
    try:
        validate_collection_name(name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return settings, name


def _open_store(settings: Settings, name: str) -> Store:
    from ragqa.embeddings import make_encoder
    from ragqa.store import Store

    return Store(settings, name, make_encoder(settings))


def _open_for_query(settings: Settings, name: str, quiet: bool = False) -> Retriever:
    """The retriever of a collection; a collection never filled gets the bundled seeds first."""
    from ragqa.ingest import ingest_paths
    from ragqa.resources import seed_files
    from ragqa.retrieve import Retriever

    store = _open_store(settings, name)
    if not store.exists() or store.count() == 0:
        if not quiet:
            sys.stderr.write(f"ragqa: collection {name!r} is empty; ingesting the bundled "
                             "ICML 2026 seeds (29 abstracts) first\n")
        ingest_paths(store, seed_files())
    return Retriever(store)


# ---------------------------------------------------------------- ingest

@app.command()
def ingest(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Files or folders: seeds-style .txt, .jsonl[.gz], .csv.", show_default=False)] = None,
    seeds: Annotated[bool, typer.Option("--seeds", help="Ingest the bundled seeds.")] = False,
    prune: Annotated[bool, typer.Option(
        "--prune", help="Delete papers that their source file no longer holds.")] = False,
    skip_bad: Annotated[bool, typer.Option(
        "--skip-bad", help="Skip bad records (and report how many) instead of stopping.")] = False,
    rebuild: Annotated[bool, typer.Option(
        "--rebuild", help="Drop the collection and embed everything again (e.g. after "
        "changing the embedder); without paths, re-embeds the papers it holds.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Add abstracts to a collection: incremental, idempotent, safe to interrupt."""
    from ragqa.corpus import read_sources
    from ragqa.ingest import ingest_sources
    from ragqa.resources import seed_files

    out = Renderer()
    with _errors(debug):
        sources = list(paths or []) + (seed_files() if seeds else [])
        if not sources and not rebuild:
            raise UsageError("name files or folders to ingest, or use --seeds for the bundled "
                             "ICML 2026 abstracts")
        settings, name = _settings(collection)
        read = read_sources(sources, skip_bad=skip_bad) if sources else None
        store = _open_store(settings, name)
        progress = out.ingest_progress(enabled=not quiet and not as_json)
        report = ingest_sources(store, read, prune=prune, rebuild=rebuild, progress=progress)
        if as_json:
            out.json(asdict(report))
        else:
            out.ingest_report(report, quiet)


# ---------------------------------------------------------------- search

def _hit_json(rank: int, hit: Any) -> dict:
    paper = hit.paper
    return {
        "rank": rank, "paper_id": paper.paper_id, "title": paper.title, "source": paper.source,
        "score": round(hit.score, 6), "similarity": round(hit.similarity, 4),
        "bm25": round(hit.bm25, 4), "z": round(hit.z, 3), "coverage": round(hit.coverage, 3),
        "best_sentence": hit.best_sentence, "venue": paper.venue, "year": paper.year,
        "authors": paper.authors, "url": paper.url,
    }


def search_json(result: SearchResult, collection: str) -> dict:
    return {
        "query": result.query, "collection": collection, "total_papers": result.total_papers,
        "filters": result.filters, "relevance_cut": result.cut_applied,
        "results": [_hit_json(i, h) for i, h in enumerate(result.hits, start=1)],
    }


def _run_batch(retriever: Retriever, batch: Path, k: int, cut: bool, venue: str | None,
               year: int | None) -> None:
    """BEIR-style: one `{"_id","text"}` per input line, one result line per query."""
    try:
        lines = batch.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{batch}: cannot read: {exc}") from None
    queries = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            queries.append((str(record["_id"]), str(record["text"])))
        except (ValueError, KeyError, TypeError):
            raise UsageError(f"{batch}:{number}: each line must be a JSON object with "
                             "'_id' and 'text'") from None
    for qid, text in queries:
        result = retriever.search(text, k=k, venue=venue, year=year, cut=cut)
        rows = [{"paper_id": h.paper.paper_id, "title": h.paper.title, "source": h.paper.source,
                 "score": round(h.score, 6)} for h in result.hits]
        sys.stdout.write(json.dumps({"_id": qid, "results": rows}, ensure_ascii=False) + "\n")


@app.command()
def search(
    question: Annotated[str | None, typer.Argument(help="What to look for.")] = None,
    k: Annotated[int | None, typer.Option(
        "-k", "--top", min=1, help="At most this many papers (default: all relevant; "
        "100 with --batch).")] = None,
    no_cut: Annotated[bool, typer.Option(
        "--no-cut", help="Rank without the relevance cut (top k, default 10).")] = False,
    batch: Annotated[Path | None, typer.Option(
        "--batch", help="JSONL of {\"_id\",\"text\"} queries; one JSON result line each "
        "(ranked, no relevance cut unless --cut).")] = None,
    cut: Annotated[bool, typer.Option("--cut", help="With --batch: apply the cut.")] = False,
    venue: Annotated[str | None, typer.Option(help="Only papers of this venue.")] = None,
    year: Annotated[int | None, typer.Option(help="Only papers of this year.")] = None,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Find the papers that matter for a question, each with its best-matching sentence."""
    out = Renderer()
    with _errors(debug):
        if (question is None) == (batch is None):
            raise UsageError("give a QUESTION or --batch FILE (one of them)")
        if question is not None and not question.strip():
            raise UsageError("the question is empty")
        settings, name = _settings(collection)
        retriever = _open_for_query(settings, name, quiet=as_json)
        if batch is not None:
            _run_batch(retriever, batch, k or 100, cut, venue, year)
            return
        assert question is not None
        result = retriever.search(question, k=k or (10 if no_cut else None), venue=venue,
                                  year=year, cut=not no_cut)
        if as_json:
            out.json(search_json(result, name))
        else:
            out.search_result(result)


# ---------------------------------------------------------------- ask

def answer_json(answer: Any) -> dict:
    return {
        "question": answer.question, "mode": answer.mode, "answer": answer.text,
        "citations": [asdict(c) for c in answer.citations], "unsupported": answer.unsupported,
        "dropped_citations": answer.dropped_citations, "language": answer.language,
        "retrieval_query": answer.retrieval_query, "notice": answer.notice,
        "model": answer.model, "total_papers": answer.total_papers,
        "papers": [{"paper_id": h.paper.paper_id, "title": h.paper.title,
                    "source": h.paper.source, "score": round(h.score, 6)} for h in answer.hits],
    }


def _llm_for(settings: Settings, choice: str | None):
    from ragqa.llm import make_llm

    if choice not in (None, "auto", "openai", "none"):
        raise UsageError(f"--llm must be auto, openai or none, not {choice!r}")
    if choice and choice != "auto":
        settings = settings.with_overrides(llm=choice)
    return make_llm(settings)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="Your question about the papers.")],
    llm: Annotated[str | None, typer.Option(
        "--llm", help="auto (an LLM when OPENAI_API_KEY or OPENAI_BASE_URL is set), openai, "
        "or none (extractive).")] = None,
    no_stream: Annotated[bool, typer.Option("--no-stream", help="Wait for the whole answer.")
                         ] = False,
    k: Annotated[int | None, typer.Option("-k", "--top", min=1, help="At most this many "
                                          "papers as sources.")] = None,
    venue: Annotated[str | None, typer.Option(help="Only papers of this venue.")] = None,
    year: Annotated[int | None, typer.Option(help="Only papers of this year.")] = None,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Answer a question from the papers, every sentence cited and checked."""
    from ragqa.answer import answer_question

    out = Renderer()
    with _errors(debug):
        if not question.strip():
            raise UsageError("the question is empty")
        settings, name = _settings(collection)
        model = _llm_for(settings, llm)
        retriever = _open_for_query(settings, name, quiet=as_json)
        stream = model is not None and not no_stream and not as_json and out.is_terminal
        with out.streaming(enabled=stream) as on_token:
            answer = answer_question(retriever, question.strip(), llm=model,
                                     on_token=on_token if stream else None, k=k, venue=venue,
                                     year=year)
        if as_json:
            out.json(answer_json(answer))
        else:
            out.answer(answer)


# ---------------------------------------------------------------- papers, show

def paper_json(paper: Paper) -> dict:
    record = asdict(paper)
    record["code_urls"] = paper.code_urls
    return record


@app.command()
def papers(
    full: Annotated[bool, typer.Option("--full", help="Print each abstract too.")] = False,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """List every paper of the collection (JSON: with full text and metadata)."""
    out = Renderer()
    with _errors(debug):
        settings, name = _settings(collection)
        retriever = _open_for_query(settings, name, quiet=as_json)
        items = retriever.lexical.all_papers() if retriever.lexical else []
        if as_json:
            out.json({"collection": name, "count": len(items),
                      "papers": [paper_json(p) for p in items]})
        else:
            out.paper_table(items, name, full)


@app.command()
def show(
    paper_id: Annotated[str, typer.Argument(help="A paper id (or a unique prefix of one).")],
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Show one paper: its full text and metadata."""
    out = Renderer()
    with _errors(debug):
        settings, name = _settings(collection)
        retriever = _open_for_query(settings, name, quiet=as_json)
        index = retriever.lexical
        paper = index.paper(paper_id) if index else None
        if paper is None and index:
            matches = index.find_prefix(paper_id)
            if len(matches) > 1:
                raise UsageError(f"{paper_id!r} is the start of several ids: "
                                 f"{', '.join(matches)}")
            paper = index.paper(matches[0]) if matches else None
        if paper is None:
            raise UsageError(f"no paper with id {paper_id!r} in collection {name!r}")
        if as_json:
            out.json(paper_json(paper))
        else:
            out.paper(paper)


# ---------------------------------------------------------------- doctor

@app.command()
def doctor(
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Print the effective settings (keys masked) and check embedder, store and LLM."""
    from ragqa.doctor import run_checks

    out = Renderer()
    with _errors(debug):
        settings, name = _settings(collection)
        checks = run_checks(settings, name)
        if as_json:
            out.json({"version": __version__, "collection": name,
                      "settings": dict(settings.describe()), "checks": checks})
        else:
            out.doctor(settings, name, checks)
        if not all(c["ok"] for c in checks):
            raise typer.Exit(1)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"ragqa {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool | None, typer.Option(
        "--version", callback=_version, is_eager=True, help="Show the version.")] = None,
) -> None:
    """ragqa: answers from ML-paper abstracts, citing real papers."""


def main() -> None:
    app()
