"""The deprecated v1 ``/citations`` endpoint's citation, parsed strictly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamcite.core import _validate as v

__all__ = ["WikitCitationV1"]


@dataclass(slots=True)
class WikitCitationV1:
    """One citation of the deprecated v1 ``/citations`` endpoint (every documented field).

    ``chunk_page_start``/``chunk_page_end`` are 0-based as sent; ``display_page_*``
    are 1-based for people. ``start_char_idx``/``end_char_idx`` locate
    ``source_sentence`` in the chunk.
    """

    id: str
    """``_id`` in the JSON."""
    query_execution_id: str | None = None
    created_at: str | None = None
    total_count: int | None = None
    reply_sentence: str | None = None
    source_sentence: str | None = None
    chunk_data_snapshot: str | None = None
    start_char_idx: int | None = None
    end_char_idx: int | None = None
    chunk_id: str | None = None
    chunk_page_start: int | None = None
    chunk_page_end: int | None = None
    chunk_position: int | None = None
    document_id: str | None = None
    document_name: str | None = None
    document_title: str | None = None
    document_url: str | None = None
    organization_id: str | None = None
    threshold: float | None = None

    @property
    def display_page_start(self) -> int | None:
        return None if self.chunk_page_start is None else self.chunk_page_start + 1

    @property
    def display_page_end(self) -> int | None:
        return None if self.chunk_page_end is None else self.chunk_page_end + 1

    @classmethod
    def from_dict(cls, d: Any, path: str = "citation") -> WikitCitationV1:
        d = v.obj(d, path)
        return cls(
            id=v.req_str(d, "_id", path),
            query_execution_id=v.opt_str(d, "query_execution_id", path),
            created_at=v.opt_str(d, "created_at", path),
            total_count=v.opt_int(d, "total_count", path),
            reply_sentence=v.opt_str(d, "reply_sentence", path),
            source_sentence=v.opt_str(d, "source_sentence", path),
            chunk_data_snapshot=v.opt_str(d, "chunk_data_snapshot", path),
            start_char_idx=v.opt_int(d, "start_char_idx", path),
            end_char_idx=v.opt_int(d, "end_char_idx", path),
            chunk_id=v.opt_str(d, "chunk_id", path),
            chunk_page_start=v.opt_int(d, "chunk_page_start", path),
            chunk_page_end=v.opt_int(d, "chunk_page_end", path),
            chunk_position=v.opt_int(d, "chunk_position", path),
            document_id=v.opt_str(d, "document_id", path),
            document_name=v.opt_str(d, "document_name", path),
            document_title=v.opt_str(d, "document_title", path),
            document_url=v.opt_str(d, "document_url", path),
            organization_id=v.opt_str(d, "organization_id", path),
            threshold=v.opt_float(d, "threshold", path),
        )

    @classmethod
    def list_from_json(cls, body: Any) -> list[WikitCitationV1]:
        items = v.arr(body, "$")
        return [cls.from_dict(item, f"$[{i}]") for i, item in enumerate(items)]
