"""The "one example per API" of docs/apis.md runs as written against the embedded backend:
each of the five APIs answers with text and a citation, and every span it prints is a
slice of the answer (a docs example that drifts from the code fails here)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _example() -> str:
    text = (ROOT / "docs" / "apis.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    [block] = [b for b in blocks if "REQUESTS = {" in b and "api_root" in b]
    return block


def test_the_one_example_per_api_runs_and_cites_in_every_api(tmp_path: Path) -> None:
    script = tmp_path / "per_api.py"
    script.write_text(_example(), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    answers = {line.split(" ", 1)[0]: line for line in lines if not line.startswith(" ")}
    assert set(answers) == {"chat", "responses", "anthropic", "gemini", "cohere"}, lines
    for api, line in answers.items():
        assert "Employees may work remotely" in line, (api, line)
        assert "/documents/" in line, (api, line)  # a citation with the document's URL
    spans = [line for line in lines if line.startswith("   ")]
    assert len(spans) >= 4 * 2, lines  # chat has no spans; the other four anchor theirs
