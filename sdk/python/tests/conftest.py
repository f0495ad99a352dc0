"""Fixtures of the integration tests: a client of a real executor
(SANDGATE_URL, SANDGATE_TOKEN), sync or async, and sessions that are deleted
whatever the test did. e2e/sdk_python_integration_test.go starts the
executor on Docker and runs these tests; without SANDGATE_URL they skip."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

import pytest

import sandgate

from .syncify import syncified

URL = os.environ.get("SANDGATE_URL", "")
TOKEN = os.environ.get("SANDGATE_TOKEN", "")
IMAGE = "debian:bookworm"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Not configured is not unreachable: with SANDGATE_URL set, an executor
    # that does not answer fails the tests.
    if URL:
        return
    skip = pytest.mark.skip(reason="no SANDGATE_URL: run `go test -tags integration -run TestPythonSDK ./e2e/`")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: needs a real executor at SANDGATE_URL")


@pytest.fixture(scope="module", params=["sync", "async"])
def client(request: pytest.FixtureRequest) -> Iterator[Any]:
    """client is a Client, or an AsyncClient seen through the same surface
    (tests/syncify.py): every integration test runs against both."""
    if request.param == "sync":
        c: Any = sandgate.Client(URL, TOKEN)
    else:
        c = syncified(sandgate.AsyncClient(URL, TOKEN))
    yield c
    c.close()


class Sessions:
    """Sessions creates sessions and deletes every one of them at the end."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.ids: list[str] = []

    def new(self, request: Any = None) -> str:
        sid = sandgate.new_session_id("pysdk")
        self.ids.append(sid)  # before the call: a provision that fails half-way is deleted too
        self.client.provision_session(sid, {"image": IMAGE} if request is None else request)
        return sid

    def delete_all(self) -> None:
        for sid in self.ids:
            self.client.delete_session(sid)
        left = {s["id"] for s in self.client.list_sessions()} & set(self.ids)
        assert not left, f"sessions left behind: {left}"


@pytest.fixture(scope="module")
def sessions(client: Any) -> Iterator[Sessions]:
    s = Sessions(client)
    yield s
    s.delete_all()


@pytest.fixture(scope="module")
def sid(sessions: Sessions) -> str:
    """sid is a running debian session, shared by a module's tests."""
    return sessions.new()


@pytest.fixture
def make_session(sessions: Sessions) -> Callable[..., str]:
    return sessions.new
