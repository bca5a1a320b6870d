"""The public surface is exactly ``__all__``: sorted, importable, and nothing public leaks."""

from __future__ import annotations

import importlib
import types

import pytest

PUBLIC_MODULES = [
    "plait", "plait.logging", "plait.providers", "plait.stores", "plait.telemetry", "plait.testing",
]


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_all_is_sorted_unique_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported), f"{name}.__all__ is not sorted"
    assert len(exported) == len(set(exported)), f"{name}.__all__ has duplicates"
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ names missing {attr!r}"


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_nothing_public_outside_all(name: str) -> None:
    module = importlib.import_module(name)
    leaked = [
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and attr not in module.__all__
        and not isinstance(value, types.ModuleType)
        and attr != "annotations"
    ]
    assert leaked == [], f"{name} exposes names outside __all__: {leaked}"


def test_errors_share_one_base() -> None:
    import plait

    for attr in plait.__all__:
        value = getattr(plait, attr)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, plait.PlaitError), attr
