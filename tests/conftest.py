"""Every async test runs on asyncio and on trio (anyio's pytest plugin, parametrized backend)."""

from __future__ import annotations

import inspect

import pytest

# Real servers (ephemeral PostgreSQL, SeaweedFS S3): session fixtures, started on first use.
from realservers import postgres_server, s3_server  # noqa: F401


@pytest.fixture(
    params=[
        pytest.param(("asyncio", {}), id="asyncio"),
        pytest.param(("trio", {}), id="trio"),
    ]
)
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, object]]:
    return request.param  # type: ignore[no-any-return]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        func = getattr(item, "function", None)
        if func is not None and inspect.iscoroutinefunction(func):
            item.add_marker(pytest.mark.anyio)

