"""Terminal and JSON rendering for the CLI (rich). Every string that came from an abstract goes
through `safe()` first: an abstract must not be able to move the cursor or rewrite the user's
terminal with escape sequences."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragqa.answering.messages import message
from ragqa.answering.summarize import summary_mode
from ragqa.index.ingest import Progress
from ragqa.models.language import detect_language
from ragqa.sources.paper import tally_summary
from ragqa.text import json_text, safe

if TYPE_CHECKING:
    from ragqa.config import Settings
    from ragqa.index.ingest import IngestReport
    from ragqa.retrieval.types import SearchResult
    from ragqa.sources.paper import Paper

def markup(text: str) -> str:
    """Untrusted text made inert for the terminal and for rich's markup."""
    return escape(safe(text))


_SPARKS = "▁▂▃▄▅▆▇█"  # a share per year, lowest to highest


class Renderer:
    def __init__(self) -> None:
        self.console = Console(highlight=False, soft_wrap=False)
        self.err = Console(stderr=True, highlight=False)
        # what the "waiting for the model" line says (screening sets its progress there)
        self.wait_label = "waiting for the model"

    @property
    def is_terminal(self) -> bool:
        return self.console.is_terminal

    def json(self, payload: Any) -> None:
        sys.stdout.write(json_text(payload, indent=2) + "\n")

    # ------------------------------------------------------------ ingest

    def ingest_progress(self, enabled: bool):

        if not enabled or not self.err.is_terminal:
            return Progress()
        return _RichProgress(self.err)

    def ingest_report(self, report: IngestReport, quiet: bool) -> None:
        parts = [f"{report.added} added", f"{report.updated} updated",
                 f"{report.deleted} deleted", f"{report.unchanged} unchanged"]
        if report.moved:
            parts.append(f"{report.moved} moved")
        line = (f"Collection [bold]{escape(report.collection)}[/]: {', '.join(parts)}; "
                f"{report.papers_total} papers in all ({report.chunks} chunks embedded, "
                f"{report.seconds:.1f} s)")
        self.console.print(line)
        if report.multilingual:
            self.console.print(f"Multilingual vectors: {report.multilingual_embedded} chunks "
                               f"embedded, {report.multilingual_chunks} in all, "
                               f"{report.multilingual_seconds:.1f} s")
        if report.tallies:
            self.err.print(markup(tally_summary(report.tallies)))
        if report.skipped_bad:
            self.err.print(f"[yellow]Skipped {report.skipped_bad} bad records[/]"
                           + ("" if quiet else ":"))
            if not quiet:
                for message in report.skipped_messages[:20]:
                    self.err.print(f"  {markup(message)}")
        if report.not_in_sources:
            self.err.print(f"{report.not_in_sources} papers of these files are no longer in them;"
                           " `--prune` deletes them")

    # ------------------------------------------------------------ search

    def search_result(self, result: SearchResult) -> None:

        language = detect_language(result.query)
        if not result.hits:
            self.console.print(markup(message("search.none", language,
                                              total=result.total_papers, query=result.query)))
            return
        core = [h for h in result.hits if h.tier != "tail"]
        papers = message("search.count", language, count=len(core))
        # The values are made inert, not the line: the count is in bold (the catalogue's
        # texts hold no markup).
        self.console.print(message("search.found", language, papers=f"[bold]{papers}[/]",
                                   total=result.total_papers, query=markup(result.query))
                           + "\n" if core else markup(message(
                               "search.doubted", language, total=result.total_papers,
                               query=result.query)))
        for rank, hit in enumerate(core, start=1):
            paper = hit.paper
            self.console.print(f"[bold cyan]{rank}.[/] [bold]{markup(paper.title)}[/]  "
                               f"[dim]{markup(paper.source)} · id {markup(paper.paper_id)} · "
                               f"score {hit.score:.4f}[/]")
            self.console.print(f"   {markup(hit.best_sentence)}\n")
        if len(core) < len(result.hits):  # a list's less certain tail: folded (issue 45)
            folded = message("label.folded", language, count=len(result.hits) - len(core))
            self.console.print(f"[dim]{escape(folded)}: --json lists them (tier \"tail\")[/]")

    # ------------------------------------------------------------ answers

    @contextmanager
    def streaming(self, enabled: bool, waiting: bool = False
                  ) -> Iterator[Callable[[str], None]]:
        """Shows tokens as they arrive, then clears them: what stays on screen is the checked
        answer that `answer()` renders afterwards. With `waiting`, stderr (a terminal only)
        shows "waiting for the model… Ns" until the first token (a CPU model can read a long
        prompt for a minute), or until the answer when it is not streamed."""
        with self.waiting(waiting) as stop_waiting:
            if not enabled:
                yield lambda token: None
                return
            from rich.live import Live
            from rich.text import Text

            shown = Text(style="dim")
            live = Live(shown, console=self.console, transient=True, refresh_per_second=12)

            def on_token(token: str) -> None:
                if not live.is_started:
                    stop_waiting()  # one live display at a time on the terminal
                    live.start()
                shown.append(safe(token))
                live.update(shown)

            try:
                yield on_token
            finally:
                if live.is_started:
                    live.stop()

    @contextmanager
    def waiting(self, enabled: bool) -> Iterator[Callable[[], None]]:
        """"waiting for the model… Ns" on stderr (a terminal only) until the function it
        yields is called or the block ends. A real terminal only: FORCE_COLOR (rich's
        is_terminal) does not make a piped stderr one."""
        isatty = getattr(self.err.file, "isatty", None)
        if not enabled or not self.err.is_terminal or not (isatty and isatty()):
            yield lambda: None
            return
        import threading
        import time

        done = threading.Event()
        started = time.monotonic()
        status = self.err.status(f"{self.wait_label}… 0s")
        status.start()

        def tick() -> None:
            while not done.wait(0.5):
                status.update(f"{escape(self.wait_label)}… {time.monotonic() - started:.0f}s")

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()

        def stop() -> None:
            if not done.is_set():
                done.set()
                ticker.join()
                status.stop()

        try:
            yield stop
        finally:
            stop()

    def answer(self, answer: Any, unfold_hint: str = "") -> None:
        """`unfold_hint`: how this face lists a folded tail (`ragqa ask --all`, chat's /more)."""
        from rich.markdown import Markdown

        # The frames come from the message catalogue, in the question's language.
        language = answer.language
        self.console.print(f"[dim]{markup(answer.header)}[/]")
        if answer.notice:
            self.console.print(f"[yellow]{escape(answer.notice)}[/]")
        if answer.language != "English" and answer.retrieval_query != answer.question:
            query = message("label.searched_for", language, query=answer.retrieval_query)
            self.console.print(f"[dim]{markup(query)}[/]")
        if answer.screening and answer.screening.mode != "offline":  # else: the notice says
            s = answer.screening
            key = "label.screened_weak" if s.mode == "combined" else "label.screened"
            line = message(key, language, read=s.candidates, accepted=s.accepted,
                           calls=s.batches, seconds=round(s.seconds))
            self.console.print(f"[dim]{escape(line)}[/]")
        self.console.print()
        self.console.print(Markdown(safe(answer.text)))
        if answer.unsupported:
            self.console.print(f"\n[yellow]{escape(message('label.unsupported', language))}[/]")
            uncited_label = escape(message("label.uncited", language))
            figures_label = escape(message("label.figures", language))
            for item in answer.unsupported:
                uncited = "" if item["citations"] else f" [dim]{uncited_label}[/]"
                if item.get("numbers"):
                    uncited += f" [dim]({figures_label}: {markup(', '.join(item['numbers']))})[/]"
                self.console.print(f"  [yellow]⚠[/] {markup(item['sentence'])}{uncited}")
        if answer.repaired:
            repaired = message("label.repaired", language, count=len(answer.repaired))
            self.console.print(f"[dim]{escape(repaired)}[/]")
        if answer.dropped_citations:
            dropped = message("label.dropped", language, count=answer.dropped_citations)
            self.console.print(f"[dim]{escape(dropped)}[/]")
        cited = {c.paper_id for c in answer.citations}
        if unfold_hint and any(h.tier == "tail" and h.paper.paper_id not in cited
                               for h in answer.hits):
            self.console.print(f"[dim]{escape(unfold_hint)}[/]")
        if answer.citations:
            self.console.print(f"\n[bold]{escape(message('label.references', language))}[/]")
            self.references([asdict(c) for c in answer.citations])
        elif answer.closest:
            self.console.print(f"\n[dim]{escape(message('label.closest', language))}[/]")
            for hit in answer.closest:
                self.console.print(f"  • {markup(hit.paper.title)}  [dim]{markup(hit.paper.source)}"
                                   f" · id {markup(hit.paper.paper_id)}[/]")

    def references(self, citations: list[dict]) -> None:
        for c in citations:
            self.console.print(f"  \\[{c['n']}] {markup(c['title'])}  [dim]"
                               f"{markup(c['source'])} · id {markup(c['paper_id'])}[/]")

    def screening(self, done: int, expected: int) -> None:
        """A screening's progress, on the "waiting for the model" line (a terminal only)."""
        self.wait_label = f"screening: {done} of ~{expected} candidates read"

    @contextmanager
    def status(self, enabled: bool) -> Iterator[Callable[[str], None]]:
        """A spinner on stderr for long work (a terminal only); yields a function that sets
        its message."""
        if not enabled or not self.err.is_terminal:
            yield lambda message: None
            return
        with self.err.status("Working…") as status:
            yield lambda message: status.update(escape(message) + "…")

    def summary(self, markdown: str, summary: Any) -> None:
        from rich.markdown import Markdown


        self.console.print(f"[dim]{escape(summary_mode(summary))}[/]")
        if summary.llm_calls:
            calls = message("summary.llm_calls", summary.language, calls=summary.llm_calls,
                            tokens=summary.tokens)
            self.console.print(f"[dim]{escape(calls)}[/]")
        if summary.notice:
            self.console.print(f"[yellow]{escape(summary.notice)}[/]")
        self.console.print(Markdown(safe(markdown)))

    def chat_banner(self, session: Any, llm: Any) -> None:
        mode = f"LLM {llm.description}" if llm else "extractive (no LLM configured)"
        resumed = f", {len(session.turns)} earlier turns" if session.turns else ""
        self.console.print(f"[bold]ragqa chat[/] · session {session.session_id}{resumed} · "
                           f"collection {escape(session.collection)} · {escape(mode)}\n"
                           "[dim]/help lists commands; Ctrl-D quits.[/]")

    def sessions(self, sessions: list[dict]) -> None:
        if not sessions:
            self.console.print("No saved chat sessions.")
            return
        table = Table(title="Chat sessions")
        for column in ("session", "created", "turns", "collection", "first question"):
            table.add_column(column)
        for s in sessions:
            table.add_row(s["session_id"], s["created"], str(s["turns"]),
                          escape(s["collection"]), markup(s["first_question"][:60]))
        self.console.print(table)

    # ------------------------------------------------------------ papers

    def paper_table(self, papers: list[Paper], collection: str, full: bool) -> None:
        if full:
            for paper in papers:
                self.paper(paper)
            return
        table = Table(title=f"{len(papers)} papers in {escape(collection)}", show_lines=False)
        for column in ("id", "title", "source", "venue", "year"):
            table.add_column(column)
        for p in papers:
            table.add_row(*(markup(x) for x in (p.paper_id, p.title, p.source, p.venue)),
                          str(p.year or ""))
        self.console.print(table)

    def paper(self, paper: Paper) -> None:
        self.console.print(f"[bold]{markup(paper.title)}[/]")
        details = [f"id {markup(paper.paper_id)}", markup(paper.source)]
        details += [markup(x) for x in (paper.venue, str(paper.year or ""), paper.authors) if x]
        self.console.print("[dim]" + " · ".join(details) + "[/]")
        if paper.url:
            self.console.print(f"[dim]{markup(paper.url)}[/]")
        self.console.print(f"\n{markup(paper.text)}\n")

    # ------------------------------------------------------------ map and trends

    def paper_map(self, result: dict, out_file: Any) -> None:
        how = (f"computed in {result['seconds']:.0f} s" if result["seconds"] else "cached")
        placed = f", {result['placed']} placed since the layout" if result["placed"] else ""
        inner = f" ({len(result['subthemes'])} sub-themes)" if result["subthemes"] else ""
        self.console.print(f"[bold]Map of {escape(result['collection'])}[/]: "
                           f"{result['papers']:,} papers, {len(result['themes'])} themes"
                           f"{inner} [dim]({escape(result['method'])}, {how}{placed})[/]")
        marked = set((result.get("highlight") or {}).get("paper_ids", []))
        in_theme: dict[int, int] = {}
        for pid, theme in zip(result["points"]["paper_id"], result["points"]["theme"],
                              strict=True):
            if pid in marked:
                in_theme[theme] = in_theme.get(theme, 0) + 1
        table = Table(show_header=True)
        table.add_column("theme")
        table.add_column("papers", justify="right")
        if marked:
            table.add_column("highlighted", justify="right")
        for theme in result["themes"]:
            inside = [markup(sub["name"]) for sub in result["subthemes"]
                      if sub["theme"] == theme["theme"]]
            name = markup(theme["name"]) + (f"\n[dim]{' · '.join(inside)}[/]" if inside else "")
            row = [name, str(theme["papers"])]
            table.add_row(*row, *([str(in_theme.get(theme["theme"], 0))] if marked else []))
        if result["apart"]:
            table.add_row("[dim]apart from every theme[/]", str(result["apart"]),
                          *([str(in_theme.get(-1, 0))] if marked else []))
        self.console.print(table)
        naming = result.get("naming") or {}
        if naming.get("mode") == "llm":
            kept = f"; {naming['kept']} kept ragqa's own" if naming["kept"] else ""
            self.console.print(f"[dim]Themes named by {markup(naming['model'])}{kept}.[/]")
        if naming.get("notice"):
            self.err.print(f"[yellow]{markup(naming['notice'])}[/]")
        if result.get("highlight"):
            question = markup(result["highlight"]["question"])
            self.console.print(f"{len(marked)} papers for “{question}” highlighted")
        if out_file is not None:
            self.console.print(f"Wrote {markup(str(out_file))}")

    def trend(self, result: dict, out_file: Any) -> None:
        self.console.print(f"[bold]“{markup(result['topic'])}”[/] in "
                           f"{escape(result['collection'])}: {result['papers']} papers")
        table = Table(show_header=True)
        for column in ("year", "papers", "of the year's", "share"):
            table.add_column(column, justify="right")
        table.add_column("")
        top = max((row["share"] or 0 for row in result["years"]), default=0) or 1
        for row in result["years"]:
            if row["share"] is None:  # no papers of that year in the collection: a gap
                table.add_row(str(row["year"]), "", "0", "—", "")
                continue
            bar = "█" * round(20 * row["share"] / top)
            table.add_row(str(row["year"]), str(row["papers"]), str(row["collection"]),
                          f"{100 * row['share']:.1f}%", bar)
        self.console.print(table)
        if result["venues"]:
            self.console.print(self._venue_table(result))
        apart = result["without_year"]
        if apart["collection"]:
            self.console.print(f"Without a year: {apart['papers']} of the topic's papers, "
                               f"{apart['collection']} of the collection's (counted apart)")
        if out_file is not None:
            self.console.print(f"Wrote {markup(str(out_file))}")

    @staticmethod
    def _venue_table(result: dict) -> Table:
        """A row per venue: its papers on the topic, their share of its papers, and that share
        year by year as a sparkline over the trend's years (a blank: the venue has no papers
        that year)."""
        years = [row["year"] for row in result["years"]]
        table = Table(show_header=True, title=f"By venue, {years[0]}–{years[-1]}" if years
                      else "By venue")
        for column, justify in (("venue", "left"), ("papers", "right"), ("of its", "right"),
                                ("share", "right"), ("share per year", "left")):
            table.add_column(column, justify=justify)
        shares = [row["share"] for v in result["venues"] for row in v["years"]
                  if row["share"] is not None]
        top = max(shares, default=0) or 1
        for venue in result["venues"]:
            own = venue["collection"]
            line = "".join(" " if row["share"] is None else
                           _SPARKS[min(7, int(8 * row["share"] / top))]
                           for row in venue["years"])
            table.add_row(markup(venue["venue"] or "(no venue)"), str(venue["papers"]),
                          str(own), f"{100 * venue['papers'] / own:.1f}%" if own else "—",
                          line)
        return table

    # ------------------------------------------------------------ doctor

    def doctor(self, settings: Settings, collection: str, checks: list[dict]) -> None:
        table = Table(title="Settings", show_header=False)
        table.add_column("name")
        table.add_column("value")
        for name, value in settings.describe():
            table.add_row(name, escape(value))
        self.console.print(table)
        for check in checks:
            mark = "[green]ok[/]" if check["ok"] else "[red]FAIL[/]"
            self.console.print(f"{mark}  {check['check']}: {escape(check['detail'])}")


class _RichProgress:
    """The ingest progress bar: papers, papers/s, ETA (on stderr, only on a terminal)."""

    def __init__(self, console: Console) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._console = console
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(), console=console, transient=True,
        )
        self._task = None

    def stage(self, message: str) -> None:
        self._console.print(f"[dim]{escape(message)}…[/]")

    def start(self, total: int) -> None:
        self._progress.start()
        self._task = self._progress.add_task("Embedding", total=total, rate="")

    def advance(self, papers: int) -> None:
        if self._task is None:
            return
        self._progress.advance(self._task, papers)
        speed = self._progress.tasks[0].speed
        self._progress.update(self._task, rate=f"{speed:.1f} papers/s" if speed else "")

    def finish(self) -> None:
        self._progress.stop()


if TYPE_CHECKING:
    from ragqa.evaluate import EvalReport


def render_eval(out: Renderer, report: EvalReport) -> None:
    """`ragqa eval`'s text output: the metrics as a table, then what was left out and why (a
    skipped query or a judged document missing from the corpus changes what a figure means)."""
    out.console.print(f"[bold]{markup(report.dataset)}[/]: {report.queries_evaluated} queries "
                      f"of {report.queries_total} evaluated, {report.corpus_docs} documents")
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    labels = {"ndcg": "nDCG", "recall": "recall", "mrr": "MRR"}
    for name, value in report.metrics.items():
        kind, _, cutoff = name.partition("@")
        table.add_row(f"{labels.get(kind, kind)}@{cutoff}", f"{value:.4f}")
    out.console.print(table)
    # Counts first, so that no sentence needs a plural.
    notes = [(report.skipped_no_qrels, "queries skipped (no judgements)"),
             (report.skipped_no_relevant, "queries skipped (no document judged relevant)"),
             (report.qrels_without_query, "judged queries missing from the queries file"),
             (report.relevant_not_in_corpus, "relevant documents missing from the corpus "
                                             "(counted as not found)"),
             (report.skipped_bad, "corpus records skipped as bad"),
             (report.collection_papers - report.corpus_docs,
              "papers of the collection not in the corpus (they compete in the ranking)")]
    for count, text in notes:
        if count > 0:
            out.console.print(f"[yellow]{text}: {count}[/]")
    ingest = report.ingest
    per_query = 1000 * report.search_seconds / max(report.queries_evaluated, 1)
    out.console.print(
        f"[dim]Collection {escape(report.collection)}: {ingest['added']} added, "
        f"{ingest['updated']} updated, {ingest['unchanged']} unchanged ({ingest['seconds']:.1f} s);"
        f" search {report.search_seconds:.1f} s ({per_query:.0f} ms a query), no relevance "
        "cut.[/]")
