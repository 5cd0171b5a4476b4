"""What a browser may read of an upstream failure: the code and a plain message.

A connect error's text names the relay's upstream address and the OS errno
(``cannot connect: [Errno 111] … ('10.0.3.7', 8001)``): useful in the relay's log,
a map of the internal network in a page. :func:`for_browser` rewrites an error event
in place before the relay logs or sends it; the detail goes to the server log.
"""

from __future__ import annotations

import re

from streamcite.core.events import ErrorEvent

__all__ = ["for_browser"]

_GENERIC = {
    "connect_failed": "the relay could not reach the model provider",
    "connect_timeout": "the model provider did not accept the connection in time",
    "connection_lost": "the connection to the model provider was lost",
    "redirected": "the model provider answered with a redirect, which the relay does not follow",
}
# Anything else may still quote an address or an errno (an enricher's transport error).
_ERRNO = re.compile(r"\[Errno -?\d+\][^:;,)]*")
_ADDRESS = re.compile(
    r"\(?'?(?:\d{1,3}(?:\.\d{1,3}){3}|\[?[0-9a-fA-F]*:[0-9a-fA-F:]+\]?)'?(?:[,:] ?\d{1,5})?\)?"
)


def for_browser(event: ErrorEvent) -> str | None:
    """Make ``event``'s message safe for a browser; return the original when changed."""
    original = event.message
    generic = _GENERIC.get(event.code)
    if generic is not None:
        event.message = generic
    else:
        event.message = _ADDRESS.sub("an internal address", _ERRNO.sub("", original))
    return None if event.message == original else original
