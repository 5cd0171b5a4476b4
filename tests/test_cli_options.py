"""One name for one thing in every command (issue 12), the old spellings still working."""

from __future__ import annotations

import re
from typing import Any

import click
import pytest
from click.testing import CliRunner

from streamcite.apps import ask, bench, relay, serve_local
from streamcite.apps.options import GOOGLE_TOKEN_ENV, env_secret, env_value, option
from streamcite.cli import main

COMMANDS = ("ask", "bench", "parse", "relay", "serve-local", "sse")

RENAMED = {  # old spelling -> the one name now used everywhere
    "--wikit-key-env": "--wikit-api-key-env",
    "--system": "--system-prompt",
    "--faults": "--fault",
    "--allow-faults": "--allow-client-faults",
}


def _help(name: str) -> str:
    result = CliRunner().invoke(main, [name, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def _options(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", help_text))


def _params(command: click.Command, args: list[str]) -> dict[str, Any]:
    with command.make_context(command.name or "x", args) as ctx:
        return dict(ctx.params)


@pytest.mark.parametrize("name", COMMANDS)
def test_help_shows_no_old_spelling(name: str) -> None:
    shown = _options(_help(name))
    assert not shown & set(RENAMED), name


def test_the_same_options_in_every_command_that_has_them() -> None:
    shown = {name: _options(_help(name)) for name in COMMANDS}
    for new in RENAMED.values():
        assert any(new in opts for opts in shown.values()), new
    # What a client command sends to Wikit and Google is spelt alike in all three.
    shared = {"--wikit-app", "--wikit-org", "--wikit-base-url", "--wikit-api-key-env"}
    shared |= {"--grounding", "--google-config", "--google-endpoint", "--google-token-env"}
    for name in ("ask", "bench", "relay"):
        assert shared <= shown[name], (name, shared - shown[name])
    for name in ("ask", "relay", "serve-local", "bench"):
        assert "--verbose" in shown[name], name
    assert {"--fault", "--allow-client-faults"} <= shown["serve-local"]
    for name in ("relay", "serve-local"):  # the read deadlines of both servers
        assert {"--header-timeout", "--body-timeout"} <= shown[name], name
    assert "--allow-client-faults" in shown["relay"]


def test_ask_system_alias() -> None:
    new = _params(ask.command, ["q", "--system-prompt", "Be brief."])
    old = _params(ask.command, ["q", "--system", "Be brief."])
    assert new["system_prompt"] == old["system_prompt"] == "Be brief."


def test_ask_sends_the_system_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    async def fake_ask(opts: Any) -> int:
        seen.append(opts)
        return 0

    monkeypatch.setattr(ask, "_ask", fake_ask)
    result = CliRunner().invoke(ask.command, ["q", "--system", "Be brief."])
    assert result.exit_code == 0, result.output
    (opts,) = seen
    assert ask._request(opts, "m")["messages"][0] == {"role": "system", "content": "Be brief."}


def test_bench_wikit_key_env_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SC_TEST_WIKIT", "k-1")
    for spelling in ("--wikit-api-key-env", "--wikit-key-env"):
        params = _params(
            bench.command, ["--wikit-app", "a", "--wikit-org", "o", spelling, "SC_TEST_WIKIT"]
        )
        assert params["wikit_api_key_env"] == "SC_TEST_WIKIT"
        assert bench._enricher_options(params).wikit_api_key == "k-1"


def test_bench_verbose_and_the_old_log_level() -> None:
    assert _params(bench.command, ["-vv"])["verbose"] == 2
    assert _params(bench.command, ["--log-level", "ERROR"])["log_level"] == "ERROR"
    assert "--log-level" not in _options(_help("bench"))


def test_serve_local_faults_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    async def fake_serve(config: Any, host: str, port: int) -> None:
        seen.append(config)

    monkeypatch.setattr(serve_local, "_serve", fake_serve)
    for spelling in ("--fault", "--faults"):
        result = CliRunner().invoke(serve_local.command, [spelling, "token_delay=0.5"])
        assert result.exit_code == 0, result.output
    bad = CliRunner().invoke(serve_local.command, ["--faults", "nonsense=1"])
    assert bad.exit_code == 2 and "--fault" in bad.output
    assert [c.faults for c in seen] == ["token_delay=0.5", "token_delay=0.5"]


def test_relay_allow_faults_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []

    async def fake_serve(opts: dict[str, Any], upstream: str, secrets: Any) -> None:
        seen.append(opts)

    monkeypatch.setattr(relay, "_serve", fake_serve)
    for args in ([], ["--allow-client-faults"], ["--allow-faults"]):
        result = CliRunner().invoke(relay.command, ["--port", "0", *args])
        assert result.exit_code == 0, result.output
    assert [o["allow_client_faults"] for o in seen] == [False, True, True]


def test_google_token_env_default_and_old_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _params(ask.command, ["q"])["google_token_env"] == GOOGLE_TOKEN_ENV
    monkeypatch.delenv(GOOGLE_TOKEN_ENV, raising=False)
    monkeypatch.delenv("GOOGLE_ACCESS_TOKEN", raising=False)
    assert env_value(GOOGLE_TOKEN_ENV) is None
    monkeypatch.setenv("GOOGLE_ACCESS_TOKEN", "old")  # the name the docs used to show
    assert env_value(GOOGLE_TOKEN_ENV) == "old"
    monkeypatch.setenv(GOOGLE_TOKEN_ENV, "new")
    assert env_value(GOOGLE_TOKEN_ENV) == "new"
    opts = _params(ask.command, ["q"])
    assert env_value(opts["google_token_env"]) == "new"


def test_env_secret_names_the_option() -> None:
    assert env_secret(None, "--x") is None
    with pytest.raises(click.UsageError, match="--wikit-api-key-env: environment variable"):
        env_secret("SC_SURELY_UNSET_VARIABLE", "--wikit-api-key-env")


def test_a_hidden_alias_must_be_declared() -> None:
    with pytest.raises(ValueError, match="not declared"):

        @option("--new", hidden_aliases=("--old",))
        def f(new: str) -> None: ...


def _option_help(command: click.Command, flag: str) -> str:
    """The help, default and type of ``flag`` in ``command`` (from click, not the terminal)."""
    (param,) = [p for p in command.params if flag in p.opts]
    return f"{param.help} {param.default} {param.type}"


def test_read_deadline_flags_are_worded_alike_in_both_servers() -> None:
    for flag in ("--header-timeout", "--body-timeout"):
        assert _option_help(relay.command, flag) == _option_help(serve_local.command, flag)
    assert _params(relay.command, ["--header-timeout", "2.5"])["header_timeout"] == 2.5
    assert _params(serve_local.command, ["--body-timeout", "4"])["body_timeout"] == 4.0


def test_serve_local_passes_the_read_deadlines(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []

    async def fake_serve(config: Any, host: str, port: int) -> None:
        seen.append(config)

    monkeypatch.setattr(serve_local, "_serve", fake_serve)
    result = CliRunner().invoke(
        serve_local.command, ["--header-timeout", "3", "--body-timeout", "7"]
    )
    assert result.exit_code == 0, result.output
    assert (seen[0].header_timeout, seen[0].body_timeout) == (3.0, 7.0)
