"""The reference pages name everything they are the reference of: every command and option
(docs/cli.md), every path both servers route (docs/http.md), every field and parameter a
user can set (docs/configuration.md). A new option without its line fails here."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path

import click
import pytest

from streamcite.cli import main
from streamcite.core.bounds import StreamBounds
from streamcite.local.server import BackendConfig, create_app
from streamcite.pipeline.stream import ChatStream
from streamcite.pipeline.timeouts import Timeouts
from streamcite.relay.config import RelayConfig
from streamcite.relay.server import RelayServer

DOCS = Path(__file__).resolve().parent.parent / "docs"


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(main)
    found = []
    for name in main.list_commands(ctx):
        cmd = main.get_command(ctx, name)
        assert cmd is not None
        found.append((name, cmd))
    return found


@pytest.mark.parametrize("name,cmd", commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_cli_md_has_every_command_and_option(name: str, cmd: click.Command) -> None:
    text = page("cli.md")
    m = re.search(rf"^## `streamcite {re.escape(name)}`\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"docs/cli.md has no section for streamcite {name}"
    missing = [
        opt
        for p in cmd.params
        if isinstance(p, click.Option)
        for opt in p.opts
        if f"`{opt}`" not in m.group(1)
    ]
    assert not missing, f"streamcite {name}: options not in docs/cli.md: {missing}"


def _documented_paths(text: str) -> set[str]:
    return set(re.findall(r"`(?:GET|POST|PUT|DELETE) (/[^`\s]*)`", text))


def _canonical(path: str) -> str:
    return re.sub(r"\{(\w+)(:[^}]*)?\}", r"{\1}", path)


def _section(text: str, title: str) -> str:
    m = re.search(rf"^## `{re.escape(title)}`\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, title
    return m.group(1)


def test_http_md_has_every_path_serve_local_routes() -> None:
    documented = {
        _canonical(p)
        for p in _documented_paths(_section(page("http.md"), "streamcite serve-local"))
    }
    routed = {
        _canonical(r.resource.canonical)
        for r in create_app(BackendConfig()).router.routes()
        if r.resource is not None
    }
    versions = {"/v1/", "/v1alpha/", "/v1beta/"}
    routed = {
        next(
            (p.replace(v, "/{version}/", 1) for v in versions if p.startswith(v) and ":check" in p),
            p,
        )
        for p in routed
    }
    assert routed <= documented, f"not in docs/http.md: {sorted(routed - documented)}"


async def test_http_md_has_every_path_the_relay_routes() -> None:
    documented = {
        _canonical(p) for p in _documented_paths(_section(page("http.md"), "streamcite relay"))
    }
    server = RelayServer(RelayConfig(base_url="http://127.0.0.1:9/v1"))
    routed = {
        _canonical(r.resource.canonical)
        for r in server.relay.app.router.routes()
        if r.resource is not None
    }
    routed = {"/static/{filename}" if p.startswith("/static") else p for p in routed}
    assert routed <= documented, f"not in docs/http.md: {sorted(routed - documented)}"


def test_configuration_md_names_every_setting() -> None:
    text = page("configuration.md") + page("core.md")
    params = [p for p in inspect.signature(ChatStream.__init__).parameters if p != "self"]
    fields = [
        f.name
        for cls in (Timeouts, StreamBounds, BackendConfig, RelayConfig)
        for f in dataclasses.fields(cls)
    ]
    missing = [name for name in [*params, *fields] if f"`{name}`" not in text]
    assert not missing, f"not in docs/configuration.md: {missing}"
