"""The command-line options several commands share, declared once.

One name for one thing in every command (``--wikit-api-key-env``, ``--system-prompt``,
``--fault``, ``--allow-client-faults``, ``-v``…). A name a command used before is kept as
a *hidden alias*: it still works, ``--help`` shows only the current name. The same
holds for environment variables read by default (:data:`LEGACY_ENV`).

Each factory returns a decorator; defaults and help that differ by command (a server
*requires* the Wikit key, a client *sends* it) are arguments, the names are not.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

__all__ = [
    "API_CHOICES",
    "API_KEY_ENVS",
    "GOOGLE_TOKEN_ENV",
    "LEGACY_ENV",
    "AliasedOption",
    "ArgumentHintCommand",
    "api_key_env_option",
    "api_option",
    "apply",
    "base_url_option",
    "corpus_options",
    "env_secret",
    "env_value",
    "fault_option",
    "google_options",
    "grounding_facts_option",
    "grounding_option",
    "host_port_options",
    "log_level",
    "marker_mode_option",
    "model_option",
    "option",
    "origin_options",
    "system_prompt_option",
    "verbose_option",
    "wikit_options",
]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

GOOGLE_TOKEN_ENV = "GOOGLE_OAUTH_ACCESS_TOKEN"
"""Default variable of ``--google-token-env`` (the name Terraform's Google provider uses)."""

LEGACY_ENV: dict[str, tuple[str, ...]] = {GOOGLE_TOKEN_ENV: ("GOOGLE_ACCESS_TOKEN",)}
"""Variable -> older names read when it is unset (the docs once said GOOGLE_ACCESS_TOKEN)."""


class AliasedOption(click.Option):
    """A click option whose ``hidden_aliases`` work but are left out of ``--help``."""

    def __init__(
        self, param_decls: Sequence[str], *, hidden_aliases: Sequence[str] = (), **attrs: Any
    ) -> None:
        super().__init__(param_decls, **attrs)
        self.hidden_aliases = frozenset(hidden_aliases)
        unknown = self.hidden_aliases - set(self.opts) - set(self.secondary_opts)
        if unknown:
            raise ValueError(f"hidden aliases not declared: {sorted(unknown)}")

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        opts, secondary = self.opts, self.secondary_opts
        self.opts = [o for o in opts if o not in self.hidden_aliases]
        self.secondary_opts = [o for o in secondary if o not in self.hidden_aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts, self.secondary_opts = opts, secondary


_ARGUMENT_SPELLINGS: dict[str, tuple[str, ...]] = {
    "question": ("question", "query", "prompt", "q", "message", "text", "ask"),
    "file": ("file", "input", "in", "path", "i", "f"),
}
"""An argument -> the option names a newcomer types for it (``ask --question``)."""
_ARGUMENT_EXAMPLES = {"question": '"How many remote days?"', "file": "recorded.sse"}


class ArgumentHintCommand(click.Command):
    """A command whose unknown option, when it names one of its arguments
    (``ask --question …``), gets that answer instead of click's nearest spelling
    ("Did you mean '--json'?")."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            typed = exc.option_name.split("=", 1)[0].lstrip("-").lower()
            for param in self.params:
                if not isinstance(param, click.Argument) or param.name is None:
                    continue
                spellings = _ARGUMENT_SPELLINGS.get(param.name, (param.name,))
                if difflib.get_close_matches(typed, spellings, n=1, cutoff=0.75):
                    meta = param.make_metavar(ctx).strip("[]. ")
                    example = _ARGUMENT_EXAMPLES.get(param.name, meta)
                    raise click.NoSuchOption(
                        exc.option_name,
                        message=(
                            f"No such option '{exc.option_name}'. {meta} is an argument, "
                            f"not an option: {ctx.command_path} {example}"
                        ),
                        ctx=ctx,
                    ) from None
            raise


def option(*param_decls: str, hidden_aliases: Sequence[str] = (), **attrs: Any) -> Decorator:
    """``click.option`` with ``hidden_aliases`` (old spellings that still work)."""
    if not hidden_aliases:
        return click.option(*param_decls, **attrs)
    return click.option(*param_decls, cls=AliasedOption, hidden_aliases=hidden_aliases, **attrs)


def apply(*decorators: Decorator) -> Decorator:
    """One decorator applying ``decorators`` so ``--help`` lists them in this order."""

    def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
        for decorator in reversed(decorators):
            f = decorator(f)
        return f

    return wrap


def env_value(name: str | None) -> str | None:
    """The non-empty value of environment variable ``name`` (or of its older names)."""
    if not name:
        return None
    for candidate in (name, *LEGACY_ENV.get(name, ())):
        value = os.environ.get(candidate)
        if value:
            return value
    return None


def env_secret(name: str | None, what: str) -> str | None:
    """Like :func:`env_value`, but a named variable that is unset is a usage error."""
    if not name:
        return None
    value = env_value(name)
    if value is None:
        raise click.UsageError(f"{what}: environment variable {name} is not set or empty")
    return value


def log_level(verbose: int, explicit: str | None = None) -> str:
    """The log level ``-v`` asks for (``WARNING``, ``INFO``, ``DEBUG``), unless ``explicit``."""
    return explicit or ("WARNING", "INFO", "DEBUG")[min(verbose, 2)]


# --------------------------------------------------------------------------- upstream

API_CHOICES = ("chat", "responses", "anthropic", "gemini", "cohere")
"""``--api``: :data:`streamcite.pipeline.apis.APIS`, spelt here so that ``--help`` does not
import the pipeline."""

API_KEY_ENVS = {
    "chat": "OPENAI_API_KEY",
    "responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "cohere": "CO_API_KEY",
}
"""The variable each vendor's SDK reads its key from (``ask``'s default ``--api-key-env``)."""


def api_option(
    help: str = "Provider API spoken upstream: the request body, path, auth header and "
    "stream dialect of OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, "
    "Gemini or Cohere v2. With the embedded backend: its endpoint for that API.",
) -> Decorator:
    return option(
        "--api",
        type=click.Choice(API_CHOICES),
        default="chat",
        show_default=True,
        help=help,
    )


def base_url_option(
    help: str = (
        "API root with its version (…/v1; Gemini …/v1beta, Cohere …/v2), or for "
        "--api anthropic, gemini, cohere the server's root as their SDKs take it."
    ),
) -> Decorator:
    return option("--base-url", default=None, metavar="URL", help=help)


def api_key_env_option(
    default: str | None = None,
    help: str = "Environment variable holding the provider's API key.",
) -> Decorator:
    return option(
        "--api-key-env",
        default=default,
        show_default=default is not None,
        metavar="NAME",
        help=help,
    )


def model_option(help: str = "Model name.") -> Decorator:
    return option("-m", "--model", "model", default=None, metavar="NAME", help=help)


def system_prompt_option() -> Decorator:
    return option(
        "--system-prompt",
        "--system",
        "system_prompt",
        hidden_aliases=("--system",),
        default=None,
        metavar="TEXT",
        help="System message sent before the question.",
    )


def marker_mode_option(default: str, help: str) -> Decorator:
    return option(
        "--marker-mode",
        type=click.Choice(["keep", "strip", "superscript"]),
        default=default,
        show_default=True,
        help=help,
    )


def fault_option(help: str) -> Decorator:
    """``--fault SPEC`` (``--faults``: its old spelling in ``serve-local``)."""
    return option(
        "--fault",
        "--faults",
        "fault",
        hidden_aliases=("--faults",),
        default=None,
        metavar="SPEC",
        help=help,
    )


def allow_client_faults_option(help: str) -> Decorator:
    """``--allow-client-faults`` (``--allow-faults``: its old spelling in ``relay``)."""
    return option(
        "--allow-client-faults",
        "--allow-faults",
        "allow_client_faults",
        hidden_aliases=("--allow-faults",),
        is_flag=True,
        help=help,
    )


def verbose_option(help: str = "-v: info logs, -vv: debug logs (stderr).") -> Decorator:
    return option("-v", "--verbose", count=True, help=help)


# --------------------------------------------------------------------------- local backend


def corpus_options(help: str) -> Decorator:
    """``--corpus DIR`` and ``--strict``."""
    return apply(
        option(
            "--corpus",
            type=click.Path(exists=True, file_okay=False, path_type=Path),
            default=None,
            help=help,
        ),
        option(
            "--strict",
            is_flag=True,
            help="Fail on a corpus file that is not UTF-8 (default: skip it).",
        ),
    )


# --------------------------------------------------------------------------- servers


def host_port_options(default_port: int) -> Decorator:
    """``--host`` and ``--port`` of a server."""
    return apply(
        option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on."),
        option(
            "--port",
            default=default_port,
            show_default=True,
            type=click.IntRange(0, 65535),
            help="0 picks a free port.",
        ),
    )


def read_deadline_options() -> Decorator:
    """``--header-timeout`` and ``--body-timeout`` of a server (slowloris read deadlines,
    see :class:`~streamcite.web.deadlines.ReadDeadlines`)."""
    return apply(
        option(
            "--header-timeout",
            type=click.FloatRange(0.1, 3600),
            default=10.0,
            show_default=True,
            metavar="S",
            help="Close a connection whose request head is not complete S seconds after it "
            "opened or after its previous response (slowloris, idle keep-alive).",
        ),
        option(
            "--body-timeout",
            type=click.FloatRange(0.1, 3600),
            default=30.0,
            show_default=True,
            metavar="S",
            help="Close a request whose body has not arrived whole S seconds after its head.",
        ),
    )


def origin_options() -> Decorator:
    """``--allowed-host`` and ``--allowed-origin`` of a server (DNS rebinding, CORS)."""
    return apply(
        option(
            "--allowed-host",
            "allowed_hosts",
            multiple=True,
            metavar="NAME[:PORT]",
            help="Host header served (repeatable; name[:port], [v6]:port, .domain for "
            "subdomains, '*' for any). Default: the address reached and localhost, "
            "127.0.0.1, ::1, with the port. Others: HTTP 403 (DNS rebinding).",
        ),
        option(
            "--allowed-origin",
            "allowed_origins",
            multiple=True,
            metavar="ORIGIN",
            help="Browser Origin served (repeatable; '*' for any). Default: the http(s) "
            "origins of the allowed hosts.",
        ),
    )


# --------------------------------------------------------------------------- enrichers


def wikit_options(
    *,
    app: bool = True,
    base_url: bool = True,
    key_default: str | None = None,
    org_help: str = "Wikit organization id (X-Wikit-Organization-Id).",
    key_help: str = "Environment variable holding the Wikit API key.",
    app_help: str = "Wikit Semantics app id: fetch the answer's quoted sources.",
    base_url_help: str = "Wikit API root (default: the local backend when local, else Wikit's).",
) -> Decorator:
    """``--wikit-app``, ``--wikit-org``, ``--wikit-base-url``, ``--wikit-api-key-env``
    (``--wikit-key-env``: its old spelling in ``bench``)."""
    decorators = []
    if app:
        decorators.append(option("--wikit-app", default=None, metavar="ID", help=app_help))
    decorators.append(option("--wikit-org", default=None, metavar="ID", help=org_help))
    if base_url:
        decorators.append(
            option("--wikit-base-url", default=None, metavar="URL", help=base_url_help)
        )
    decorators.append(
        option(
            "--wikit-api-key-env",
            "--wikit-key-env",
            "wikit_api_key_env",
            hidden_aliases=("--wikit-key-env",),
            default=key_default,
            show_default=key_default is not None,
            metavar="NAME",
            help=key_help,
        )
    )
    return apply(*decorators)


def grounding_option(default: str, help: str = "Grounding check after each answer.") -> Decorator:
    return option(
        "--grounding",
        type=click.Choice(["local", "google", "azure", "none"]),
        default=default,
        show_default=True,
        help=help,
    )


def grounding_facts_option() -> Decorator:
    return option(
        "--grounding-facts",
        type=click.Choice(["citations", "sources", "both"]),
        default="citations",
        show_default=True,
        help="Facts of the grounding check: the answer's citations, the Wikit sources, or both.",
    )


def google_options(*, token_default: str | None = GOOGLE_TOKEN_ENV) -> Decorator:
    """``--google-config``, ``--google-endpoint`` and ``--google-token-env``."""
    return apply(
        option(
            "--google-config",
            default=None,
            metavar="NAME",
            help="projects/P/locations/global/groundingConfigs/C (for --grounding google).",
        ),
        option(
            "--google-endpoint",
            default=None,
            metavar="URL",
            help="Discovery Engine root (default: the local backend when local, else Google's).",
        ),
        option(
            "--google-token-env",
            default=token_default,
            show_default=token_default is not None,
            metavar="NAME",
            help="Environment variable holding an OAuth access token (else Application "
            "Default Credentials).",
        ),
    )
