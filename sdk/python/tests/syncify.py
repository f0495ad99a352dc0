"""Syncified drives an AsyncClient through the sync client's surface, so
that each integration test runs against both clients: every coroutine runs
on a loop thread of the test's, and every async stream the client returns is
iterated and closed through the same proxy. Test code only: the SDK's own
sync client is built on httpx's sync client, not on this."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any, Iterator

import sandgate


class _Loop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, aw: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(_await(aw), self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


async def _await(aw: Any) -> Any:
    return await aw


class Proxy:
    """Proxy is an async object (a client, a stream, an attachment) seen
    synchronously."""

    def __init__(self, loop: _Loop, inner: Any) -> None:
        self._loop = loop
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._wrap(self._loop.run(value(*args, **kwargs)))
        return call

    def _wrap(self, value: Any) -> Any:
        if type(value).__module__.startswith("sandgate") and hasattr(value, "__aiter__"):
            return Proxy(self._loop, value)
        return value

    def __iter__(self) -> Iterator[Any]:
        it = self._inner.__aiter__()
        while True:
            try:
                yield self._loop.run(it.__anext__())
            except StopAsyncIteration:
                return

    def __enter__(self) -> "Proxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.run(self._inner.__aexit__(*exc))

    def close(self) -> None:
        closer = getattr(self._inner, "aclose", None) or self._inner.close
        self._loop.run(closer())


def syncified(client: sandgate.AsyncClient) -> Proxy:
    """syncified returns client driven through a loop thread of its own;
    closing the proxy closes the client and stops the thread."""
    loop = _Loop()
    proxy = Proxy(loop, client)
    original_close = proxy.close

    def close() -> None:
        original_close()
        loop.close()
    proxy.close = close  # type: ignore
    return proxy
