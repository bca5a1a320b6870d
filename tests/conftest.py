"""Every async test runs on asyncio and on trio.

anyio's pytest plugin runs every ``async def`` test (``anyio_mode = "auto"`` in pyproject.toml);
the ``anyio_backend`` fixture below parametrizes each over both backends.
"""

from __future__ import annotations

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

