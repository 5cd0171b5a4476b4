"""``streamcite bench`` when nothing succeeds: exit status 1, and the upstream's own
message (one line, inert, clipped) in the summary, in results.json and in requests.csv."""

from __future__ import annotations

import csv
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import orjson
import pytest
from aiohttp import web
from rich.console import Console

from streamcite.bench import BenchTarget, LoadSpec, build_results, run_sweep, write_results
from streamcite.bench.csvout import write_csv
from streamcite.bench.records import MAX_MESSAGE
from streamcite.bench.tables import summary_tables
from tests._serve_local import serve_local


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with serve_local() as url:  # no --allow-client-faults
        yield url


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streamcite.cli", "bench", "--no-progress", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_request_succeeded_exits_1_with_the_servers_message(served: str, tmp_path: Path) -> None:
    r = bench(
        "--base-url", served + "/v1", "--model", "streamcite-local", "--question", "Remote?",
        "--requests", "3", "--warmup", "0", "--fault", "token_delay=0.02", "--no-plots",
        "--out", str(tmp_path),
    )  # fmt: skip
    assert r.returncode == 1, (r.stdout, r.stderr)
    hint = "start it with --allow-client-faults"
    assert "forbidden×3" in r.stdout
    assert hint in " ".join(r.stdout.split())  # the summary names the server's fix
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: no request succeeded: forbidden×3: HTTP 403:"), r.stderr
    assert last.endswith(f"({hint})")
    with (tmp_path / "requests.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3
    assert all(row["errors"] == "forbidden@http" for row in rows)
    assert all(hint in row["error_message"] for row in rows)
    doc = orjson.loads((tmp_path / "results.json").read_bytes())
    summary = doc["runs"][0]["summary"]
    assert hint in summary["error_messages"]["forbidden"]
    assert hint in doc["runs"][0]["requests"][0]["errors"][0]["message"]


def test_some_requests_succeeding_is_exit_0(served: str) -> None:
    r = bench(
        "--base-url", served + "/v1", "--model", "streamcite-local", "--question", "Remote?",
        "--requests", "2", "--warmup", "0", "--grounding", "none",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "ok 2/2" in r.stdout.replace("\xa0", " ")


@pytest.fixture
async def hostile() -> AsyncIterator[str]:
    """An upstream whose 403 message carries escape sequences, a formula and 2,000 x."""
    message = "=cmd|' /C calc'!A0 \x1b]52;c;ZXZpbA==\x07\x1b[2J\nsecond line " + "x" * 2000
    body = orjson.dumps({"error": {"message": message, "code": "forbidden"}})

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=403, body=body, content_type="application/json")

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


async def test_upstream_messages_are_one_line_inert_and_clipped(
    hostile: str, tmp_path: Path
) -> None:
    runs = await run_sweep(BenchTarget(hostile, model="m"), ["q"], [LoadSpec(requests=2)])
    doc = orjson.loads(write_results(build_results(runs, {}), tmp_path).read_bytes())
    message = doc["runs"][0]["requests"][0]["errors"][0]["message"]
    assert "\x1b" not in message and "\x07" not in message and "\n" not in message
    assert message.startswith("HTTP 403: =cmd|") and "second line" in message
    assert len(message) < MAX_MESSAGE + 40 and "more characters)" in message
    with write_csv(doc, tmp_path).open(encoding="utf-8", newline="") as fh:
        row = next(csv.DictReader(fh))
    assert row["error_message"] == message  # "HTTP 403: " first: no formula
    console = Console(record=True, width=100, color_system=None)
    console.print(summary_tables(doc))
    shown = console.export_text()
    assert "\x1b" not in shown and "forbidden: HTTP 403: =cmd|" in shown


def test_a_formula_at_the_start_of_a_message_is_quoted_in_the_csv(tmp_path: Path) -> None:
    error = {"code": "x", "stage": "chunk", "status": None, "message": "=HYPERLINK(1)"}
    doc = {"runs": [{"load": {"concurrency": 1}, "requests": [{"errors": [error]}]}]}
    with write_csv(doc, tmp_path).open(encoding="utf-8", newline="") as fh:
        row = next(csv.DictReader(fh))
    assert row["error_message"] == "'=HYPERLINK(1)" and row["errors"] == "x@chunk"
