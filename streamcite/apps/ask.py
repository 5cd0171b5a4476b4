"""``streamcite ask "QUESTION"``: the whole pipeline, rendered live in the terminal.

With no ``--base-url`` the embedded local backend starts in-process on 127.0.0.1 and
answers from its corpus (offline, no key); Wikit quoted sources and the grounding
check then default to that backend's own endpoints. With ``--base-url`` any
OpenAI-compatible provider is used (``--provider`` names a vendor: its API, base URL and
key variable as its SDK reads them; with no ``--model`` the one model the server lists is
used). The question may come on stdin (``echo "…" | streamcite ask``). The terminal shows the tokens as they arrive
(footnotes as superscripts), a sources table (repeated documents grouped) and the
claims coloured by support; ``--json`` prints the event stream as JSON Lines instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from streamcite.apps._ask_render import JsonRenderer, Renderer, RenderSettings, RichRenderer
from streamcite.apps._enrichers import EnricherOptions, build_enrichers, default_facts
from streamcite.apps._providers import (
    KEY_ENVS,
    LOCAL_ROOT,
    PRESETS,
    is_loopback,
    key_from_env,
    presets_help,
)
from streamcite.apps._terminal import one_line
from streamcite.apps._usage import check_base_url, warn_unset_key
from streamcite.apps.options import (
    ArgumentHintCommand,
    api_key_env_option,
    api_option,
    base_url_option,
    corpus_options,
    env_value,
    fault_option,
    google_options,
    grounding_facts_option,
    grounding_option,
    log_level,
    marker_mode_option,
    model_option,
    option,
    system_prompt_option,
    verbose_option,
    wikit_options,
)
from streamcite.logs import configure_logging

__all__ = ["DEMO_QUESTION", "command"]

DEMO_QUESTION = (
    "How many days a week can I work from home, and which security rules apply outside the office?"
)
"""The ``--demo`` question: the built-in corpus answers it from two documents, one of them twice."""


@dataclass(slots=True)
class AskOptions:
    question: str
    base_url: str | None
    api: str
    api_key_env: str | None
    model: str | None
    system_prompt: str | None
    wikit_app: str | None
    wikit_org: str | None
    wikit_base_url: str | None
    wikit_api_key_env: str | None
    sources: bool
    grounding: str
    grounding_facts: str
    google_config: str | None
    google_endpoint: str | None
    google_token_env: str | None
    marker_mode: str
    as_json: bool
    corpus: Path | None
    strict: bool
    token_delay: float | None
    fault: str | None
    transport: str
    timeout: float
    no_reasoning: bool = False
    provider: str | None = None


@click.command("ask", cls=ArgumentHintCommand, epilog=presets_help())
@click.argument("question", required=False)
@option(
    "--demo",
    is_flag=True,
    help="Ask a built-in question of the built-in corpus, with sources and grounding.",
)
@option(
    "--provider",
    type=click.Choice(list(PRESETS)),
    default=None,
    help="A vendor's API, base URL and key variable, as its SDK reads them (listed "
    "below). --api, --base-url and --api-key-env override them.",
)
@base_url_option(
    "API root with its version (…/v1; Gemini …/v1beta, Cohere …/v2), or for "
    "--api anthropic, gemini, cohere the server's root as their SDKs take it. "
    "Default: the embedded local backend, started for this command."
)
@api_option()
@api_key_env_option(
    help="Environment variable holding the provider's API key (default by --api: "
    "OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_API_KEY or GEMINI_API_KEY, CO_API_KEY; "
    "none asked for on this machine: localhost, 127.0.0.1, ::1)."
)
@model_option(
    "Model name (default: streamcite-local for the local backend; with --base-url, "
    "the one model GET …/models lists)."
)
@system_prompt_option()
@wikit_options(
    key_default="WIKIT_API_KEY",
    key_help="Environment variable holding the Wikit API key (private apps).",
)
@option(
    "--sources/--no-sources",
    default=None,
    help="Fetch Wikit quoted sources (default: on with the local backend or when --wikit-app is given).",
)
@grounding_option("local", "Grounding check after the stream.")
@grounding_facts_option()
@google_options()
@marker_mode_option("superscript", "How footnotes [n] are displayed.")
@option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the events as JSON Lines instead of rendering them.",
)
@corpus_options("Folder of .md/.txt documents for the local backend.")
@option(
    "--token-delay",
    type=click.FloatRange(0, 5),
    default=None,
    help="Local backend: seconds between tokens (default 0.01 on a terminal, else 0).",
)
@fault_option(
    "Local backend fault spec sent as X-Streamcite-Fault (--demo: hallucinate=1; '' for none)."
)
@option(
    "--transport",
    type=click.Choice(["httpx", "aiohttp"]),
    default="aiohttp",
    show_default=True,
    help="HTTP client library for the chat stream.",
)
@option(
    "--timeout",
    type=click.FloatRange(1, 3600),
    default=120.0,
    show_default=True,
    help="Overall time limit in seconds.",
)
@option(
    "--no-reasoning",
    is_flag=True,
    help="Do not show a reasoning model's thinking (it is still in --json).",
)
@verbose_option()
def command(question: str | None, demo: bool, verbose: int, **options: Any) -> None:
    """Ask QUESTION and render the cited answer live: tokens, footnotes, sources, grounding.

    With no QUESTION (and no --demo), the question is read from stdin when it is not a
    terminal: echo "How many remote days?" | streamcite ask
    """
    configure_logging(log_level(verbose))
    ctx = click.get_current_context()
    _apply_preset(ctx, options)
    if question is None and not demo:
        question = _stdin_question()
    if demo:
        question = question or DEMO_QUESTION
        if options["base_url"] is None:
            if options["sources"] is None:
                options["sources"] = True
            if options["fault"] is None:
                # One number of the answer is changed on purpose, so the demo shows the
                # grounding check telling a supported claim from an unsupported one.
                options["fault"] = "hallucinate=1"
    if not question or not question.strip():
        raise click.UsageError(
            'give a QUESTION (or --demo), e.g. streamcite ask "How many remote days?"'
        )
    if ctx.get_parameter_source("grounding_facts") is click.core.ParameterSource.DEFAULT:
        # --api responses: its citations quote nothing, so the check reads the sources too
        want_sources = options["sources"]
        if want_sources is None:
            want_sources = options["base_url"] is None or options["wikit_app"] is not None
        options["grounding_facts"] = default_facts(options["api"], want_sources)
    opts = AskOptions(question=question.strip(), **options)
    _check_usage(opts)
    if opts.base_url is not None and opts.model is None:
        from streamcite.apps._models import discover_model

        opts.model = discover_model(opts.base_url, opts.api, key_from_env(_key_envs(opts)))
    try:
        code = asyncio.run(_ask(opts))
    except KeyboardInterrupt:  # pragma: no cover - interactive
        code = 130
    sys.exit(code)


MAX_STDIN_QUESTION = 64 * 1024
"""Characters of a question read from stdin, at most (more is a usage error)."""


def _stdin_question() -> str | None:
    """The question piped on stdin (None when stdin is a terminal or closed)."""
    stream = sys.stdin
    try:
        if stream is None or stream.isatty():
            return None
        text: str = stream.read(MAX_STDIN_QUESTION + 1)
    except (OSError, ValueError):  # no stdin at all
        return None
    if len(text) > MAX_STDIN_QUESTION:
        raise click.UsageError(f"the question on stdin is over {MAX_STDIN_QUESTION:,} characters")
    return text


def _apply_preset(ctx: click.Context, options: dict[str, Any]) -> None:
    """``--provider``: its API, base URL and key variables where the command line gave none."""
    name = options.get("provider")
    if name is None:
        return
    preset = PRESETS[name]
    explicit_api = ctx.get_parameter_source("api") is not click.core.ParameterSource.DEFAULT
    if not explicit_api:
        options["api"] = preset.api
    if options["base_url"] is None:
        if name == "local" and explicit_api:
            from streamcite.pipeline.apis import api_root

            options["base_url"] = api_root(LOCAL_ROOT, options["api"])
        else:
            options["base_url"] = preset.base_url


def _check_usage(opts: AskOptions) -> None:
    """A usage error for options that cannot work together."""
    check_base_url(opts.base_url)
    # On this machine (serve-local, Ollama, vLLM) no key is expected, unless one is named.
    if opts.base_url is not None and (opts.api_key_env or not is_loopback(opts.base_url)):
        names = _key_envs(opts)
        if names and key_from_env(names) is None:
            warn_unset_key(" or ".join(names))
    if opts.base_url is not None and opts.sources and not (opts.wikit_app and opts.wikit_org):
        raise click.UsageError("--sources with --base-url needs --wikit-app and --wikit-org")
    if opts.wikit_app and opts.base_url is not None and not opts.wikit_org:
        raise click.UsageError("--wikit-app needs --wikit-org")
    if (
        opts.grounding_facts != "citations"
        and opts.grounding != "none"
        and not _wants_sources(opts)
    ):
        raise click.UsageError(f"--grounding-facts {opts.grounding_facts} needs Wikit sources")


def _key_envs(opts: AskOptions) -> tuple[str, ...]:
    """``--api-key-env``, else the variables of ``--provider``, else those the vendor's
    SDK reads for ``--api`` (in its order)."""
    if opts.api_key_env:
        return (opts.api_key_env,)
    if opts.provider is not None and PRESETS[opts.provider].api == opts.api:
        return PRESETS[opts.provider].key_envs
    return KEY_ENVS[opts.api]


def _api_key(opts: AskOptions) -> str | None:
    if opts.api_key_env:
        return env_value(opts.api_key_env)
    return key_from_env(_key_envs(opts))


def _wants_sources(opts: AskOptions) -> bool:
    if opts.sources is not None:
        return opts.sources
    return opts.base_url is None or opts.wikit_app is not None


@dataclass(slots=True)
class _Upstream:
    """Where the question goes: the provider, or the local backend started for it."""

    base_url: str
    model: str | None
    api_key: str | None = None
    local_root: str | None = None
    link: Callable[[str], str] | None = None
    """The local backend's page links as corpus files (they outlive the command)."""


async def _start_local(stack: contextlib.AsyncExitStack, opts: AskOptions) -> _Upstream:
    """Start the embedded backend for the duration of ``stack``."""
    from streamcite.apps._local_links import offline_links
    from streamcite.local.corpus import CorpusError
    from streamcite.local.server import MODEL, BackendConfig, LocalBackend
    from streamcite.pipeline.apis import api_root

    delay = opts.token_delay
    if delay is None:
        delay = 0.01 if (sys.stdout.isatty() and not opts.as_json) else 0.0
    config = BackendConfig(
        corpus_dir=opts.corpus,
        token_delay=delay,
        wikit_org_id=opts.wikit_org,
        corpus_strict=opts.strict,
    )
    try:
        backend = await stack.enter_async_context(LocalBackend(config))
    except CorpusError as exc:
        raise click.ClickException(one_line(str(exc))) from None
    for warning in backend.corpus.skipped:
        click.echo(f"streamcite: warning: {warning}", err=True)
    base_url = api_root(backend.root_url, opts.api)  # the backend's endpoint for --api
    link = offline_links(backend.corpus, opts.corpus, backend.root_url)
    return _Upstream(base_url, opts.model or MODEL, local_root=backend.root_url, link=link)


def _request(opts: AskOptions, model: str | None) -> dict[str, Any]:
    """The request body in the API's own shape (built as a chat request, then rewritten)."""
    from streamcite.pipeline.bodies import chat_request_as

    messages: list[dict[str, str]] = []
    if opts.system_prompt:
        messages.append({"role": "system", "content": opts.system_prompt})
    messages.append({"role": "user", "content": opts.question})
    chat = {
        "model": model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    return chat_request_as(opts.api, chat)


def _renderer(opts: AskOptions, upstream: _Upstream) -> Renderer:
    if opts.as_json:
        return JsonRenderer(sys.stdout)
    settings = RenderSettings(
        question=opts.question,
        base_url=opts.base_url,
        api=opts.api,
        local_root=upstream.local_root,
        fault=opts.fault,
        marker_mode=opts.marker_mode,
        show_reasoning=not opts.no_reasoning,
        link=upstream.link,
        live_claims=opts.grounding != "none",
    )
    return RichRenderer(settings)


async def _ask(opts: AskOptions) -> int:
    from streamcite.pipeline import Timeouts, stream_chat
    from streamcite.pipeline.apis import check_api

    async with contextlib.AsyncExitStack() as stack:
        if opts.base_url is None:
            upstream = await _start_local(stack, opts)
        else:
            upstream = _Upstream(opts.base_url, opts.model, api_key=_api_key(opts))
        renderer = _renderer(opts, upstream)
        renderer.start()
        headers = {"X-Streamcite-Fault": opts.fault} if opts.fault else None
        stream = stream_chat(
            _request(opts, upstream.model),
            base_url=upstream.base_url,
            api=check_api(opts.api),
            api_key=upstream.api_key,
            headers=headers,
            transport=opts.transport,
            timeouts=Timeouts(connect=10.0, first_token=60.0, idle=30.0, total=opts.timeout),
            marker_mode="keep" if opts.as_json else opts.marker_mode,
            after=_enrichers(opts, upstream.local_root),
        )
        try:
            async with stream:
                async for event in stream:
                    renderer.event(event)
        except asyncio.CancelledError:
            renderer.cancelled(stream.answer)  # Ctrl-C: the output still ends cleanly
            raise
        answer = stream.answer
        renderer.finish(answer)
        return 0 if answer.complete and not answer.errors else 1
    return 1  # pragma: no cover - the exit stack does not swallow exceptions


def _enrichers(opts: AskOptions, local_root: str | None) -> list[Any]:
    """Wikit sources and the grounding check, pointed at the local backend when local."""
    return build_enrichers(
        EnricherOptions(
            sources=_wants_sources(opts),
            wikit_app=opts.wikit_app,
            wikit_org=opts.wikit_org,
            wikit_api_key=env_value(opts.wikit_api_key_env),
            wikit_base_url=opts.wikit_base_url,
            grounding=opts.grounding,
            grounding_facts=opts.grounding_facts,
            google_config=opts.google_config,
            google_endpoint=opts.google_endpoint,
            google_token=env_value(opts.google_token_env),
            claim_level_scores=True,
        ),
        local_root,
    )
