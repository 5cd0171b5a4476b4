"""The relay's hot path compiled by mypyc behaves as its pure-Python source does.

The relay's modules in ``[tool.streamcite.compiled]`` (the producer, the live taps, the
clients' live frames, the memory log, the push sink, the send gate, the read deadline and the
event-stream reader, the aiohttp transport) are built with the core by
``scripts/build_compiled.py``; here the relay's tests and the pipeline's run in a child
process with that build first on the path. Tests that replace a function with
``monkeypatch`` are left out of that run (``tests/_compiled_plugin.py`` says why), and so
are the browser and Redis tests (run on the source).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._compiled_build import ROOT, build, builder, pytest_compiled, run

pytestmark = pytest.mark.timeout(1500)

RELAY_MODULES = {
    "streamcite/pipeline/deadline.py",
    "streamcite/pipeline/sse_reads.py",
    "streamcite/relay/clients.py",
    "streamcite/relay/live.py",
    "streamcite/relay/memlog.py",
    "streamcite/relay/producer.py",
    "streamcite/relay/pushed.py",
    "streamcite/relay/runs.py",
    "streamcite/relay/writer.py",
    "streamcite/transports/aiohttp.py",
}


def test_the_relays_hot_path_is_in_the_compiled_list() -> None:
    assert RELAY_MODULES - set(builder.compiled_modules()) == set()


@pytest.fixture(scope="module")
def tree() -> Path:
    return build()


def test_relay_tests_pass_compiled(tree: Path) -> None:
    tests = [str(p) for p in sorted((ROOT / "tests").glob("test_relay*.py"))]
    tests += [str(ROOT / "tests" / n) for n in ("test_pipeline.py", "test_read_deadline.py")]
    assert len(tests) >= 15
    probe = "import streamcite.relay.producer as m; assert m.__file__.endswith('.so'), m.__file__"
    res = run(tree, "-c", probe)
    assert res.returncode == 0, res.stderr[-3000:]
    pytest_compiled(tree, tests, "-m", "not browser and not redis")
