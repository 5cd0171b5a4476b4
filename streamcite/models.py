"""The data of an answer: citations, quoted sources, grounding results, usage, timings.

The answer itself is :class:`streamcite.CitedAnswer`; its parts are imported from here
(the table of every public name and its one import path: docs/imports.md).

>>> from streamcite.models import Citation
>>> Citation(document_title="Remote Work Policy", document_index=0).footnote
1
"""

from streamcite.core.grounding import CitedChunk, GroundingClaim, GroundingFact, GroundingResult
from streamcite.core.models import Citation, CitationRef, CitationSpan, Timings, ToolCall, Usage
from streamcite.core.sources import DataSource, QuotedSource, SourceChunk, SourceDocument

__all__ = [
    "Citation",
    "CitationRef",
    "CitationSpan",
    "CitedChunk",
    "DataSource",
    "GroundingClaim",
    "GroundingFact",
    "GroundingResult",
    "QuotedSource",
    "SourceChunk",
    "SourceDocument",
    "Timings",
    "ToolCall",
    "Usage",
]
