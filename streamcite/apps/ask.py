"""``streamcite ask "QUESTION"``: the whole pipeline, rendered live in the terminal.

With no ``--base-url`` the embedded local backend starts in-process on 127.0.0.1 and
answers from its corpus (offline, no key); Wikit quoted sources and the grounding
check then default to that backend's own endpoints. With ``--base-url`` any
OpenAI-compatible provider is used. The terminal shows the tokens as they arrive
(footnotes as superscripts), a sources table (repeated documents grouped) and the
claims coloured by support; ``--json`` prints the event stream as JSON Lines instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click
import orjson

from streamcite.apps._enrichers import (
    EnricherOptions,
    build_enrichers,
)
from streamcite.apps._provider_render import ProviderRender
from streamcite.apps._terminal import console_text, terminal_safe
from streamcite.apps._usage import base_url_hint, check_base_url, warn_unset_key
from streamcite.core.events import (
    CitationRefEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    GroundingEvent,
    MetaEvent,
    ReasoningEvent,
    RefusalEvent,
    SourcesEvent,
    TokenEvent,
    ToolCallEvent,
)
from streamcite.core.grounding import GroundingResult
from streamcite.core.markers import footnote_numbers, render_markers, render_superscript
from streamcite.core.models import Citation, CitedAnswer
from streamcite.core.sources import QuotedSource
from streamcite.logs import configure_logging

__all__ = ["DEMO_QUESTION", "command"]

DEMO_QUESTION = (
    "How many days a week can I work from home, and which security rules apply outside the office?"
)
"""The ``--demo`` question: the built-in corpus answers it from two documents, one of them twice."""


@dataclass(slots=True)
class AskOptions:
    question: str
    base_url: str | None
    api_key_env: str | None
    model: str | None
    system: str | None
    wikit_app: str | None
    wikit_org: str | None
    wikit_base_url: str | None
    wikit_api_key_env: str | None
    sources: bool
    grounding: str
    grounding_facts: str
    google_config: str | None
    google_endpoint: str | None
    google_token_env: str | None
    marker_mode: str
    as_json: bool
    corpus: Path | None
    strict: bool
    token_delay: float | None
    fault: str | None
    transport: str
    timeout: float
    no_reasoning: bool = False


@click.command("ask")
@click.argument("question", required=False)
@click.option(
    "--demo",
    is_flag=True,
    help="Ask a built-in question of the built-in corpus, with sources and grounding.",
)
@click.option(
    "--base-url",
    default=None,
    help="OpenAI-compatible API root (…/v1). Default: the embedded local backend.",
)
@click.option(
    "--api-key-env",
    default="OPENAI_API_KEY",
    show_default=True,
    metavar="NAME",
    help="Environment variable holding the provider's API key.",
)
@click.option(
    "--model", default=None, help="Model name (default: streamcite-local for the local backend)."
)
@click.option("--system", default=None, help="Optional system prompt.")
@click.option(
    "--wikit-app",
    default=None,
    metavar="ID",
    help="Wikit Semantics app id: fetch the answer's quoted sources.",
)
@click.option(
    "--wikit-org",
    default=None,
    metavar="ID",
    help="Wikit organisation id (X-Wikit-Organization-Id).",
)
@click.option(
    "--wikit-base-url",
    default=None,
    help="Wikit API root (default: the local backend when local, else https://apis.wikit.ai).",
)
@click.option(
    "--wikit-api-key-env",
    default="WIKIT_API_KEY",
    show_default=True,
    metavar="NAME",
    help="Environment variable holding the Wikit API key (private apps).",
)
@click.option(
    "--sources/--no-sources",
    default=None,
    help="Fetch Wikit quoted sources (default: on with the local backend or when --wikit-app is given).",
)
@click.option(
    "--grounding",
    type=click.Choice(["local", "google", "none"]),
    default="local",
    show_default=True,
    help="Grounding check after the stream.",
)
@click.option(
    "--grounding-facts",
    type=click.Choice(["citations", "sources", "both"]),
    default="citations",
    show_default=True,
    help="What the answer is checked against.",
)
@click.option(
    "--google-config",
    default=None,
    metavar="NAME",
    help="projects/P/locations/global/groundingConfigs/C (for --grounding google).",
)
@click.option(
    "--google-endpoint",
    default=None,
    help="Discovery Engine root (default: the local backend when local, else Google's).",
)
@click.option(
    "--google-token-env",
    default="GOOGLE_OAUTH_ACCESS_TOKEN",
    show_default=True,
    metavar="NAME",
    help="Environment variable holding an OAuth access token (else Application Default Credentials).",
)
@click.option(
    "--marker-mode",
    type=click.Choice(["keep", "strip", "superscript"]),
    default="superscript",
    show_default=True,
    help="How footnotes [n] are displayed.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the events as JSON Lines instead of rendering them.",
)
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Folder of .md/.txt documents for the local backend.",
)
@click.option(
    "--strict", is_flag=True, help="Fail on a corpus file that is not UTF-8 (default: skip it)."
)
@click.option(
    "--token-delay",
    type=click.FloatRange(0, 5),
    default=None,
    help="Local backend: seconds between tokens (default 0.01 on a terminal, else 0).",
)
@click.option(
    "--fault",
    default=None,
    metavar="SPEC",
    help="Local backend fault spec sent as X-Streamcite-Fault (--demo: hallucinate=1; '' for none).",
)
@click.option(
    "--transport",
    type=click.Choice(["httpx", "aiohttp"]),
    default="aiohttp",
    show_default=True,
    help="HTTP client library for the chat stream.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(1, 3600),
    default=120.0,
    show_default=True,
    help="Overall time limit in seconds.",
)
@click.option(
    "--no-reasoning",
    is_flag=True,
    help="Do not show a reasoning model's thinking (it is still in --json).",
)
@click.option("-v", "--verbose", count=True, help="-v: info logs, -vv: debug logs (stderr).")
def command(question: str | None, demo: bool, verbose: int, **options: Any) -> None:
    """Ask QUESTION and render the cited answer live: tokens, footnotes, sources, grounding."""
    configure_logging(("WARNING", "INFO", "DEBUG")[min(verbose, 2)])
    if demo:
        question = question or DEMO_QUESTION
        if options["base_url"] is None:
            if options["sources"] is None:
                options["sources"] = True
            if options["fault"] is None:
                # One number of the answer is changed on purpose, so the demo shows the
                # grounding check telling a supported claim from an unsupported one.
                options["fault"] = "hallucinate=1"
    if not question or not question.strip():
        raise click.UsageError(
            'give a QUESTION (or --demo), e.g. streamcite ask "How many remote days?"'
        )
    opts = AskOptions(question=question.strip(), **options)
    check_base_url(opts.base_url)
    if opts.base_url is not None:
        warn_unset_key(opts.api_key_env)
    if opts.base_url is not None and opts.model is None:
        raise click.UsageError("--model is required with --base-url")
    if opts.base_url is not None and opts.sources and not (opts.wikit_app and opts.wikit_org):
        raise click.UsageError("--sources with --base-url needs --wikit-app and --wikit-org")
    if opts.wikit_app and opts.base_url is not None and not opts.wikit_org:
        raise click.UsageError("--wikit-app needs --wikit-org")
    if (
        opts.grounding_facts != "citations"
        and opts.grounding != "none"
        and not _wants_sources(opts)
    ):
        raise click.UsageError(f"--grounding-facts {opts.grounding_facts} needs Wikit sources")
    try:
        code = asyncio.run(_ask(opts))
    except KeyboardInterrupt:  # pragma: no cover - interactive
        code = 130
    sys.exit(code)


def _wants_sources(opts: AskOptions) -> bool:
    if opts.sources is not None:
        return opts.sources
    return opts.base_url is None or opts.wikit_app is not None


async def _ask(opts: AskOptions) -> int:
    from streamcite.pipeline import Timeouts, stream_chat

    async with contextlib.AsyncExitStack() as stack:
        local_root: str | None = None
        base_url = opts.base_url
        api_key: str | None = None
        model = opts.model
        if base_url is None:
            from streamcite.local.corpus import CorpusError
            from streamcite.local.server import MODEL, BackendConfig, LocalBackend

            delay = opts.token_delay
            if delay is None:
                delay = 0.01 if (sys.stdout.isatty() and not opts.as_json) else 0.0
            config = BackendConfig(
                corpus_dir=opts.corpus,
                token_delay=delay,
                wikit_org_id=opts.wikit_org,
                corpus_strict=opts.strict,
            )
            try:
                backend = await stack.enter_async_context(LocalBackend(config))
            except CorpusError as exc:
                raise click.ClickException(str(exc)) from None
            for warning in backend.corpus.skipped:
                click.echo(f"streamcite: warning: {warning}", err=True)
            base_url, local_root, model = backend.base_url, backend.root_url, model or MODEL
        else:
            api_key = os.environ.get(opts.api_key_env) if opts.api_key_env else None

        enrichers = _enrichers(opts, local_root)
        messages: list[dict[str, str]] = []
        if opts.system:
            messages.append({"role": "system", "content": opts.system})
        messages.append({"role": "user", "content": opts.question})
        request = {
            "model": model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        renderer: _Renderer = (
            _JsonRenderer(sys.stdout) if opts.as_json else _RichRenderer(opts, local_root)
        )
        renderer.start()
        timeouts = Timeouts(connect=10.0, first_token=60.0, idle=30.0, total=opts.timeout)
        headers = {"X-Streamcite-Fault": opts.fault} if opts.fault else None
        stream = stream_chat(
            request,
            base_url=base_url,
            api_key=api_key,
            headers=headers,
            transport=opts.transport,
            timeouts=timeouts,
            marker_mode="keep" if opts.as_json else opts.marker_mode,
            after=enrichers,
        )
        try:
            async with stream:
                async for event in stream:
                    renderer.event(event)
        except asyncio.CancelledError:
            renderer.cancelled(stream.answer)  # Ctrl-C: the output still ends cleanly
            raise
        answer = stream.answer
        renderer.finish(answer)
        return 0 if answer.complete and not answer.errors else 1
    return 1  # pragma: no cover - the exit stack does not swallow exceptions


def _enrichers(opts: AskOptions, local_root: str | None) -> list[Any]:
    """Wikit sources and the grounding check, pointed at the local backend when local."""
    return build_enrichers(
        EnricherOptions(
            sources=_wants_sources(opts),
            wikit_app=opts.wikit_app,
            wikit_org=opts.wikit_org,
            wikit_api_key=os.environ.get(opts.wikit_api_key_env)
            if opts.wikit_api_key_env
            else None,
            wikit_base_url=opts.wikit_base_url,
            grounding=opts.grounding,
            grounding_facts=opts.grounding_facts,
            google_config=opts.google_config,
            google_endpoint=opts.google_endpoint,
            google_token=os.environ.get(opts.google_token_env) if opts.google_token_env else None,
            claim_level_scores=True,
        ),
        local_root,
    )


# --------------------------------------------------------------------------- renderers


class _Renderer:
    def start(self) -> None: ...

    def event(self, event: Event) -> None: ...

    def finish(self, answer: CitedAnswer) -> None: ...

    def cancelled(self, answer: CitedAnswer) -> None: ...


class _JsonRenderer(_Renderer):
    """One JSON object per event, flushed as it happens."""

    def __init__(self, out: TextIO):
        self._out = out.buffer if hasattr(out, "buffer") else None
        self._text = out

    def event(self, event: Event) -> None:
        line = orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE)
        if self._out is not None:
            self._out.write(line)
            self._out.flush()
        else:
            self._text.write(line.decode())
            self._text.flush()

    def cancelled(self, answer: CitedAnswer) -> None:
        """The promised ending after Ctrl-C: a ``cancelled`` error, then ``done``."""
        error = next((e for e in answer.errors if e.code == "cancelled"), None)
        if error is None:
            error = ErrorEvent(code="cancelled", message="cancelled by the user", stage="cancelled")
            answer.errors.append(error)
        self.event(error)
        self.event(DoneEvent(answer=answer))


class _RichRenderer(_Renderer):
    """Tokens as they arrive, then the sources table and the claims coloured by support."""

    def __init__(self, opts: AskOptions, local_root: str | None):
        from rich.console import Console

        self.opts = opts
        self.local_root = local_root
        self.console = Console(highlight=False, soft_wrap=True)
        self.err = Console(stderr=True, highlight=False)
        self._streaming = False
        self._provider = ProviderRender(self.console, show_reasoning=not opts.no_reasoning)

    def start(self) -> None:
        c = self.console
        c.print(f"[bold]?[/bold] {_escape(self.opts.question)}")
        where = (
            f"local backend {self.local_root}" if self.local_root else (self.opts.base_url or "")
        )
        c.print(f"[dim]{_escape(where)}[/dim]")
        if self.opts.fault and "hallucinate" in self.opts.fault:
            c.print(
                "[dim]fault hallucinate=1: the backend changes one number of its answer on purpose, "
                "to show the grounding check catching it[/dim]"
            )
        c.print()

    def event(self, event: Event) -> None:
        if isinstance(event, ReasoningEvent | ToolCallEvent | RefusalEvent):
            self._streaming = self._provider.event(event) or self._streaming
        elif isinstance(event, TokenEvent):
            if event.index == 0 and event.display:
                self._provider.end_reasoning()
                self.console.print(terminal_safe(event.display), end="", markup=False)
                self.console.file.flush()
                self._streaming = True
        elif isinstance(event, ErrorEvent):
            if self._streaming:
                self.console.print()
                self._streaming = False
            self.console.print(
                f"[red]✗ {event.stage} error[/red] [bold]{_escape(event.code)}[/bold]: {_escape(event.message)}"
            )
            hint = base_url_hint(self.opts.base_url, event.status) if self.opts.base_url else None
            if hint:
                self.console.print(f"[yellow]{_escape(hint)}[/yellow]")
        elif isinstance(
            event, MetaEvent | CitationRefEvent | DoneEvent | SourcesEvent | GroundingEvent
        ):
            return

    def cancelled(self, answer: CitedAnswer) -> None:
        if self._streaming:
            self.console.print()
            self._streaming = False
        self.console.print("[yellow]cancelled[/yellow]")

    def finish(self, answer: CitedAnswer) -> None:
        c = self.console
        if self._streaming:
            c.print()
        if answer.timings.ttft_ms is not None:
            parts = [f"first token {answer.timings.ttft_ms:.0f} ms"]
            if answer.timings.stream_ms is not None:
                parts.append(f"stream {answer.timings.stream_ms:.0f} ms")
            if answer.timings.sources_ms is not None:
                parts.append(f"sources {answer.timings.sources_ms:.0f} ms")
            if answer.timings.grounding_ms is not None:
                parts.append(f"grounding {answer.timings.grounding_ms:.0f} ms")
            c.print(f"[dim]{' · '.join(parts)}[/dim]")
        c.print()
        self._provider.finish(answer)
        if answer.citations or answer.sources:
            c.print(_sources_table(answer))
            for line in _links(answer):
                c.print(line, overflow="fold")
        elif answer.complete and not answer.refusal and not answer.tool_calls:
            c.print("[yellow]No sources: the answer cites nothing.[/yellow]")
        if answer.dangling_refs:
            refs = ", ".join(f"[{n}]" for n in answer.dangling_refs)
            c.print(f"[yellow]Footnotes without a citation: {refs}[/yellow]")
        if answer.grounding is not None:
            c.print()
            _print_claims(c, answer, self.opts.marker_mode)


def _escape(text: str) -> str:
    return console_text(text)


@dataclass(slots=True)
class _DocRow:
    numbers: list[int]
    title: str
    byline: str
    reference: str
    sections: list[str]
    score: float | None
    link: str


def _doc_rows(answer: CitedAnswer) -> list[_DocRow]:
    """One row per document: its footnotes, metadata, sections/pages and link."""
    from streamcite.enrich.wikit import page_label

    by_number: dict[int, QuotedSource] = {}
    for s in answer.sources:
        if s.number is not None:
            by_number[s.number] = s
    rows: dict[str, _DocRow] = {}
    items: list[tuple[int, Citation | None, QuotedSource | None]] = []
    numbers = {c.footnote for c in answer.citations if c.footnote is not None} | set(by_number)
    cit_by_number = {c.footnote: c for c in answer.citations if c.footnote is not None}
    for n in sorted(numbers):
        items.append((n, cit_by_number.get(n), by_number.get(n)))
    for n, cit, src in items:
        doc_key = (
            (src.document.id if src else None)
            or (cit.source_url if cit else None)
            or (cit.document_title if cit else None)
            or str(n)
        )
        title = (cit.document_title if cit else None) or (src.document.display_name if src else "?")
        byline = ", ".join(
            x for x in ((cit.document_author, cit.document_year) if cit else ()) if x
        )
        if not byline and src and src.data_source and src.data_source.name:
            byline = src.data_source.name
        section = (cit.cited_text_heading if cit else None) or ""
        if not section and src:
            first_line = src.chunk.data.split("\n", 1)[0]
            section = first_line.lstrip("# ").strip() if first_line.startswith("#") else ""
        page = page_label(src) if src else None
        label = " · ".join(x for x in (section, page) if x)
        link = (cit.source_url if cit else None) or (src.document.url if src else None) or "—"
        row = rows.get(doc_key)
        if row is None:
            row = rows[doc_key] = _DocRow(
                [], title, byline, (cit.document_reference if cit else None) or "", [], None, link
            )
        row.numbers.append(n)
        if label and label not in row.sections:
            row.sections.append(label)
        if src and src.score is not None:
            row.score = max(row.score or 0.0, src.score)
    return list(rows.values())


def _sources_table(answer: CitedAnswer) -> Any:
    from rich.table import Table

    rows = _doc_rows(answer)
    quoted = sum(len(r.numbers) for r in rows)
    provider = "Wikit quoted sources" if answer.sources else "citations"
    table = Table(
        title=f"Sources — {quoted} quoted from {len(rows)} document{'s' if len(rows) != 1 else ''} ({provider})",
        title_justify="left",
        show_lines=False,
    )
    table.add_column("Refs", style="bold cyan", no_wrap=True)
    table.add_column("Document")
    table.add_column("Reference", no_wrap=True)
    table.add_column("Sections")
    if answer.sources:
        table.add_column("Score", justify="right", no_wrap=True)
    for r in rows:
        refs = " ".join(render_superscript(n) for n in r.numbers)
        doc = f"[bold]{_escape(r.title)}[/bold]" + (
            f"\n[dim]{_escape(r.byline)}[/dim]" if r.byline else ""
        )
        cells = [refs, doc, _escape(r.reference), _escape("\n".join(r.sections))]
        if answer.sources:
            cells.append("" if r.score is None else f"{r.score:.2f}")
        table.add_row(*cells)
    return table


def _links(answer: CitedAnswer) -> list[str]:
    """``¹ ³ URL`` lines, one per document (URLs are too long for a table cell)."""
    return [
        f"  [cyan]{' '.join(render_superscript(n) for n in r.numbers)}[/cyan] {_escape(r.link)}"
        for r in _doc_rows(answer)
        if r.link != "—"
    ]


def _support_label(g: GroundingResult) -> str:
    """ "support score 0.83" coloured by level, never green when a checked claim fails;
    "nothing to check" when no claim needed one (the score then means nothing)."""
    if g.nothing_to_check:
        return "[dim]nothing to check[/dim] (no claim needed a check)"
    score = "n/a" if g.support_score is None else f"{g.support_score:.2f}"
    level = g.support_score or 0.0
    colour = "green" if level >= 0.75 else "yellow" if level >= 0.4 else "red"
    failed = g.unsupported_claims or 0
    if failed and colour == "green":
        colour = "yellow"
    label = f"support score [{colour}]{score}[/{colour}]"
    if failed:
        label += f" [red]({failed} unsupported claim{'s' if failed > 1 else ''})[/red]"
    return label


def _print_claims(console: Any, answer: CitedAnswer, marker_mode: str) -> None:
    g = answer.grounding
    assert g is not None
    console.print(f"[bold]Grounding[/bold] ({g.provider}) — {_support_label(g)}")
    for claim in g.claims:
        score_text = "    " if claim.score is None else f"{claim.score:.2f}"
        written = set(footnote_numbers(claim.claim_text))
        text = _escape(render_markers(claim.claim_text.strip(), marker_mode))
        if claim.grounding_check_required is False:
            console.print(f"  [dim]·  {score_text}  {text}[/dim]")
            continue
        if not claim.citation_indices:
            console.print(f"  [red]✗  {score_text}  {text}[/red]")
            continue
        origins = g.origins_for(claim, answer.citations, answer.sources)
        support = {n for n in (_footnote_of(o) for o in origins) if n is not None}
        # Say which sources support the claim when it is not the ones it cites itself.
        extra = ""
        if support and support != written:
            marks = " ".join(render_superscript(n) for n in sorted(support))
            extra = f" [dim](supported by {marks})[/dim]"
        console.print(f"  [green]✓  {score_text}  {text}[/green]{extra}")
    for w in g.warnings:
        console.print(f"  [yellow]! {_escape(w)}[/yellow]")


def _footnote_of(origin: Any) -> int | None:
    if isinstance(origin, Citation):
        return origin.footnote
    if isinstance(origin, QuotedSource):
        return origin.number
    return None
