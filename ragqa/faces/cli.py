"""The `ragqa` command: parses arguments into a request (ragqa/requests.py), calls the
operation in ragqa.app, renders the result.

`ragqa --help` must stay instant (~0.1 s): the application layer (numpy and the whole pipeline,
~0.5 s of imports) and rich are imported when a command runs (`_ops()`, `_renderer()`), never at
the top of this module. tests/test_cli.py guards it.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ragqa.errors import UserError, disk_full_error, exit_code
from ragqa.requests import (
    AskRequest,
    ChatRequest,
    IngestRequest,
    MapRequest,
    PapersRequest,
    SearchRequest,
    ShowRequest,
    SummarizeRequest,
    TrendsRequest,
    options_of,
)
from ragqa.text import clean_question, json_text, safe
from ragqa.version import __version__

if TYPE_CHECKING:
    from types import ModuleType

    from ragqa.config import Settings
    from ragqa.faces.render import Renderer
    from ragqa.retrieval.retriever import Retriever

app = typer.Typer(
    help="Question answering over collections of ML-paper abstracts, with citations that point "
    "at real, retrieved papers. Works offline.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    # Plain help: rich help formatting costs ~0.15 s of imports on every `--help`.
    rich_markup_mode=None,
)

CollectionOpt = Annotated[str | None, typer.Option(
    "--collection", "-c", help="Collection name (default: RAGQA_COLLECTION or 'default').")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (schema: docs/json.md).")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")]


def _help(name: str) -> str:
    """An option's help as its request type declares it (the same text every face shows)."""
    return options_of(AskRequest)[name][1].help


VenueOpt = Annotated[str | None, typer.Option("--venue", help=_help("venue"))]
YearOpt = Annotated[int | None, typer.Option("--year", min=1, max=9999, help=_help("year"))]
LlmOpt = Annotated[str | None, typer.Option("--llm", help=_help("llm"))]
ScreenOpt = Annotated[str | None, typer.Option("--screen", help=_help("screen"))]
BibOpt = Annotated[Path | None, typer.Option(
    "--bib", help="Also write the cited papers as BibTeX to this file.")]
CategoryOpt = Annotated[str | None, typer.Option("--category", help=_help("category"))]


def _ops() -> ModuleType:
    """ragqa.app, the operations (imported when a command runs: see the module's docstring)."""
    import ragqa.app as operations

    return operations


def _settings_for(collection: str | None) -> tuple[Settings, str]:
    """The settings and collection of a command; with a secret set, freed heap memory scrubbed
    from now on (config.scrub_heap_if_secrets: process-wide, so the CLI's to do, not the
    library's)."""
    from ragqa.config import scrub_heap_if_secrets

    settings, name = _ops().settings_for(collection)
    scrub_heap_if_secrets(settings)
    return settings, name


def _renderer() -> Renderer:
    """rich costs ~0.1 s to import: `ragqa --help` never pays it."""
    from ragqa.faces.render import Renderer

    return Renderer()


def _markup(text: str) -> str:
    from ragqa.faces.render import markup

    return markup(text)


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
        if debug:
            raise
        # A full disk anywhere (a saved chat, an export, a cache) says so, and where.
        exc = disk_full_error(exc) or exc
        code = exit_code(exc)
        message = " ".join(safe(str(exc)).split()) or type(exc).__name__
        if code is None:  # a bug: still one line, and a way to see more
            message = (f"internal error: {type(exc).__name__}: {message[:300]} "
                       "(run with --debug for the traceback)")
        sys.stderr.write(f"ragqa: error: {message}\n")
        raise typer.Exit(code or 1) from None


# ---------------------------------------------------------------- ingest

@app.command()
def ingest(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Files or folders: seeds-style .txt, .jsonl[.gz], .csv, .json (arXiv metadata, "
        "OpenReview notes), .bib.", show_default=False)] = None,
    seeds: Annotated[bool, typer.Option("--seeds", help="Ingest the bundled seeds.")] = False,
    prune: Annotated[bool, typer.Option(
        "--prune", help="Delete papers that their source file no longer holds.")] = False,
    skip_bad: Annotated[bool, typer.Option(
        "--skip-bad", help="Skip bad records (and report how many) instead of stopping.")] = False,
    rebuild: Annotated[bool, typer.Option(
        "--rebuild", help="Drop the collection and embed everything again (e.g. after "
        "changing the embedder); without paths, re-embeds the papers it holds.")] = False,
    multilingual: Annotated[bool, typer.Option(
        "--multilingual", help="Also keep a multilingual vector per chunk, so that questions "
        "in other languages find the papers (about 8x the embedding time); without paths, adds "
        "them to what the collection holds.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    where: Annotated[list[str] | None, typer.Option(
        "--where", help="Keep only records that meet this: category=cs.CL, venue=ICLR, "
        "year>=2023 (repeat for several; all must hold).")] = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", min=1, help="Keep at most this many records (stops reading there).")] = None,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Add abstracts to a collection: incremental, idempotent, safe to interrupt."""
    from ragqa.index.ingest import PHASES

    out = _renderer()
    with _errors(debug), _no_gc_while_starting() as started:
        request = IngestRequest(paths=tuple(str(p) for p in paths or []), seeds=seeds,
                                prune=prune, skip_bad=skip_bad, rebuild=rebuild,
                                multilingual=multilingual, where=tuple(where or []),
                                limit=limit)
        settings, name = _settings_for(collection)
        shown = not quiet and not as_json
        report = _ops().ingest(settings, name, request,
                               reading=lambda: out.status(enabled=shown),
                               make_progress=lambda: out.ingest_progress(enabled=shown),
                               on_started=started)
        if as_json:
            out.json(asdict(report))
        else:
            out.ingest_report(report, quiet)
        PHASES.write()


@contextmanager
def _no_gc_while_starting() -> Iterator[Callable[[], None]]:
    """The garbage collector off until the caller says start-up is over (or the block ends):
    start-up imports chromadb, onnxruntime and numpy, ~90,000 objects that live as long as the
    process, and they made it run ~200 times for nothing (~0.05-0.08 s of CPU per `ragqa
    ingest`, on the path the embedder waits for)."""
    was_enabled = gc.isenabled()
    gc.disable()

    def started() -> None:
        if was_enabled and not gc.isenabled():
            gc.freeze()  # what start-up made stays: later collections need not look at it
            gc.enable()

    try:
        yield started
    finally:
        started()


def _check_out_file(option: str, path: Path | None) -> None:
    if path and not path.resolve().parent.is_dir():
        raise UserError(f"{option} {path}: no folder {path.resolve().parent}")


def _write_bib(path: Path | None, papers: list) -> int:
    """The papers (None for one the index lacks) as BibTeX; how many were written."""
    from ragqa.sources.export import to_bibtex

    found = [p for p in papers if p is not None]
    if path:
        path.write_text(to_bibtex(found), encoding="utf-8")
    return len(found)


# ---------------------------------------------------------------- search

def _run_batch(retriever: Retriever, batch: Path, template: SearchRequest) -> None:
    """BEIR-style: one `{"_id","text"}` per input line, one result line per query."""
    try:
        lines = batch.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{batch}: cannot read: {exc}") from None
    queries = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            queries.append((str(record["_id"]), str(record["text"])))
        except (ValueError, KeyError, TypeError):
            raise UserError(f"{batch}:{number}: each line must be a JSON object with "
                             "'_id' and 'text'") from None
    for qid, text in queries:
        request = replace(template, question=text)
        result = _ops().search(retriever, request, sentences=False)
        rows = [{"paper_id": h.paper.paper_id, "title": h.paper.title, "source": h.paper.source,
                 "score": round(h.score, 6)} for h in result.hits]
        sys.stdout.write(json_text({"_id": qid, "results": rows}) + "\n")


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
    venue: VenueOpt = None, year: YearOpt = None, category: CategoryOpt = None,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Find the papers that matter for a question, each with its best-matching sentence."""
    out = _renderer()
    with _errors(debug):
        if (question is None) == (batch is None):
            raise UserError("give a QUESTION or --batch FILE (one of them)")
        if batch is not None:  # each line's question replaces the placeholder
            request = SearchRequest(question="batch", k=k or 100, cut=cut, venue=venue,
                                    year=year, category=category)
        else:
            request = SearchRequest(question=question or "", k=k, cut=not no_cut, venue=venue,
                                    year=year, category=category)
        settings, name = _settings_for(collection)
        retriever = _ops().open_for_query(settings, name, quiet=as_json,
                                          question=None if batch else request.question)
        if batch is not None:
            _run_batch(retriever, batch, request)
            return
        result = _ops().search(retriever, request)
        if as_json:
            out.json(_ops().search_json(result, name))
        else:
            out.search_result(result)


# ---------------------------------------------------------------- ask

@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="Your question about the papers.")],
    llm: LlmOpt = None,
    no_stream: Annotated[bool, typer.Option("--no-stream", help="Wait for the whole answer.")
                         ] = False,
    k: Annotated[int | None, typer.Option("-k", "--top", min=1, help="At most this many "
                                          "papers as sources.")] = None,
    screen: ScreenOpt = None,
    unfold: Annotated[bool, typer.Option("--all", help=_help("unfold"))] = False,
    venue: VenueOpt = None, year: YearOpt = None, category: CategoryOpt = None,
    bib: BibOpt = None,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Answer a question from the papers, every sentence cited and checked."""
    out = _renderer()
    with _errors(debug):
        request = AskRequest(question=question, llm=llm or "auto", k=k, screen=screen,
                             venue=venue, year=year, category=category, unfold=unfold)
        _check_out_file("--bib", bib)
        settings, name = _settings_for(collection)
        model = _ops().llm_for(settings, request.llm)
        retriever = _ops().open_for_query(settings, name, quiet=as_json,
                                          question=request.question)
        stream = model is not None and not no_stream and not as_json and out.is_terminal
        with out.streaming(enabled=stream, waiting=model is not None) as on_token:
            answer = _ops().ask(retriever, request, model, on_token if stream else None,
                                on_screen=out.screening)
        if bib:
            _write_bib(bib, [retriever.lexical.paper(c.paper_id) for c in answer.citations])
        if as_json:
            out.json(answer.as_json())
        else:
            out.answer(answer, unfold_hint="ragqa ask --all lists them.")


# ---------------------------------------------------------------- chat

CHAT_HELP = """Commands:
  /more           the last list again, with the less certain papers it folded listed too
  /more 2 5       mark papers [2] and [5] of the last list relevant: the list is re-ranked
                  and re-cut by your marks, new candidates offered apart to review (offline)
  /not 3          mark paper [3] not relevant (both at once: /more 2 5 /not 3)
  /sources        the papers of the last answer
  /show N         paper [N] of the last answer, in full
  /reset          start a new session (the old one stays saved)
  /save [FILE]    write the transcript as Markdown (default: <session id>.md)
  /bib FILE       write every paper the session cited as BibTeX
  /mode           how answers are written (extractive or LLM)
  /help           this list
  /quit           leave (Ctrl-D too); Ctrl-C cancels an answer being written"""


class ChatShell:
    """The chat loop: questions become turns, lines starting with "/" are commands."""

    def __init__(self, settings: Settings, retriever: Retriever, llm: Any, llm_choice: str,
                 session: Any, out: Renderer, as_json: bool, stream: bool,
                 screen: str | None = None) -> None:
        self.settings, self.retriever, self.llm = settings, retriever, llm
        self.llm_choice, self.screen = llm_choice, screen
        self.session, self.out, self.as_json, self.stream = session, out, as_json, stream

    def handle(self, line: str) -> bool:
        """Process one line; False means quit."""
        from ragqa.answering.chat import save_session

        line = clean_question(line)
        if not line:
            return True
        marking = line.split()[0].lower() in ("/more", "/not")
        if line.startswith("/") and not marking:
            return self.command(line)
        try:
            with self.out.streaming(enabled=self.stream and not marking,
                                    waiting=self.llm is not None and not marking) as on_token:
                answer, turn = self._ask(line, on_token)
        except KeyboardInterrupt:
            self.out.err.print("[dim](answer cancelled)[/]")
            return True
        except UserError as exc:  # a marking of papers the last list does not have
            if not marking:
                raise
            self.out.err.print(_markup(str(exc)))
            return True
        save_session(self.settings, self.session)
        if self.as_json:
            sys.stdout.write(json_text(_ops().turn_json(self.session, turn)) + "\n")
            sys.stdout.flush()
        else:
            if turn.standalone != turn.question:
                # escaped: a title's "[/bold]" in the condensed question is text, not markup
                self.out.console.print(f"[dim]→ {_markup(turn.standalone)}[/]")
            self.out.answer(answer, unfold_hint="/more lists them.")
        return True

    def _ask(self, line: str, on_token):
        request = ChatRequest(message=line, session_id=self.session.session_id,
                              llm=self.llm_choice, screen=self.screen)
        return _ops().chat_turn(self.session, request, self.retriever, self.llm,
                                on_token if self.stream else None, on_screen=self.out.screening)

    def command(self, line: str) -> bool:
        from ragqa.answering.chat import new_session, save_session, transcript_markdown

        name, _, arg = line.partition(" ")
        last = self.session.turns[-1].answer if self.session.turns else None
        if name in ("/quit", "/exit", "/q"):
            return False
        if name == "/help":
            self.out.console.print(CHAT_HELP)
        elif name == "/mode":
            self.out.console.print(f"LLM: {self.llm.description}" if self.llm else
                                   "extractive (no LLM configured)")
        elif name == "/reset":
            self.session = new_session(self.session.collection)
            self.out.console.print(f"[dim]New session {self.session.session_id}[/]")
        elif name == "/sources":
            citations = (last or {}).get("citations", [])
            if citations:
                self.out.references(citations)
            else:
                self.out.console.print("The last answer cited no papers." if last else
                                       "No answer yet: ask a question first.")
        elif name == "/show":
            citations = {str(c["n"]): c for c in (last or {}).get("citations", [])}
            if arg.strip() not in citations:
                self.out.err.print(f"No \\[{_markup(arg.strip())}] in the last answer.")
            else:
                paper = self.retriever.lexical.paper(citations[arg.strip()]["paper_id"])
                if paper:
                    self.out.paper(paper)
        elif name == "/bib":
            if not arg.strip():
                self.out.err.print("/bib needs a file name: /bib refs.bib")
            else:
                self.out.console.print(f"Wrote {self.write_bib(Path(arg.strip()))} papers to "
                                       f"{_markup(arg.strip())}")
        elif name == "/save":
            path = Path(arg.strip() or f"{self.session.session_id}.md")
            path.write_text(transcript_markdown(self.session, self._urls()), encoding="utf-8")
            save_session(self.settings, self.session)
            self.out.console.print(f"Saved {path}")
        else:
            self.out.err.print(f"Unknown command {_markup(name)}; /help lists them.")
        return True


    def _cited(self) -> list:
        from ragqa.answering.chat import cited_paper_ids

        return [self.retriever.lexical.paper(pid) for pid in cited_paper_ids(self.session)]

    def _urls(self) -> dict[str, str]:
        return {p.paper_id: p.url for p in self._cited() if p is not None and p.url}

    def write_bib(self, path: Path) -> int:
        return _write_bib(path, self._cited())


def _read_lines(interactive: bool, history: Path) -> Iterator[str]:
    """Lines from the terminal (with editing and history) or from piped stdin."""
    if not interactive:
        yield from sys.stdin
        return
    import readline

    history.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        readline.read_history_file(history)
    try:
        while True:
            try:
                yield input("ragqa> ")
            except KeyboardInterrupt:
                sys.stdout.write("\n")
            except EOFError:
                sys.stdout.write("\n")
                return
    finally:
        with contextlib.suppress(OSError):
            readline.write_history_file(history)


@app.command()
def chat(
    session_id: Annotated[str | None, typer.Argument(
        help="With --resume: the session to continue (an id or its start; default: the "
        "latest).", show_default=False)] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue a saved session: `--resume` the latest, `--resume ID` "
        "that one.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List saved sessions.")] = False,
    llm: LlmOpt = None,
    no_stream: Annotated[bool, typer.Option("--no-stream", help="Wait for whole answers.")
                         ] = False,
    screen: ScreenOpt = None,
    collection: CollectionOpt = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="One JSON object per turn and line (the ask schema plus "
        "standalone_question).")] = False,
    bib: Annotated[Path | None, typer.Option(
        "--bib", help="On leaving, write every paper the session cited as BibTeX here.")
    ] = None,
    debug: DebugOpt = False,
) -> None:
    """Chat about the papers: follow-ups keep their context, every turn cites."""
    out = _renderer()
    with _errors(debug):
        settings, name = _settings_for(collection)
        if list_:
            sessions = _ops().list_sessions(settings)
            if as_json:
                out.json(sessions)
            else:
                out.sessions(sessions)
            return
        if session_id and not resume:
            raise UserError("a session id goes with --resume: ragqa chat --resume ID")
        _check_out_file("--bib", bib)
        checked = ChatRequest(message="-", llm=llm or "auto", screen=screen)  # before loading
        choice = checked.llm
        session = _ops().open_session(settings, name, resume, session_id)
        model = _ops().llm_for(settings, choice)
        retriever = _ops().open_for_query(settings, session.collection, quiet=as_json)
        interactive = sys.stdin.isatty()
        stream = model is not None and not no_stream and not as_json and out.is_terminal
        shell = ChatShell(settings, retriever, model, choice, session, out, as_json, stream,
                          checked.screen)
        if interactive and not as_json:
            out.chat_banner(session, model)
        for line in _read_lines(interactive, settings.home / "chat_history"):
            if not shell.handle(line):
                break
        if bib:
            shell.write_bib(bib)


# ---------------------------------------------------------------- summarize

@app.command()
def summarize(
    topic: Annotated[str | None, typer.Argument(help="What the summary is about.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Summarize the whole collection.")] = False,
    out_file: Annotated[Path | None, typer.Option("--out", help="Write Markdown to this file."
                                                  )] = None,
    max_papers: Annotated[int | None, typer.Option(
        "--max-papers", min=2, help="At most this many papers (a sample with --all).")] = None,
    llm: LlmOpt = None,
    screen: ScreenOpt = None,
    venue: VenueOpt = None, year: YearOpt = None, category: CategoryOpt = None,
    bib: BibOpt = None,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """A literature summary: themes, a paragraph each, every claim cited, references."""
    out = _renderer()
    with _errors(debug):
        request = SummarizeRequest(topic=topic, all=all_, max_papers=max_papers,
                                   llm=llm or "auto", screen=screen, venue=venue, year=year,
                                   category=category)
        if out_file and not out_file.resolve().parent.is_dir():
            raise UserError(f"--out {out_file}: no folder {out_file.resolve().parent}")
        _check_out_file("--bib", bib)
        settings, name = _settings_for(collection)
        model = _ops().llm_for(settings, request.llm)
        retriever = _ops().open_for_query(settings, name, quiet=as_json)
        with out.status(enabled=not as_json) as report:
            summary = _ops().summarize(
                retriever, request, model, on_progress=report,
                on_screen=lambda done, expected: report(
                    f"Screening: {done} of ~{expected} candidates read"))
        images = _summary_pictures(out_file, retriever, summary, report) \
            if out_file and summary.themes else []
        markdown = _ops().summary_markdown(summary, images)
        if out_file:
            out_file.write_text(markdown, encoding="utf-8")
        _write_bib(bib, list(summary.references))
        if as_json:
            out.json(_ops().summary_json(summary, retriever))
        elif out_file:
            out.console.print(f"Wrote {out_file}: {len(summary.themes)} themes, "
                              f"{len(summary.references)} references")
        else:
            out.summary(markdown, summary)
            trend = _ops().summary_trend(retriever, summary)
            if trend is not None:
                out.trend(trend, None)


def _summary_pictures(out_file: Path, retriever: Retriever, summary: Any,
                      report: Callable[[str], None]) -> list[tuple[str, str]]:
    """The pictures `summarize --out FILE.md` writes beside it (FILE.map.png, and
    FILE.trend.png when the papers span three or more years): (alt text, file name) each;
    none, said in one line, by an install without the maps extra (the text is written)."""
    from ragqa.errors import MissingExtra, require_extra
    from ragqa.faces.pictures import map_picture, trend_picture

    try:
        require_extra("openTSNE", "maps", "the pictures beside the summary")
        require_extra("matplotlib", "maps", "the pictures beside the summary")
    except MissingExtra as exc:
        sys.stderr.write(f"ragqa: {exc}\n")
        return []
    drawn = _ops().summary_pictures(retriever, summary, on_progress=report)
    written = []
    map_file = out_file.with_name(f"{out_file.stem}.map.png")
    map_picture(drawn["map"], map_file, focus=drawn["focus"])
    written.append((f"The {len(drawn['focus']['paper_ids'])} papers on the map of the "
                    "collection, coloured by theme", map_file.name))
    if drawn["trend"] is not None:
        trend_file = out_file.with_name(f"{out_file.stem}.trend.png")
        trend_picture(drawn["trend"], trend_file)
        written.append(("The papers per year", trend_file.name))
    return written


# ---------------------------------------------------------------- map and trends

@app.command("map")
def map_(
    out_file: Annotated[Path | None, typer.Option(
        "--out", help="Write the map: .html (one file, interactive, offline), .png or .svg."
        )] = None,
    highlight: Annotated[str | None, typer.Option(
        "--highlight", help=options_of(MapRequest)["highlight"][1].help)] = None,
    llm: Annotated[str | None, typer.Option(
        "--llm", help=options_of(MapRequest)["llm"][1].help)] = None,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """A map of the collection: every paper placed by its vectors, grouped into named themes
    (`--llm auto`: named by the configured LLM)."""
    out = _renderer()
    with _errors(debug):
        request = MapRequest(highlight=highlight, llm=llm or "none")
        if out_file is not None:
            if out_file.suffix.lower() not in (".html", ".png", ".svg"):
                raise UserError(f"--out {out_file}: a map is written as .html, .png or .svg")
            _check_out_file("--out", out_file)
        settings, name = _settings_for(collection)
        model = _ops().llm_for(settings, request.llm)
        retriever = _ops().open_for_query(settings, name, quiet=as_json)
        with out.status(enabled=not as_json) as report:
            result = _ops().paper_map(retriever, request, on_progress=report, llm=model)
        if out_file is not None:
            _write_map(out_file, result)
        if as_json:
            out.json(result)
        else:
            out.paper_map(result, out_file)


def _write_map(path: Path, result: dict) -> None:
    if path.suffix.lower() == ".html":
        from ragqa.faces.map_page import standalone_html

        temporary = path.with_name(f".{path.name}.part")
        temporary.write_text(standalone_html(result), encoding="utf-8")
        temporary.replace(path)
    else:
        from ragqa.faces.pictures import map_picture

        map_picture(result, path)


@app.command()
def trends(
    topic: Annotated[str, typer.Argument(help=options_of(TrendsRequest)["topic"][1].help)],
    out_file: Annotated[Path | None, typer.Option(
        "--out", help="Also draw the chart: .png or .svg.")] = None,
    by_venue: Annotated[bool, typer.Option(
        "--by-venue", help=options_of(TrendsRequest)["by_venue"][1].help)] = False,
    venue: VenueOpt = None, year: YearOpt = None, category: CategoryOpt = None,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """A topic over the years: its papers per year against the collection's."""
    out = _renderer()
    with _errors(debug):
        request = TrendsRequest(topic=topic, by_venue=by_venue, venue=venue, year=year,
                                category=category)
        if out_file is not None:
            from ragqa.faces.pictures import check_picture_path

            check_picture_path("--out", out_file)
        settings, name = _settings_for(collection)
        retriever = _ops().open_for_query(settings, name, quiet=as_json)
        result = _ops().trends(retriever, request)
        if out_file is not None:
            from ragqa.faces.pictures import trend_picture

            trend_picture(result, out_file)
        if as_json:
            out.json(result)
        else:
            out.trend(result, out_file)


# ---------------------------------------------------------------- eval

def _recall_ks(values: list[str] | None) -> list[int]:
    """`--k 10,100` or `--k 10 --k 100` -> [10, 100]."""
    from ragqa.evaluate import DEFAULT_KS

    ks: set[int] = set()
    for value in values or []:
        for part in value.split(","):
            if not part.strip().isdigit() or int(part) < 1:
                raise UserError(f"--k takes whole numbers of at least 1, not {part.strip()!r}")
            ks.add(int(part))
    return sorted(ks) or list(DEFAULT_KS)


@app.command("eval")
def eval_(
    folder: Annotated[Path | None, typer.Argument(
        help="A BEIR folder: corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv.",
        show_default=False, metavar="DIR")] = None,
    corpus: Annotated[Path | None, typer.Option(
        "--corpus", help="The corpus (JSONL of {\"_id\", \"title\", \"text\"}, may be .gz).")
    ] = None,
    queries: Annotated[Path | None, typer.Option(
        "--queries", help="The queries (JSONL of {\"_id\", \"text\"}).")] = None,
    qrels: Annotated[Path | None, typer.Option(
        "--qrels", help="The judgements (TSV: query-id, corpus-id, score).")] = None,
    split: Annotated[str, typer.Option("--split", help="Which qrels of the folder to use.")
                     ] = "test",
    k: Annotated[list[str] | None, typer.Option(
        "--k", metavar="K[,K...]",
        help="Recall cut-offs: --k 10,100 or --k 10 --k 100 (default 10 and 100).")] = None,
    skip_bad: Annotated[bool, typer.Option(
        "--skip-bad", help="Skip bad corpus records (and report how many) instead of stopping.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")] = False,
    collection: Annotated[str | None, typer.Option(
        "--collection", "-c", help="Collection to ingest into and search (default: "
        "eval-<data set folder>).")] = None,
    as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Measure retrieval on a labelled BEIR set: nDCG@10, recall@k, MRR@10."""
    import re

    from ragqa.evaluate import default_collection, load_eval_set, locate_dataset, run_eval

    out = _renderer()
    with _errors(debug):
        if folder is None and None in (corpus, queries, qrels):
            raise UserError("give a BEIR folder, or all of --corpus, --queries and --qrels")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", split) or ".." in split:
            raise UserError(f"--split must be a name such as test or dev, not {split!r}")
        ks = _recall_ks(k)
        dataset = locate_dataset(folder, corpus, queries, qrels, split)
        settings, name = _settings_for(collection or default_collection(dataset))
        data = load_eval_set(dataset, skip_bad=skip_bad)  # bad files fail before the store opens
        store = _ops().open_store(settings, name)
        shown = not quiet and not as_json
        with contextlib.ExitStack() as stack:
            status: list = []

            def on_query(done: int, total: int) -> None:
                # The spinner starts once ingest's progress bar is gone: rich shows one live
                # display at a time.
                if not status:
                    status.append(stack.enter_context(out.status(enabled=shown)))
                status[0](f"Searching: query {done + 1} of {total}")

            result = run_eval(store, data, ks, progress=out.ingest_progress(enabled=shown),
                              on_query=on_query)
        if as_json:
            out.json(result.as_json())
        else:
            from ragqa.faces.render import render_eval

            render_eval(out, result)


# ---------------------------------------------------------------- papers, show

@app.command()
def papers(
    full: Annotated[bool, typer.Option("--full", help="Print each abstract too.")] = False,
    fmt: Annotated[str | None, typer.Option(
        "--format", help="bibtex, csv or jsonl: every paper in that format on stdout (jsonl "
        "reads back with `ragqa ingest`: same ids and texts).")] = None,
    offset: Annotated[int, typer.Option(
        "--offset", min=0, help="Skip this many papers (the order is stable).")] = 0,
    limit: Annotated[int | None, typer.Option(
        "--limit", min=1, help="At most this many papers (default: all).")] = None,
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """List every paper of the collection (JSON: with full text and metadata)."""
    from ragqa.sources import export

    out = _renderer()
    with _errors(debug):
        writers = {"bibtex": export.to_bibtex, "csv": export.to_csv, "jsonl": export.to_jsonl}
        if fmt is not None and fmt not in writers:
            raise UserError(f"--format must be bibtex, csv or jsonl, not {fmt!r}")
        request = PapersRequest(offset=offset, limit=limit)
        settings, name = _settings_for(collection)
        retriever = _ops().open_for_query(settings, name, quiet=as_json or fmt is not None)
        _, items = _ops().papers_page(retriever, request)
        if fmt is not None:
            sys.stdout.write(writers[fmt](items))
        elif as_json:
            out.json(_ops().papers_json(items, name))
        else:
            out.paper_table(items, name, full)


@app.command()
def show(
    paper_id: Annotated[str, typer.Argument(help="A paper id (or a unique prefix of one).")],
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Show one paper: its full text and metadata."""
    out = _renderer()
    with _errors(debug):
        request = ShowRequest(paper_id=paper_id)
        settings, name = _settings_for(collection)
        retriever = _ops().open_for_query(settings, name, quiet=as_json)
        paper = _ops().find_paper(retriever, name, request)
        if as_json:
            out.json(_ops().paper_json(paper))
        else:
            out.paper(paper)


# ---------------------------------------------------------------- serve, mcp

@app.command()
def serve(
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on; anything but loopback needs --token.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="TCP port.")] = 8000,
    token: Annotated[str | None, typer.Option(
        "--token", help="Require 'Authorization: Bearer TOKEN' (default: RAGQA_SERVE_TOKEN; "
        "the variable keeps it out of the process list).", show_default=False)] = None,
    cors: Annotated[str | None, typer.Option(
        "--cors", metavar="ORIGIN", help="Let pages from this origin call the API "
        "(default: no CORS; '*' needs a token).")] = None,
    max_concurrent: Annotated[int, typer.Option(
        "--max-concurrent", min=0, help="Answers (ask, chat, summarize, map, /v1, MCP) that run "
        "at once; twice as many more wait, beyond that 503 with Retry-After (0: no limit).")] = 4,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", metavar="NAME", help="Also answer requests for this host name (a "
        "loopback server answers only 127.0.0.1, localhost and [::1]; repeat for several).")
    ] = None,
    collection: CollectionOpt = None, debug: DebugOpt = False,
) -> None:
    """Serve the collection over HTTP: JSON API, web page, OpenAI-compatible /v1, MCP at /mcp."""
    from ragqa.faces import http as server

    with _errors(debug):
        settings, name = _settings_for(collection)
        secret = token if token is not None else settings.serve_token.reveal()
        server.check_bind(host, secret, cors)
        listening = server.listen(host, port)  # a port in use fails before the model loads
        core = _ops().App.serving(settings, name)
        core.retriever()  # the embedder, Chroma and the BM25 snapshot, before any request
        server.run(core, listening, secret, cors, tuple(allow_host or ()), max_concurrent)


@app.command()
def mcp(collection: CollectionOpt = None, debug: DebugOpt = False) -> None:
    """Serve the Model Context Protocol over stdio (for Claude Desktop, Cursor, ...)."""
    from ragqa.faces import mcp as mcp_server

    with _errors(debug):
        settings, name = _settings_for(collection)
        core = _ops().App.serving(settings, name)
        core.retriever()
        mcp_server.run_stdio(core)


# ---------------------------------------------------------------- doctor

@app.command()
def doctor(
    collection: CollectionOpt = None, as_json: JsonOpt = False, debug: DebugOpt = False,
) -> None:
    """Print the effective settings (keys masked) and check embedder, store and LLM."""
    from ragqa.faces.doctor import run_checks

    out = _renderer()
    with _errors(debug):
        settings, name = _settings_for(collection)
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
