"""A model string connect cannot open is refused up front, with a plait error."""

from __future__ import annotations

import pytest

from plait import Agent, ConfigurationError, UnknownProvider
from plait.providers import connect
from plait.testing import ScriptedModel


def test_connect_rejects_malformed_and_unknown_model_strings() -> None:
    with pytest.raises(ConfigurationError, match="provider:model"):
        connect("gpt-4o", api_key="k")
    with pytest.raises(UnknownProvider, match=r"known: .*anthropic"):
        connect("nope:model", api_key="k")
    with pytest.raises(LookupError):  # still a LookupError for callers that catch builtins
        connect("nope:model", api_key="k")


async def test_agent_checks_its_model_when_built_switched_and_run() -> None:
    with pytest.raises(UnknownProvider):
        Agent("nope:model")
    with pytest.raises(ConfigurationError):
        Agent("claude")
    agent = Agent("anthropic:claude-sonnet-4-5")
    with pytest.raises(UnknownProvider):
        agent.model = "nope:model"
    assert agent.model == "anthropic:claude-sonnet-4-5"
    with pytest.raises(UnknownProvider):
        await agent.run("hi", model="nope:model")


def test_a_custom_connect_decides_which_models_it_takes() -> None:
    agent = Agent("scripted:anything", connect=lambda _: ScriptedModel(lambda request: None))
    agent.model = "also:fine"
    assert agent.model == "also:fine"
