"""Assemble README.md from docs/readme/*.md (one file per part, owned by its topic).

Run: ``python docs/build_readme.py`` — the README is committed, this keeps its parts
editable next to the code they describe.
"""

from __future__ import annotations

from pathlib import Path

ORDER = [
    "head",
    "core",
    "local",
    "enrich",
    "checker",
    "relay",
    "redis",
    "bench",
    "benchmarks",
    "deps",
    "tail",
]

here = Path(__file__).parent / "readme"
parts = [
    (here / f"{name}.md").read_text().strip() for name in ORDER if (here / f"{name}.md").exists()
]
(Path(__file__).parent.parent / "README.md").write_text("\n\n".join(parts) + "\n")
print("README.md written from", len(parts), "parts")
