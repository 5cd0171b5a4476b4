"""The local backend's corpus: a folder of ``.md`` / ``.txt`` documents, chunked for retrieval.

A document may start with a front matter block (``---`` lines around ``key: value``
pairs: ``title``, ``author``, ``year``, ``reference``, ``language``, ``data_source``;
other keys are kept in ``metadata``). The body is cut by heading and paragraph into
chunks that remember their position in the document, their nearest heading and, when
the document marks them (``<!-- page: N -->`` lines or form feeds, as ``pdftotext``
writes), their pages. Ids are stable hashes of the file name, so a document keeps its
id (and its URL) from one run to the next.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

__all__ = [
    "BUILTIN_CORPUS",
    "Chunk",
    "Corpus",
    "CorpusError",
    "Document",
    "load_corpus",
    "parse_document",
    "sentence_spans",
    "stable_id",
]

SUFFIXES = (".md", ".markdown", ".txt")
MAX_CHUNK_CHARS = 900
"""Paragraphs of one section are merged into a chunk up to about this many characters."""

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_PAGE_MARK = re.compile(r"^<!--\s*page\s*:?\s*(\d+)\s*-->$", re.IGNORECASE)
_FRONT_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")

# Words after which a full stop does not end a sentence (folded to lower case).
_ABBREVIATIONS = frozenset(
    [
        "art",
        "artt",
        "e.g",
        "i.e",
        "etc",
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "st",
        "no",
        "nr",
        "n",
        "p",
        "pp",
        "cf",
        "vs",
        "fig",
        "sig",
        "sgg",
        "ecc",
        "es",
        "m",
        "mme",
        "mlle",
        "cie",
        "av",
        "ch",
    ]
)
_SENTENCE_END = re.compile(r"[.!?…]+[\"'»”)\]]*(?=\s)")


class CorpusError(ValueError):
    """A corpus file could not be read (bad front matter, undecodable text, empty folder)."""


def stable_id(*parts: str) -> str:
    """A 24-hex id (the width of the Wikit ids), stable for the same inputs."""
    return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]


@dataclass(slots=True)
class Document:
    """One source document of the corpus."""

    id: str
    name: str
    """File name, e.g. ``remote-work-policy.md``."""
    title: str
    author: str | None
    year: str | None
    reference: str | None
    language: str | None
    data_source: str
    """Name of the data source (Wikit's ``data_source.name``), e.g. ``Human Resources``."""
    data_source_id: str
    body: str
    """The text after the front matter (what chunk offsets refer to)."""
    source_text: str = field(repr=False)
    """The file as written, front matter included (what ``GET /documents/{id}`` serves)."""
    media_type: str = "text/markdown"
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Chunk:
    """A passage of a document: one or more paragraphs under the same heading."""

    id: str
    document_id: str
    position: int
    """Zero-based index of the chunk in its document."""
    text: str
    """The passage, without its heading."""
    heading: str | None
    """The nearest heading above the passage."""
    start: int
    """Character offset of ``text`` in ``Document.body``."""
    end: int
    page_start: int | None = None
    """One-based page where the passage starts, when the document marks pages."""
    page_end: int | None = None

    @property
    def data(self) -> str:
        """The passage as Markdown with its heading, as Wikit's ``chunk.data`` carries it."""
        if self.heading:
            return f"## {self.heading}\n\n{self.text}"
        return self.text

    @property
    def data_offset(self) -> int:
        """Where ``text`` starts inside :attr:`data`."""
        return len(self.heading) + 5 if self.heading else 0


@dataclass(slots=True)
class Corpus:
    """Documents and their chunks, in a stable order (file name, then position)."""

    documents: list[Document]
    chunks: list[Chunk]
    skipped: list[str] = field(default_factory=list)
    """One warning per file left out (full path and why), when not loaded strictly."""
    _by_id: dict[str, Document] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_id = {d.id: d for d in self.documents}

    def document(self, document_id: str) -> Document | None:
        return self._by_id.get(document_id)

    def __len__(self) -> int:
        return len(self.documents)


def _builtin_dir() -> Traversable:
    return resources.files("streamcite.local").joinpath("corpus")


BUILTIN_CORPUS = "builtin"
"""Pass ``None`` (or this name) to :func:`load_corpus` for the demo corpus shipped with streamcite."""


def load_corpus(
    directory: Path | str | None = None,
    *,
    max_chunk_chars: int = MAX_CHUNK_CHARS,
    strict: bool = False,
) -> Corpus:
    """Load every ``.md`` / ``.markdown`` / ``.txt`` file of ``directory`` (recursively).

    ``None`` loads the built-in demo corpus. Raises :class:`CorpusError` when the folder
    does not exist, holds no document, or a file cannot be parsed. A file that is not
    UTF-8 text is skipped (its full path and the reason in :attr:`Corpus.skipped`), or
    raises :class:`CorpusError` when ``strict``.
    """
    documents: list[Document] = []
    skipped: list[str] = []
    if directory is None or directory == BUILTIN_CORPUS:
        files = sorted(
            ((t.name, t) for t in _builtin_dir().iterdir() if t.name.endswith(SUFFIXES)),
            key=lambda item: item[0],
        )
        for rel, trav in files:
            documents.append(parse_document(rel, _read(trav, rel)))
    else:
        root = Path(directory)
        if not root.is_dir():
            raise CorpusError(f"corpus folder not found: {root}")
        inside = root.resolve()
        for path in sorted(
            p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES
        ):
            rel = path.relative_to(root).as_posix()
            if not path.resolve().is_relative_to(inside):
                # A link out of the folder would serve a private file as a "document".
                problem = f"{path}: a symbolic link out of the corpus folder {root}"
                if strict:
                    raise CorpusError(problem)
                skipped.append(f"skipped {problem}")
                continue
            try:
                text = _read(path, str(path.resolve()))
            except CorpusError as exc:
                if strict:
                    raise
                skipped.append(f"skipped {exc}")
                continue
            documents.append(parse_document(rel, text))
    if not documents:
        raise CorpusError(f"no .md or .txt document in {directory or 'the built-in corpus'}")
    chunks = [c for d in documents for c in chunk_document(d, max_chunk_chars)]
    return Corpus(documents, chunks, skipped)


def _read(source: Traversable | Path, rel: str) -> str:
    try:
        text = source.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{rel}: not UTF-8 text ({exc.reason})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _front_matter(rel: str, text: str) -> tuple[dict[str, str], str]:
    """Split ``---`` front matter from the body. Malformed front matter is an error."""
    if not text.startswith("---\n"):
        return {}, text
    close = re.search(r"^---[ \t]*$", text[4:], re.MULTILINE)
    if close is None:
        return {}, text  # a horizontal rule, not front matter
    block = text[4 : 4 + close.start()]
    body = text[4 + close.end() :].lstrip("\n")
    meta: dict[str, str] = {}
    for lineno, line in enumerate(block.split("\n"), start=2):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _FRONT_KEY.match(stripped)
        if m is None:
            raise CorpusError(
                f"{rel}:{lineno}: front matter line is not 'key: value': {stripped!r}"
            )
        value = m.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        meta[m.group(1).lower()] = value
    return meta, body


def parse_document(rel: str, text: str) -> Document:
    """Build a :class:`Document` from a file's relative name and its text."""
    meta, body = _front_matter(rel, text)
    name = rel.rsplit("/", 1)[-1]
    title = meta.pop("title", "") or _first_heading(body) or name.rsplit(".", 1)[0]
    data_source = meta.pop("data_source", "") or "Local corpus"
    return Document(
        id=stable_id("document", rel),
        name=name,
        title=title,
        author=meta.pop("author", None) or None,
        year=meta.pop("year", None) or None,
        reference=meta.pop("reference", None) or None,
        language=meta.pop("language", None) or None,
        data_source=data_source,
        data_source_id=stable_id("data_source", data_source),
        body=body,
        source_text=text,
        media_type="text/plain" if rel.lower().endswith(".txt") else "text/markdown",
        metadata=meta,
    )


def _first_heading(body: str) -> str | None:
    for line in body.split("\n"):
        m = _HEADING.match(line)
        if m:
            return m.group(2)
    return None


@dataclass(slots=True)
class _Paragraph:
    start: int
    end: int
    heading: str | None
    section: int
    page: int | None


def _paragraphs(body: str) -> Iterator[_Paragraph]:
    """Paragraphs of a body with their offsets, nearest heading and page."""
    has_pages = "\f" in body or any(_PAGE_MARK.match(ln.strip()) for ln in body.split("\n"))
    page: int | None = 1 if has_pages else None
    heading: str | None = None
    section = 0
    para_start: int | None = None
    para_end = 0
    pos = 0
    for raw_line in body.split("\n"):
        line_start, line_end = pos, pos + len(raw_line)
        pos = line_end + 1
        line = raw_line
        # A form feed starts a new page (and ends the paragraph before it).
        while "\f" in line:
            before, _, line = line.partition("\f")
            if before.strip() and para_start is None:
                para_start = line_start
            if para_start is not None:
                yield _Paragraph(para_start, line_start + len(before), heading, section, page)
                para_start = None
            line_start += len(before) + 1
            page = (page or 1) + 1
        stripped = line.strip()
        page_mark = _PAGE_MARK.match(stripped)
        heading_mark = _HEADING.match(line)
        if not stripped or page_mark or heading_mark:
            if para_start is not None:
                yield _Paragraph(para_start, para_end, heading, section, page)
                para_start = None
            if page_mark:
                page = int(page_mark.group(1))
            elif heading_mark:
                heading = heading_mark.group(2)
                section += 1
            continue
        if para_start is None:
            para_start = line_start + (len(line) - len(line.lstrip()))
        para_end = line_end
    if para_start is not None:
        yield _Paragraph(para_start, para_end, heading, section, page)


def chunk_document(doc: Document, max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """Cut a document by heading and paragraph.

    Paragraphs of one section on one page merge into a chunk up to ``max_chars``.
    """
    groups: list[list[_Paragraph]] = []
    for para in _paragraphs(doc.body):
        last = groups[-1] if groups else None
        if (
            last is not None
            and last[-1].section == para.section
            and last[-1].page == para.page
            and para.end - last[0].start <= max_chars
        ):
            last.append(para)
        else:
            groups.append([para])
    chunks: list[Chunk] = []
    for position, group in enumerate(groups):
        start, end = group[0].start, group[-1].end
        chunks.append(
            Chunk(
                id=stable_id("chunk", doc.id, str(position)),
                document_id=doc.id,
                position=position,
                text=doc.body[start:end],
                heading=group[0].heading,
                start=start,
                end=end,
                page_start=group[0].page,
                page_end=group[-1].page,
            )
        )
    return chunks


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of the sentences of a passage (end exclusive).

    List items and lines of a paragraph that do not end a sentence are joined; a list
    item always starts a new span. Abbreviations (``Art.``, ``e.g.``) and decimal
    numbers do not end a sentence. The spans exclude surrounding whitespace and list
    bullets.
    """
    spans: list[tuple[int, int]] = []
    for block_start, block_end in _blocks(text):
        start = block_start
        for m in _SENTENCE_END.finditer(text, block_start, block_end):
            end = m.end()
            if _is_abbreviation(text, start, m.start()):
                continue
            spans.append((start, end))
            start = end
        if start < block_end:
            spans.append((start, block_end))
    out: list[tuple[int, int]] = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def _blocks(text: str) -> Iterable[tuple[int, int]]:
    """Spans of paragraphs and list items (a list item is its own block)."""
    pos = 0
    start: int | None = None
    end = 0
    for line in text.split("\n"):
        line_start, line_end = pos, pos + len(line)
        pos = line_end + 1
        bullet = _LIST_ITEM.match(line)
        if not line.strip() or bullet:
            if start is not None:
                yield start, end
                start = None
            if not line.strip() or bullet is None:
                continue
            start, end = line_start + bullet.end(), line_end
            continue
        if start is None:
            start = line_start
        end = line_end
    if start is not None:
        yield start, end


def _is_abbreviation(text: str, sentence_start: int, dot: int) -> bool:
    """True when the full stop at ``dot`` closes an abbreviation, not a sentence."""
    if text[dot] != ".":
        return False
    word_start = dot
    while word_start > sentence_start and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start:dot].lower().lstrip("(\"'«“")
    if not word:
        return False
    if word in _ABBREVIATIONS:
        return True
    # Single letters ("J. Smith") and dotted initialisms ("U.S.") are abbreviations.
    return (len(word) == 1 and word.isalpha()) or bool(re.fullmatch(r"(?:\w\.)+\w", word))
