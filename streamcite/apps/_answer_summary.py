"""What ``streamcite ask`` prints after the stream: the sources table, the links and
the claims coloured by support (rich renderables; the console is the caller's)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamcite.apps._terminal import console_text
from streamcite.core.citations import answer_passages
from streamcite.core.grounding import GroundingResult
from streamcite.core.markers import footnote_numbers, render_markers, render_superscript
from streamcite.core.models import Citation, CitedAnswer
from streamcite.core.sources import QuotedSource

__all__ = [
    "SUPPORT_SCORE_MEANING",
    "passage_lines",
    "print_claims",
    "source_links",
    "sources_table",
    "support_label",
]

_QUOTE_CHARS = 200
"""Characters of a quoted passage shown per line (the rest elided)."""


@dataclass(slots=True)
class _DocRow:
    numbers: list[int]
    title: str
    byline: str
    reference: str
    sections: list[str]
    score: float | None
    link: str
    links: dict[str, list[int]]
    """Each distinct link of the document (one per cited chunk) -> its footnotes."""


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
                [],
                title,
                byline,
                (cit.document_reference if cit else None) or "",
                [],
                None,
                link,
                {},
            )
        row.numbers.append(n)
        if link != "—":
            row.links.setdefault(link, []).append(n)
        if label and label not in row.sections:
            row.sections.append(label)
        if src and src.score is not None:
            row.score = max(row.score or 0.0, src.score)
    return list(rows.values())


def sources_table(answer: CitedAnswer) -> Any:
    """A rich table: one row per document, with its footnotes, sections and score."""
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
        doc = f"[bold]{console_text(r.title)}[/bold]" + (
            f"\n[dim]{console_text(r.byline)}[/dim]" if r.byline else ""
        )
        cells = [refs, doc, console_text(r.reference), console_text("\n".join(r.sections))]
        if answer.sources:
            cells.append("" if r.score is None else f"{r.score:.2f}")
        table.add_row(*cells)
    return table


def source_links(answer: CitedAnswer, link: Callable[[str], str] | None = None) -> list[str]:
    """``¹ ³ URL`` lines, one per cited place (URLs are too long for a table cell): a
    document cited at two chunks has two lines. ``link`` rewrites each URL (the local
    backend's pages into corpus files)."""
    out = []
    for row in _doc_rows(answer):
        shown: dict[str, list[int]] = {}
        for url, numbers in row.links.items():
            shown.setdefault(link(url) if link else url, []).extend(numbers)
        for target, numbers in shown.items():
            refs = " ".join(render_superscript(n) for n in numbers)
            out.append(f"  [cyan]{refs}[/cyan] {console_text(target)}")
    return out


def passage_lines(answer: CitedAnswer) -> list[str]:
    """``¹ “quoted passage”`` lines: every distinct passage the answer's citations quote
    (a source cited twice with two quotes has two lines), under its footnote."""
    out = []
    for _, c in answer_passages(answer.citations, answer.citation_spans):
        text = " ".join((c.cited_text or "").split())
        if len(text) > _QUOTE_CHARS:
            text = text[: _QUOTE_CHARS - 1] + "…"
        n = c.footnote
        mark = render_superscript(n) if n is not None else "·"
        out.append(f"  [cyan]{mark}[/cyan] [dim]“{console_text(text)}”[/dim]")
    return out


SUPPORT_SCORE_MEANING = (
    "support score: how much of the whole answer the facts support, 0 to 1, weighted by "
    "what each claim states; each claim's own score is beside it (✗: not supported)"
)
"""The line under the verdict that says what the score is (it is not the share of
supported claims: one weak claim among strong ones lowers it only by its weight)."""


def support_label(g: GroundingResult) -> str:
    """ "support score 0.83" coloured by level, never green when a checked claim fails;
    "nothing to check" when no claim needed one (the score then means nothing); "not
    checked" and why when there was nothing to check against (no verdict, never ✗)."""
    if g.support_score is None and g.reason:
        return f"[yellow]not checked[/yellow] ({console_text(g.reason)})"
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


def print_claims(console: Any, answer: CitedAnswer, marker_mode: str) -> None:
    """The grounding verdict, then each claim: checked (✓/✗ and score) or not (·)."""
    g = answer.grounding
    assert g is not None
    console.print(f"[bold]Grounding[/bold] ({g.provider}) — {support_label(g)}")
    if not g.nothing_to_check:
        console.print(f"  [dim]{SUPPORT_SCORE_MEANING}[/dim]", soft_wrap=True)
    for claim in g.claims:
        score_text = "    " if claim.score is None else f"{claim.score:.2f}"
        written = set(footnote_numbers(claim.claim_text))
        text = console_text(render_markers(claim.claim_text.strip(), marker_mode))
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
        console.print(f"  [yellow]! {console_text(w)}[/yellow]")


def _footnote_of(origin: Any) -> int | None:
    if isinstance(origin, Citation):
        return origin.footnote
    if isinstance(origin, QuotedSource):
        return origin.number
    return None
