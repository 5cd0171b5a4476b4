"""The streams the compiled-core test feeds to both builds, and the events they give.

Run as ``python -m tests._compiled_cases OUT.json`` with the build to check first on
``PYTHONPATH``: it writes every case's events (``to_json`` of each) to ``OUT.json``.
The test runs the same cases in its own process (the pure-Python source) and compares.

The cases: the project's own recordings (``tests/fixtures/dialects`` and the chat
providers' in ``tests/fixtures/providers``), and the shared real recordings where
``../shared`` exists; each whole and in 1-, 7- and 4096-byte reads, read as its own
dialect and as ``auto``; then seeded mutations of the own recordings (bytes flipped,
inserted, escaped, cut) in random splits, for the inputs no recording has.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import orjson

from streamcite.core.api import ChatStreamParser, iter_events
from streamcite.core.bounds import StreamBounds

ROOT = Path(__file__).resolve().parent.parent
OWN = [ROOT / "tests" / "fixtures" / "dialects", ROOT / "tests" / "fixtures" / "providers"]
SHARED = [
    ROOT.parent / "shared" / "dialects" / "fixtures",
    ROOT.parent / "shared" / "dialects" / "holdout",
]
DIALECTS = ("chat", "responses", "anthropic", "gemini", "cohere")
MUTATIONS = 600
# Caps small enough that the recordings reach them: the bounds' own paths (an event
# dropped for its size, citations and answer text clipped) in both builds.
TIGHT = StreamBounds(
    max_event_bytes=300,
    max_citations=2,
    max_answer_chars=200,
    max_citation_text_chars=40,
    max_metadata_bytes=300,
)
# What a mutation writes: JSON escapes, quotes, a lone surrogate escape, raw and
# control bytes, event boundaries, footnote markers.
NOISE = [
    b"\\",
    b'"',
    b"\\ud800",
    b"\\u00e9",
    b"\xff",
    b"\x00",
    b"\n\n",
    b"\r\n",
    b"[1]",
    b"[",
    b"}",
]


def _dialect(path: Path) -> str:
    head = path.name.split("__", 1)[0]
    return head if head in DIALECTS else "chat"


def recordings(folders: list[Path]) -> list[tuple[str, str, bytes]]:
    """(name, dialect, body) of every ``.sse`` file in ``folders`` that exist."""
    out = []
    for folder in folders:
        for f in sorted(folder.glob("*.sse")) if folder.is_dir() else []:
            out.append((f"{folder.name}/{f.name}", _dialect(f), f.read_bytes()))
    return out


def _events(parts: list[bytes], dialect: str) -> list[str]:
    return [e.to_json().decode() for e in iter_events(parts, dialect=dialect)]


def _bounded(parts: list[bytes], dialect: str, mode: str) -> list[str]:
    p = ChatStreamParser(mode, bounds=TIGHT, dialect=dialect)  # type: ignore[arg-type]
    events = [e for part in parts for e in p.feed(part)]
    events += p.close()
    events.append(p.done_event())
    return [e.to_json().decode() for e in events]


def _split(body: bytes, step: int) -> list[bytes]:
    return [body[i : i + step] for i in range(0, len(body), step)] if step else [body]


def _mutate(rng: random.Random, body: bytes) -> bytes:
    b = bytearray(body)
    for _ in range(rng.randint(1, 6)):
        at = rng.randrange(len(b) + 1)
        kind = rng.random()
        if kind < 0.5:
            b[at:at] = rng.choice(NOISE)
        elif kind < 0.8 and at < len(b):
            del b[at : at + rng.randint(1, 8)]
        elif at < len(b):
            b[at] = rng.randrange(256)
    return bytes(b)


def _cuts(rng: random.Random, body: bytes) -> list[bytes]:
    points = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(0, 30))))
    return [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]


def run() -> dict[str, list[str]]:
    """Every case's events, keyed by a name that says what was fed."""
    out: dict[str, list[str]] = {}
    for name, dialect, body in recordings(OWN + SHARED):
        for as_ in (dialect, "auto"):
            for step in (0, 1, 7, 4096):
                if step == 1 and len(body) > 40_000:
                    continue
                out[f"{name}/{as_}/{step}"] = _events(_split(body, step), as_)
    own = recordings(OWN)
    rng = random.Random(20261206)
    for name, dialect, body in own:
        for mode in ("keep", "strip", "superscript"):
            out[f"tight/{name}/{mode}"] = _bounded(_cuts(rng, body), dialect, mode)
    for i in range(MUTATIONS):
        name, dialect, body = rng.choice(own)
        mutated = _mutate(rng, body)
        as_ = rng.choice((dialect, "auto"))
        out[f"mutated/{i}/{name}/{as_}"] = _events(_cuts(rng, mutated), as_)
    return out


if __name__ == "__main__":
    Path(sys.argv[1]).write_bytes(orjson.dumps(run()))
