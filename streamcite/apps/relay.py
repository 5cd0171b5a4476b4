"""``streamcite relay``: the WebSocket/SSE relay and its chat page.

With ``--upstream local`` (the default) the embedded backend runs in-process and the
relay streams from it, with Wikit-style sources and the offline grounding check
served by that same backend. With ``--base-url`` it relays a real OpenAI-compatible
provider; the key is read from an environment variable, never from the command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import click

from streamcite.apps._enrichers import EnricherOptions, build_enrichers, default_facts
from streamcite.apps._terminal import one_line
from streamcite.apps._usage import bind_error, check_base_url
from streamcite.apps.options import (
    allow_client_faults_option,
    api_key_env_option,
    api_option,
    base_url_option,
    corpus_options,
    env_secret,
    google_options,
    grounding_option,
    host_port_options,
    log_level,
    model_option,
    option,
    origin_options,
    read_deadline_options,
    system_prompt_option,
    verbose_option,
    wikit_options,
)
from streamcite.logs import configure_logging

if TYPE_CHECKING:
    from streamcite.relay.redis.settings import LocalDelivery


@click.command("relay")
@host_port_options(8770)
@option(
    "--upstream",
    type=click.Choice(["local", "remote"]),
    default=None,
    help="local: run the embedded backend in-process (default unless --base-url is given).",
)
@base_url_option()
@api_option()
@api_key_env_option(help="Environment variable holding the API key.")
@model_option("Model to ask (default: the local backend's).")
@system_prompt_option()
@corpus_options("Local upstream: folder of .md/.txt documents (default: the built-in corpus).")
@option(
    "--token-delay",
    type=click.FloatRange(0, 10),
    default=0.03,
    show_default=True,
    help="Local upstream: seconds between tokens.",
)
@wikit_options(
    app_help="Wikit Semantics app id (sources).",
    base_url_help="Wikit API root (default: the local backend with a local upstream).",
)
@option(
    "--sources/--no-sources",
    default=True,
    show_default=True,
    help="Local upstream: fetch quoted sources from the embedded backend's Wikit endpoint.",
)
@grounding_option("local")
@google_options(token_default=None)
@option(
    "--token",
    "tokens",
    multiple=True,
    envvar="STREAMCITE_RELAY_TOKEN",
    help="Require a token from clients (repeatable: each token is its own principal, whose "
    "streams others cannot resume or cancel; STREAMCITE_RELAY_TOKEN: whitespace-separated).",
)
@origin_options()
@read_deadline_options()
@click.option(
    "--redis-url",
    default=None,
    envvar="STREAMCITE_REDIS_URL",
    metavar="URL",
    help="Keep stream logs in Redis Streams (several relay instances).",
)
@click.option(
    "--redis-local-delivery",
    type=click.Choice(["after_write", "immediate"]),
    default="after_write",
    show_default=True,
    help="When this instance's own clients see an event: after Redis stored it (exact "
    "resume after a crash), or at once (lower latency; a crash can lose events Redis never got).",
)
@click.option("--max-streams", type=click.IntRange(1), default=2000, show_default=True)
@click.option(
    "--max-streams-per-connection",
    type=click.IntRange(1),
    default=8,
    show_default=True,
    help="Streams one WebSocket may carry at once.",
)
@click.option(
    "--max-streams-per-client",
    type=click.IntRange(1),
    default=16,
    show_default=True,
    help="Upstream streams one client (token at one address; the address without tokens) "
    "may run at once, over all connections; past it: quota_exceeded (HTTP 429).",
)
@click.option(
    "--shutdown-grace", type=click.FloatRange(0), default=10.0, show_default=True, metavar="S"
)
@click.option(
    "--resume-grace",
    type=click.FloatRange(0),
    default=30.0,
    show_default=True,
    metavar="S",
    help="A stream no client of this instance reads is cancelled ('abandoned') after S seconds.",
)
@allow_client_faults_option(
    "Forward the clients' 'faults' option to the upstream (demos of the embedded backend)."
)
@click.option(
    "--loop",
    type=click.Choice(["auto", "asyncio", "uvloop"]),
    default="auto",
    show_default=True,
    help="Event loop: auto is uvloop when installed (pip install 'streamcite[uvloop]'), "
    "else asyncio's.",
)
@verbose_option()
def command(**opts: Any) -> None:
    """Relay questions from browsers (WebSocket or SSE) to the upstream and stream the
    cited answers back, with resume, cancel and backpressure. Serves the chat page at /."""
    configure_logging(log_level(opts["verbose"]))
    upstream = opts["upstream"] or ("remote" if opts["base_url"] else "local")
    if upstream == "remote" and not opts["base_url"]:
        raise click.UsageError("--upstream remote needs --base-url")
    if upstream == "local" and opts["base_url"]:
        raise click.UsageError("--base-url cannot be combined with --upstream local")
    check_base_url(opts["base_url"])
    from streamcite.relay.guard import parse_host_pattern

    for host in opts["allowed_hosts"]:
        try:
            parse_host_pattern(host)
        except ValueError as exc:
            raise click.UsageError(f"--allowed-host: {exc}") from None
    if opts["grounding"] == "google" and upstream == "remote" and not opts["google_config"]:
        raise click.UsageError("--grounding google needs --google-config with a remote upstream")
    secrets = {
        "api_key": env_secret(opts["api_key_env"], "--api-key-env"),
        "wikit_key": env_secret(opts["wikit_api_key_env"], "--wikit-api-key-env"),
        "google_token": env_secret(opts["google_token_env"], "--google-token-env"),
    }
    from streamcite.local.corpus import CorpusError
    from streamcite.relay.eventloop import resolve
    from streamcite.relay.eventloop import run as run_loop

    try:
        loop = resolve(opts["loop"])
    except RuntimeError as exc:
        raise click.UsageError(f"--loop: {exc}") from None
    opts["loop"] = loop
    try:
        with contextlib.suppress(KeyboardInterrupt):  # pragma: no cover - interactive
            run_loop(_serve(opts, upstream, secrets), loop)
    except CorpusError as exc:  # --strict and a file that is not UTF-8, or an empty folder
        raise click.ClickException(one_line(str(exc))) from None
    except OSError as exc:
        raise bind_error(exc, opts["host"], opts["port"]) from None


@contextlib.asynccontextmanager
async def _local_backend(opts: dict[str, Any]) -> AsyncIterator[Any]:
    from streamcite.local.server import BackendConfig, LocalBackend

    config = BackendConfig(
        corpus_dir=opts["corpus"], corpus_strict=opts["strict"], token_delay=opts["token_delay"]
    )
    async with LocalBackend(config, host="127.0.0.1", port=0) as backend:
        yield backend


def _enrichers(opts: dict[str, Any], backend: Any, secrets: dict[str, str | None]) -> list[Any]:
    sources = bool(opts["wikit_app"]) or (backend is not None and opts["sources"])
    return build_enrichers(
        EnricherOptions(
            sources=sources,
            wikit_app=opts["wikit_app"],
            wikit_org=opts["wikit_org"],
            wikit_api_key=secrets["wikit_key"],
            wikit_base_url=opts["wikit_base_url"],
            grounding=opts["grounding"],
            grounding_facts=default_facts(opts.get("api", "chat"), sources),
            google_config=opts["google_config"],
            google_endpoint=opts["google_endpoint"],
            google_token=secrets["google_token"],
        ),
        backend.root_url if backend is not None else None,
    )


async def _make_log(
    url: str | None, instance_id: str, local_delivery: LocalDelivery = "after_write"
) -> Any:
    if not url:
        return None
    try:
        from streamcite.relay.redis import RedisLogSettings, RedisStreamLog
    except ImportError as exc:
        raise click.ClickException(
            f"--redis-url needs the redis package ({exc}); install it with: pip install 'streamcite[redis]'"
        ) from None
    from streamcite.core.errors import StreamciteError

    try:
        settings = RedisLogSettings(
            url,
            instance_id=instance_id,
            local_delivery=local_delivery,
        )
        log = RedisStreamLog(settings)
    except ValueError as exc:
        raise click.ClickException(f"--redis-url: {exc}") from None
    try:
        await log.connect()
    except StreamciteError as exc:
        with contextlib.suppress(Exception):
            await log.aclose()
        # The message names Redis as host:port/db, never the URL's password.
        raise click.ClickException(
            f"cannot start: the Redis stream log is unavailable ({exc.code}): {exc.message}"
        ) from None
    return log


async def _serve(opts: dict[str, Any], upstream: str, secrets: dict[str, str | None]) -> None:
    from streamcite.pipeline.apis import api_root, check_api
    from streamcite.relay.server import RelayConfig, RelayServer

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        backend = (
            await stack.enter_async_context(_local_backend(opts)) if upstream == "local" else None
        )
        api = opts.get("api", "chat")
        base_url = api_root(backend.root_url, api) if backend is not None else opts["base_url"]
        tokens = [t for t in opts["tokens"] if t]
        for warning in backend.corpus.skipped if backend is not None else []:
            print(f"streamcite: warning: {one_line(warning)}", file=sys.stderr, flush=True)
        config = RelayConfig(
            base_url=base_url,
            api=check_api(api),
            api_key=secrets["api_key"],
            model=opts["model"] or "streamcite-local",
            system_prompt=opts["system_prompt"],
            enrichers=_enrichers(opts, backend, secrets),
            token=tokens[0] if tokens else None,
            tokens=tuple(tokens[1:]),
            allowed_hosts=tuple(opts["allowed_hosts"]),
            allowed_origins=tuple(opts["allowed_origins"]),
            max_streams_total=opts["max_streams"],
            max_streams_per_connection=opts["max_streams_per_connection"],
            max_streams_per_client=opts["max_streams_per_client"],
            shutdown_grace=opts["shutdown_grace"],
            resume_grace=opts.get("resume_grace", 30.0),
            allow_client_faults=opts["allow_client_faults"] and backend is not None,
            header_timeout=opts.get("header_timeout", 10.0),
            body_timeout=opts.get("body_timeout", 30.0),
            tune_gc=True,  # this process is the relay's
        )
        log = await _make_log(
            opts["redis_url"], config.instance_id, opts.get("redis_local_delivery", "after_write")
        )
        if log is not None:
            stack.push_async_callback(log.aclose)
        server = await stack.enter_async_context(
            RelayServer(config, host=opts["host"], port=opts["port"], log=log)
        )
        page = server.url + "/"
        if opts["tokens"]:
            page += "?token=…"
        print(f"streamcite relay on {server.url}", flush=True)
        upstream_desc = "embedded local backend" if backend is not None else base_url
        if api != "chat":
            upstream_desc += f" ({api} API)"
        print(
            f"  chat page: {page}  ·  WebSocket: {server.ws_url}  ·  upstream: {upstream_desc}"
            f"  ·  log: {'redis' if log is not None else 'memory'}  ·  loop: {opts['loop']}"
            "  ·  Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        await stop.wait()
        print("streamcite relay: shutting down…", file=sys.stderr, flush=True)
