"""Wikit Semantics quoted sources (v2 ``get-quoted-sources``), as typed models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamcite.core import _validate as v
from streamcite.core.errors import MalformedResponse
from streamcite.core.quote import quote

__all__ = ["DataSource", "QuotedSource", "SourceChunk", "SourceDocument"]


@dataclass(slots=True)
class SourceDocument:
    id: str
    name: str | None = None
    title: str | None = None
    url: str | None = None
    public_link: bool | None = None
    storage_name: str | None = None
    data_source_id: str | None = None
    organization_id: str | None = None

    @property
    def display_name(self) -> str:
        """Title when known, else the file name, else the id."""
        return self.title or self.name or self.id

    @classmethod
    def from_dict(cls, d: Any, path: str = "document") -> SourceDocument:
        d = v.obj(d, path)
        return cls(
            id=v.req_str(d, "id", path),
            name=v.opt_str(d, "name", path),
            title=v.opt_str(d, "title", path),
            url=v.opt_str(d, "url", path),
            public_link=v.opt_bool(d, "public_link", path),
            storage_name=v.opt_str(d, "storage_name", path),
            data_source_id=v.opt_str(d, "data_source_id", path),
            organization_id=v.opt_str(d, "organization_id", path),
        )


@dataclass(slots=True)
class SourceChunk:
    id: str
    data: str = ""
    document_id: str | None = None
    data_source_id: str | None = None
    llm_app_id: str | None = None
    user_id: str | None = None
    flags: Any = None
    position: int | None = None
    page_start: int | None = None
    """Zero-based, as the API sends it."""
    page_end: int | None = None
    """Zero-based, as the API sends it."""

    @property
    def display_page_start(self) -> int | None:
        """One-based page number for people."""
        return None if self.page_start is None else self.page_start + 1

    @property
    def display_page_end(self) -> int | None:
        return None if self.page_end is None else self.page_end + 1

    @classmethod
    def from_dict(cls, d: Any, path: str = "chunk") -> SourceChunk:
        d = v.obj(d, path)
        data = v.opt_str(d, "data", path)
        return cls(
            id=v.req_str(d, "id", path),
            data=data or "",
            document_id=v.opt_str(d, "document_id", path),
            data_source_id=v.opt_str(d, "data_source_id", path),
            llm_app_id=v.opt_str(d, "llm_app_id", path),
            user_id=v.opt_str(d, "user_id", path),
            flags=d.get("flags"),
            position=v.opt_int(d, "position", path),
            page_start=v.opt_int(d, "page_start", path),
            page_end=v.opt_int(d, "page_end", path),
        )


@dataclass(slots=True)
class DataSource:
    id: str
    name: str | None = None

    @classmethod
    def from_dict(cls, d: Any, path: str = "data_source") -> DataSource:
        d = v.obj(d, path)
        return cls(id=v.req_str(d, "id", path), name=v.opt_str(d, "name", path))


@dataclass(slots=True)
class QuotedSource:
    """One source the answer quoted as ``[quoted_as]``."""

    quoted_as: str
    document: SourceDocument
    chunk: SourceChunk
    data_source: DataSource | None = None
    score: float | None = None
    retriever_type: str | None = None

    @property
    def number(self) -> int | None:
        """``quoted_as`` as an int when it is one (the ``[n]`` in the answer)."""
        return v.digits_int(self.quoted_as, max_digits=9)  # upstream text: never raises

    @classmethod
    def from_dict(cls, d: Any, path: str = "source") -> QuotedSource:
        d = v.obj(d, path)
        quoted = d.get("quoted_as")
        if isinstance(quoted, int) and not isinstance(quoted, bool):
            quoted = str(quoted)
        if not isinstance(quoted, str):
            raise MalformedResponse(f"{path}.quoted_as: expected a string, got {quote(quoted)}")
        ds = d.get("data_source")
        return cls(
            quoted_as=quoted,
            document=SourceDocument.from_dict(d.get("document"), f"{path}.document"),
            chunk=SourceChunk.from_dict(d.get("chunk"), f"{path}.chunk"),
            data_source=None if ds is None else DataSource.from_dict(ds, f"{path}.data_source"),
            score=v.opt_float(d, "score", path),
            retriever_type=v.opt_str(d, "retriever_type", path),
        )

    @classmethod
    def list_from_json(cls, body: Any) -> list[QuotedSource]:
        """Parse the v2 response body (a JSON array)."""
        items = v.arr(body, "$")
        return [cls.from_dict(item, f"$[{i}]") for i, item in enumerate(items)]
