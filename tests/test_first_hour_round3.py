"""Issue 27 (the first hour, round 3): links that outlive ``ask``, mistakes that are no
longer accepted in silence, a closed pipe ended like Unix tools end it."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import openai
import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from streamcite.apps._local_links import offline_links
from streamcite.apps.parse import SseSniffer
from streamcite.cli import main
from streamcite.local.corpus import load_corpus
from streamcite.local.server import MODEL, BackendConfig, LocalBackend

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "examples" / "data" / "magisterium_stream.sse"


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "streamcite.cli", *args],
        capture_output=True,
        input=stdin,
        timeout=60,
    )


@pytest.fixture
async def backend() -> AsyncIterator[LocalBackend]:
    async with LocalBackend(BackendConfig()) as be:
        yield be


# -- serve-local: model_not_found and /v1/models, as OpenAI answers them ---------------


async def test_an_unknown_model_is_openais_404_model_not_found(backend: LocalBackend) -> None:
    client = openai.AsyncOpenAI(base_url=backend.base_url, api_key="unused", max_retries=0)
    messages = [{"role": "user", "content": "How many remote days?"}]
    for model in ("gpt-4o", "streamcite-locl"):
        with pytest.raises(openai.NotFoundError) as caught:
            await client.chat.completions.create(model=model, messages=messages)  # type: ignore[arg-type,call-overload]
        assert caught.value.status_code == 404
        assert caught.value.code == "model_not_found"
        assert f"`{model}` does not exist" in caught.value.message
    listed = [m.id async for m in client.models.list()]
    assert listed == [MODEL]
    ok = await client.chat.completions.create(model=MODEL, messages=messages)  # type: ignore[arg-type,call-overload]
    assert ok.choices[0].message.content
    await client.close()


async def test_model_not_found_body_has_openais_shape_and_is_inert(backend: LocalBackend) -> None:
    async with httpx.AsyncClient() as client:
        body = {"model": "evil\x1b]52;c;x\x07", "messages": [{"role": "user", "content": "q"}]}
        r = await client.post(backend.base_url + "/chat/completions", json=body)
        assert r.status_code == 404
        error = r.json()["error"]
        assert set(error) == {"message", "type", "param", "code"}
        assert (error["type"], error["param"], error["code"]) == (
            "invalid_request_error",
            None,
            "model_not_found",
        )
        assert "\x1b" not in error["message"] and "\x07" not in error["message"]
        missing = await client.post(
            backend.base_url + "/chat/completions", json={"messages": body["messages"]}
        )
        assert missing.status_code == 400 and missing.json()["error"]["param"] == "model"
        models = (await client.get(backend.base_url + "/models")).json()
        assert models["object"] == "list"
        assert [(m["id"], m["object"]) for m in models["data"]] == [(MODEL, "model")]


# -- parse: an input that is not an SSE stream at all ------------------------------------


def test_parse_exits_1_when_the_input_is_not_an_sse_stream() -> None:
    r = cli("parse", str(ROOT / "README.md"))
    assert r.returncode == 1
    assert b"README.md has no SSE field line" in r.stderr and b"Traceback" not in r.stderr
    assert orjson.loads(r.stdout.splitlines()[-1])["type"] == "done"  # events still printed
    empty = cli("parse", stdin=b"")
    assert empty.returncode == 1 and b"stdin is empty" in empty.stderr
    assert cli("parse", str(RECORDED)).returncode == 0
    # An SSE stream whose faults are events is still an SSE stream: exit 0.
    assert cli("parse", stdin=b'data: {"id": "cut').returncode == 0
    assert cli("parse", stdin=b": keep-alive\n\n").returncode == 0


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_the_sniffer_finds_a_field_split_across_reads(cuts: list[int]) -> None:
    data = b"\n" * 3 + RECORDED.read_bytes()[:400]
    points = sorted({0, *cuts, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(points)]
    sniff = SseSniffer(chunks)
    assert b"".join(sniff) == data
    assert sniff.looks_like_sse and not sniff.empty


def test_the_sniffer_does_not_take_prose_for_sse() -> None:
    prose = b"# Title\n\nSome data: not a field, a sentence.\nidentity: also not\n"
    sniff = SseSniffer([prose[:13], prose[13:]])
    assert b"".join(sniff) == prose and not sniff.looks_like_sse


# -- a closed pipe: no traceback, the end Unix tools have (SIGPIPE) ----------------------


def _read_lines_then_close(args: list[str], lines: int) -> tuple[int, bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamcite.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    watchdog = threading.Timer(60, proc.kill)  # the reads below are bounded too
    watchdog.start()
    try:
        for _ in range(lines):
            proc.stdout.readline()
        proc.stdout.close()
        code = proc.wait(timeout=60)
    finally:
        watchdog.cancel()
        proc.kill()
    return code, proc.stderr.read()


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "--token-delay", "0.02", "How many remote days?"],
        ["ask", "--json", "--token-delay", "0.02", "How many remote days?"],
        ["parse", "BIG"],
    ],
    ids=["ask", "ask-json", "parse"],
)
def test_a_closed_pipe_ends_quietly_by_sigpipe(args: list[str], tmp_path: Path) -> None:
    if "BIG" in args:  # more than a pipe buffer of output
        big = tmp_path / "big.sse"
        big.write_bytes(RECORDED.read_bytes().replace(b"data: [DONE]\n\n", b"") * 200)
        args = ["parse", str(big)]
    code, stderr = _read_lines_then_close(args, 3)
    assert code == -signal.SIGPIPE, (code, stderr)
    assert stderr == b"", stderr


# -- ask --question: the argument, not the nearest option ------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["ask", "--question", "x"], 'QUESTION is an argument, not an option: main ask "How'),
        (["ask", "--prompt=x"], "QUESTION is an argument"),
        (["ask", "--quesiton", "x"], "QUESTION is an argument"),
        (["parse", "--file", "x.sse"], "FILE is an argument, not an option: main parse"),
        (["sse", "--input", "x.sse"], "FILE is an argument"),
    ],
)
def test_an_option_named_like_an_argument_says_so(args: list[str], said: str) -> None:
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2
    assert said in r.output and "Did you mean '--json'" not in r.output, r.output


def test_other_unknown_options_keep_clicks_suggestion() -> None:
    r = CliRunner().invoke(main, ["ask", "--jsn"])
    assert r.exit_code == 2 and "Did you mean '--json'?" in r.output


# -- links that still work after ask exits ----------------------------------------------


def test_ask_prints_corpus_files_not_the_stopped_backends_urls() -> None:
    r = cli("ask", "--demo", "--fault", "")  # two documents, one cited at two chunks
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert not re.search(r"/documents/[0-9a-f]{24}", out), out  # no dead link
    # Everything after the footnotes: a path may hold spaces, wherever the checkout is.
    links = [
        m[1]
        for line in out.splitlines()
        if (m := re.match(r"^ {2}[⁰-⁹¹²³ ]+ (\S.*\.md:\d+)$", line))
    ]
    # one line per cited place: remote-work-policy.md at two lines, the other once
    assert len(links) == 3 and len({link.rpartition(":")[0] for link in links}) == 2, out
    for link in links:
        path, _, line = link.rpartition(":")
        text = Path(path).read_text(encoding="utf-8").split("\n")
        assert Path(path).is_absolute() and text[int(line) - 1].strip(), link
    assert "streamcite serve-local" in " ".join(out.split())  # where the live pages are


def test_offline_links_point_at_each_chunks_first_line(tmp_path: Path) -> None:
    doc = tmp_path / "sub" / "policy.md"
    doc.parent.mkdir()
    doc.write_text(
        "---\ntitle: Policy\nauthor: HR\n---\n# Policy\n\nFirst paragraph here.\n\n"
        "## Days\n\nTwo days a week.\n",
        encoding="utf-8",
    )
    corpus = load_corpus(tmp_path)
    link = offline_links(corpus, tmp_path, "http://127.0.0.1:9/")
    lines = doc.read_text(encoding="utf-8").split("\n")
    for chunk in corpus.chunks:
        url = f"http://127.0.0.1:9/documents/{chunk.document_id}#chunk-{chunk.position}"
        path, _, number = link(url).rpartition(":")
        assert path == str(doc.resolve())
        assert lines[int(number) - 1] == chunk.text.split("\n")[0]
    assert link("https://example.com/doc#chunk-1") == "https://example.com/doc#chunk-1"
    unknown = "http://127.0.0.1:9/documents/" + "0" * 24
    assert link(unknown) == unknown
    assert os.sep in link(f"http://127.0.0.1:9/documents/{corpus.documents[0].id}")


# -- one quick start to citations, sources and grounding; one port ---------------------


async def test_the_quick_start_reaches_citations_sources_and_grounding(
    backend: LocalBackend,
) -> None:
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(ROOT / "examples" / "quickstart.py"),
        backend.root_url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    text = out.decode()
    assert "¹" in text and "error:" not in text, text
    citations, _, rest = text.partition("\ncitations:\n")[2].partition("sources:\n")
    sources, _, grounding = rest.partition("grounding:")
    assert "[1] Remote Work Policy" in citations
    assert "[1] Remote Work Policy:" in sources
    assert grounding.startswith(" support score "), text


def test_wikit_sources_needs_no_ids_against_the_embedded_backend() -> None:
    from streamcite.enrich import WikitSources
    from streamcite.enrich.wikit import LOCAL_APP_ID, LOCAL_ORGANIZATION_ID

    for url in (
        "http://127.0.0.1:8765",
        "http://localhost:1",
        "http://[::1]:5",
        "http://127.9.9.9",
    ):
        wikit = WikitSources(base_url=url)
        assert (wikit.app_id, wikit.organization_id) == (LOCAL_APP_ID, LOCAL_ORGANIZATION_ID)
    assert WikitSources("app", "org", base_url="http://127.0.0.1:1").app_id == "app"
    for url in ("https://apis.wikit.ai", "http://127.0.0.1.evil.example", "http://10.0.0.1"):
        with pytest.raises(ValueError, match="app_id and organization_id are required"):
            WikitSources(base_url=url)
    with pytest.raises(ValueError):
        WikitSources()  # Wikit itself: the ids are required


def test_docs_and_examples_name_one_port_for_the_backend() -> None:
    """8765 (serve-local's default) everywhere the docs start or ask the backend; the
    quick start said 8000."""
    pattern = re.compile(r"serve-local[^\n`]*--port (\d+)|(?:127\.0\.0\.1|localhost):(\d+)/v1")
    found = []
    for path in [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("examples/*.py")]:
        for m in pattern.finditer(path.read_text(encoding="utf-8")):
            found.append((path.name, m.group(1) or m.group(2)))
    assert found and {port for _, port in found} == {"8765"}, found
