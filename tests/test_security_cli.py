"""Upstream or library text printed by the CLI is never read as rich markup (issue 11)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from streamcite.cli import main


def test_bench_prints_the_plots_message_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pip install 'streamcite[plot]'`` lost its ``[plot]``: rich took it for a tag."""
    from streamcite.bench import plots

    def no_plots(doc: object, out: Path) -> list[Path]:
        raise plots.PlotsUnavailable("plots need matplotlib: pip install 'streamcite[plot]'")

    monkeypatch.setattr(plots, "write_plots", no_plots)
    args = ["bench", "--question", "How many remote days?", "--requests", "1"]
    args += ["--local-in-process", "--out", str(tmp_path), "--plots", "--no-progress"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "pip install 'streamcite[plot]'" in result.stderr
