"""What the sync and the async client share of httpx: the translation of its
exceptions into the SDK's, and the timeouts of a call."""

from __future__ import annotations

import contextlib
from typing import Iterator, Optional

import httpx

from . import _core, errors


@contextlib.contextmanager
def mapped(what: str) -> Iterator[None]:
    """mapped translates httpx's exceptions raised in its block, once, at
    the boundary: a timeout is CallTimeoutError, any other failure of the
    transport TransportError, both naming what was being done."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise errors.CallTimeoutError(f"{what}: {type(exc).__name__}: {exc}") from exc
    except (httpx.TransportError, httpx.StreamError) as exc:
        raise errors.TransportError(f"{what}: {type(exc).__name__}: {exc}") from exc


def timeout_of(default: Optional[float], timeout: _core.Timeout, waits: bool = False) -> httpx.Timeout:
    """timeout_of is a call's httpx timeout. ``timeout`` bounds each step of
    the call (connecting, sending a piece, waiting for the next piece of the
    answer); UNSET takes the client's. A call that waits on the sandbox by
    design (exec, waitProc: the command's own timeout bounds it) has no read
    timeout unless one is given."""
    if isinstance(timeout, _core.Unset):
        if waits:
            return httpx.Timeout(default, read=None)
        return httpx.Timeout(default)
    return httpx.Timeout(timeout)


def what(route: tuple[str, str]) -> str:
    """what names a call in an error: its method and URL path."""
    method, url = route
    return f"{method} {httpx.URL(url).path}"
