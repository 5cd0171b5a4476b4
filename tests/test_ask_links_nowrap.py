"""``ask`` prints each cited place as PATH:LINE (or a URL) on one line, whatever the
terminal width and however long the folder: rich never wraps, folds or cuts it (a link
split over two lines no longer opens). The test does not depend on where the checkout
lives: the corpus is copied under a long temporary folder."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from streamcite.apps._answer_summary import SUPPORT_SCORE_MEANING
from streamcite.apps._ask_render import RenderSettings, RichRenderer
from streamcite.apps._local_links import LIVE_PAGES_HINT
from streamcite.core.models import Citation, CitedAnswer

LINK_LINE = re.compile(r"^ {2}([⁰¹²³⁴⁵⁶⁷⁸⁹ ]+) (\S.*)$")


def link_lines(out: str) -> list[str]:
    """The targets of the ``  ¹ ² TARGET`` lines, as printed (not the quoted passages,
    ``  ¹ “…”``)."""
    matches = (LINK_LINE.match(line) for line in out.splitlines())
    return [m[2] for m in matches if m and not m[2].startswith("“")]


@pytest.fixture
def long_corpus(tmp_path: Path) -> Path:
    builtin = Path(str(resources.files("streamcite.local").joinpath("corpus")))
    folder = tmp_path
    for part in ("a-rather-long-folder-name-for-a-clone", "x" * 60, "y" * 60, "corpus"):
        folder = folder / part
    shutil.copytree(builtin, folder)
    return folder


@pytest.mark.parametrize("columns", ["20", "80"])
def test_corpus_links_stay_whole_in_a_narrow_terminal(long_corpus: Path, columns: str) -> None:
    env = {**os.environ, "COLUMNS": columns}
    r = subprocess.run(
        [sys.executable, "-m", "streamcite.cli", "ask", "--demo", "--fault", "",
         "--corpus", str(long_corpus)],
        capture_output=True, text=True, timeout=90, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    links = link_lines(r.stdout)
    assert len(links) == 3, r.stdout  # one per cited place
    for link in links:
        path, _, line = link.rpartition(":")
        assert Path(path).is_file() and Path(path).is_relative_to(long_corpus), link
        assert Path(path).read_text(encoding="utf-8").split("\n")[int(line) - 1].strip()
    lines = r.stdout.splitlines()
    for hint in LIVE_PAGES_HINT.split("\n"):
        assert f"  {hint}" in lines, hint  # the hint's lines are whole too
    # What the support score is, on the line under the verdict.
    verdict = next(i for i, line in enumerate(lines) if line.startswith("Grounding (local)"))
    assert lines[verdict + 1] == f"  {SUPPORT_SCORE_MEANING}"


def test_a_long_url_is_printed_whole(capsys: pytest.CaptureFixture[str]) -> None:
    url = "https://example.org/" + "/".join(["segment"] * 30) + "?q=1#frag"
    r = RichRenderer(RenderSettings("q?", "https://api.example/v1", None, None, "keep"))
    r.console.width = 30
    r.finish(CitedAnswer(text="t", complete=True, citations=[Citation(
        document_title="Doc", document_index=0, source_url=url)]))  # fmt: skip
    assert link_lines(capsys.readouterr().out) == [url]
