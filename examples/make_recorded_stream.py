"""Writes examples/data/magisterium_stream.sse: a Magisterium-style recorded stream.

Word-sized deltas, footnotes split across deltas, ``citations`` on the finish chunk
(the Magisterium document's example, Italian), a usage chunk and ``[DONE]``.
Run: ``python examples/make_recorded_stream.py``.
"""

from __future__ import annotations

from pathlib import Path

import orjson

ANSWER = (
    "L'insegnamento della Chiesa cattolica sulla fede e la morale è profondamente radicato "
    "nella Scrittura e nella tradizione [1]. Le questioni morali si basano non solo sulla "
    "ragione, ma anche sulla Scrittura [1][2]. La coscienza va formata con cura [2, 3]."
)
CITATIONS = [
    {
        "cited_text": "34. L'insegnamento della Chiesa su questioni morali si basa non solo sulla "
        "ragione e sull'argomentazione, ma anche sulla Scrittura e sulla tradizione cristiana [...]",
        "cited_text_heading": "La vita morale",
        "document_title": "Cherishing Life",
        "document_index": 0,
        "document_author": "Conferenza dei Vescovi Cattolici d'Inghilterra e Galles",
        "document_year": "2004",
        "document_reference": "34",
        "source_url": "https://example.org/cherishing-life#34",
    },
    {
        "cited_text": "La Sacra Tradizione e la Sacra Scrittura costituiscono un solo sacro deposito "
        "della parola di Dio affidato alla Chiesa.",
        "cited_text_heading": "Capitolo II",
        "document_title": "Dei Verbum",
        "document_index": 1,
        "document_author": "Concilio Vaticano II",
        "document_year": "1965",
        "document_reference": "10",
        "source_url": "https://example.org/dei-verbum#10",
    },
    {
        "cited_text": "La coscienza deve essere informata e il giudizio morale illuminato.",
        "cited_text_heading": "La formazione della coscienza",
        "document_title": "Catechismo della Chiesa Cattolica",
        "document_index": 2,
        "document_author": None,
        "document_year": "1992",
        "document_reference": "1783",
        "source_url": "https://example.org/ccc#1783",
    },
]


def pieces(text: str) -> list[str]:
    """Word-sized deltas; markers split so that "[", "1", "]" arrive separately."""
    out: list[str] = []
    for word in text.split(" "):
        token = (" " if out else "") + word
        if "[" in token:
            i = token.index("[")
            out.extend([token[:i], "[", token[i + 1 : i + 2], token[i + 2 :]])
        else:
            out.append(token)
    return [p for p in out if p]


def build() -> bytes:
    base = {
        "id": "chatcmpl-recorded-1",
        "object": "chat.completion.chunk",
        "created": 1630000000,
        "model": "magisterium-1",
    }
    lines = [b": recorded for streamcite examples\n\n"]

    def chunk(choice: dict[str, object], **extra: object) -> None:
        lines.append(b"data: " + orjson.dumps({**base, "choices": [choice], **extra}) + b"\n\n")

    chunk({"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None})
    for p in pieces(ANSWER):
        chunk({"index": 0, "delta": {"content": p}, "finish_reason": None})
    chunk({"index": 0, "delta": {}, "finish_reason": "stop"}, citations=CITATIONS)
    lines.append(
        b"data: "
        + orjson.dumps(
            {
                **base,
                "choices": [],
                "usage": {"prompt_tokens": 42, "completion_tokens": 61, "total_tokens": 103},
            }
        )
        + b"\n\n"
    )
    lines.append(b"data: [DONE]\n\n")
    return b"".join(lines)


if __name__ == "__main__":
    out = Path(__file__).parent / "data" / "magisterium_stream.sse"
    out.write_bytes(build())
    print(f"wrote {out} ({out.stat().st_size} bytes)")
