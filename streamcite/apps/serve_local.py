"""``streamcite serve-local``: run the embedded local backend until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path

import click

from streamcite.apps._terminal import one_line
from streamcite.apps._usage import bind_error
from streamcite.apps.options import (
    allow_client_faults_option,
    corpus_options,
    env_secret,
    fault_option,
    host_port_options,
    log_level,
    origin_options,
    read_deadline_options,
    verbose_option,
    wikit_options,
)
from streamcite.local.corpus import CorpusError
from streamcite.local.faults import FaultSpec, FaultSpecError
from streamcite.local.hostcheck import HostCheck
from streamcite.local.server import WILDCARD_HOSTS, BackendConfig, LocalBackend
from streamcite.logs import configure_logging


@click.command("serve-local")
@host_port_options(8765)
@corpus_options("Folder of .md/.txt documents to answer from (default: the built-in demo corpus).")
@click.option(
    "--token-delay",
    type=click.FloatRange(0, 60),
    default=0.0,
    show_default=True,
    help="Seconds between tokens.",
)
@click.option(
    "--first-token-delay",
    type=click.FloatRange(0, 600),
    default=0.0,
    show_default=True,
    help="Seconds before the first token.",
)
@wikit_options(
    app=False,
    base_url=False,
    org_help="Require this X-Wikit-Organization-Id on the Wikit endpoints.",
    key_help="Require the API key held in environment variable NAME on the Wikit endpoints.",
)
@fault_option("Server-wide fault spec, e.g. 'first_token_delay=0.5;drop_after=3'.")
@click.option(
    "--store-ttl",
    type=click.FloatRange(1, None),
    default=600.0,
    show_default=True,
    help="Seconds answers stay available to the Wikit endpoints.",
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(1024, None),
    default=1024 * 1024,
    show_default=True,
    help="Largest request body; HTTP 413 beyond.",
)
@click.option(
    "--max-question-chars",
    type=click.IntRange(1, None),
    default=16 * 1024,
    show_default=True,
    help="Longest question answered; HTTP 413 beyond.",
)
@allow_client_faults_option(
    "Take fault injection from requests (X-Streamcite-Fault, ?fault=); off by default."
)
@click.option(
    "--max-check-body-bytes",
    type=click.IntRange(1024, None),
    default=8 * 1024 * 1024,
    show_default=True,
    help="Largest grounding :check request body; HTTP 413 beyond.",
)
@origin_options()
@read_deadline_options()
@click.option(
    "--public-url",
    default=None,
    metavar="URL",
    help="Root of the document URLs in citations and sources, e.g. https://kb.example "
    "(default: the address the client reached; never the request's Host header).",
)
@verbose_option()
def command(
    host: str,
    port: int,
    corpus: Path | None,
    strict: bool,
    token_delay: float,
    first_token_delay: float,
    wikit_org: str | None,
    wikit_api_key_env: str | None,
    fault: str | None,
    store_ttl: float,
    max_body_bytes: int,
    max_question_chars: int,
    allow_client_faults: bool,
    max_check_body_bytes: int,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    header_timeout: float,
    body_timeout: float,
    public_url: str | None,
    verbose: int,
) -> None:
    """Serve chat completions with citations, Wikit quoted sources and Google-style
    grounding checks from a local corpus, offline, on HOST:PORT."""
    configure_logging(log_level(verbose))
    api_key = env_secret(wikit_api_key_env, "--wikit-api-key-env")
    try:
        FaultSpec.parse(fault)
    except FaultSpecError as exc:
        raise click.BadParameter(str(exc), param_hint="--fault") from None
    try:
        HostCheck.from_config(allowed_hosts, ())
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--allowed-host") from None
    try:
        HostCheck.from_config((), allowed_origins)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--allowed-origin") from None
    if public_url is not None and not _is_http_url(public_url):
        raise click.BadParameter(
            f"expected http(s)://host[:port][/path], got {public_url!r}", param_hint="--public-url"
        )
    config = BackendConfig(
        corpus_dir=corpus,
        corpus_strict=strict,
        first_token_delay=first_token_delay,
        token_delay=token_delay,
        wikit_org_id=wikit_org,
        wikit_api_key=api_key,
        store_ttl=store_ttl,
        faults=fault,
        max_body_bytes=max_body_bytes,
        max_question_chars=max_question_chars,
        allow_client_faults=allow_client_faults,
        max_check_body_bytes=max_check_body_bytes,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        public_url=public_url.rstrip("/") if public_url else None,
        header_timeout=header_timeout,
        body_timeout=body_timeout,
    )
    try:
        asyncio.run(_serve(config, host, port))
    except CorpusError as exc:
        raise click.ClickException(one_line(str(exc))) from None
    except OSError as exc:
        raise bind_error(exc, host, port) from None
    except KeyboardInterrupt:  # pragma: no cover - interactive
        pass


async def _serve(config: BackendConfig, host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with LocalBackend(config, host=host, port=port) as backend:
        corpus = backend.corpus
        for warning in corpus.skipped:
            print(f"streamcite: warning: {one_line(warning)}", file=sys.stderr, flush=True)
        for note in _notes(config, host):
            print(f"streamcite: note: {note}", file=sys.stderr, flush=True)
        # One line on stdout with the URL, so scripts (and tests) can find a port-0 server.
        print(f"streamcite local backend on {backend.root_url}", flush=True)
        print(
            f"  OpenAI base URL: {backend.base_url}  ·  {len(corpus.documents)} documents, "
            f"{len(corpus.chunks)} chunks  ·  Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        await stop.wait()


def _is_http_url(url: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url.strip())
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and not parts.query
        and not parts.fragment
        and not parts.username
    )


def _notes(config: BackendConfig, host: str) -> list[str]:
    """What the operator should know about the access settings in use."""
    notes = []
    if host.strip() in WILDCARD_HOSTS and not config.allowed_hosts:
        notes.append(
            "listening on every interface: requests must name this machine by the address "
            "they reach (or localhost); add the names clients use with --allowed-host"
        )
    if "*" in config.allowed_hosts:
        notes.append("--allowed-host '*': any Host is served (no DNS rebinding protection)")
    if config.allow_client_faults:
        notes.append("clients may inject faults (--allow-client-faults)")
    return notes
