"""``plait demo`` (the multi-provider pipeline on emulators) and ``plait wire``."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import anyio
import msgspec

from plait import Image, Message, ToolCall, ToolResult
from plait._agent_cli import wire_request
from plait._agent_demo import run_pipeline

from .test_agent_e2e import FRAME

BIG = FRAME * 20


def conversation() -> bytes:
    messages = [Message.user("What is at second 3?"),
                Message("assistant", [ToolCall("call_1", "key_frame", '{"second": 3}')]),
                Message("tool", [ToolResult("call_1", "key_frame",
                                            [Image.from_bytes(BIG, "image/png")])])]
    return msgspec.json.encode({"messages": messages, "system": "Be brief."})


async def test_wire_prints_each_providers_shape_with_media_abbreviated() -> None:
    anthropic = await wire_request(conversation(), "anthropic")
    head, _, body = anthropic.partition("\n")
    assert head == "POST /v1/messages"
    wire = json.loads(body)
    block = wire["messages"][2]["content"][0]
    assert block["type"] == "tool_result"
    assert block["content"][0]["source"]["data"] == f"<base64: {len(BIG)} bytes>"
    full = json.loads((await wire_request(conversation(), "anthropic", full=True))
                      .partition("\n")[2])
    data = full["messages"][2]["content"][0]["content"][0]["source"]["data"]
    assert base64.b64decode(data) == BIG
    chat = json.loads((await wire_request(conversation(), "openai")).partition("\n")[2])
    assert chat["messages"][3]["role"] == "tool"  # Chat: text placeholder, image after
    assert chat["messages"][4]["role"] == "user"
    gemini = json.loads((await wire_request(conversation(), "gemini:gemini-3-pro-preview"))
                        .partition("\n")[2])
    assert "functionResponse" in gemini["contents"][2]["parts"][0]


async def test_demo_pipeline_runs_on_emulators_in_seconds(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for key in ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    lines: list[str] = []
    with anyio.fail_after(30):
        result = await run_pipeline(lines.append)
    text = "\n".join(lines)
    assert "key takeaway" in result.output
    assert "uploaded to the gemini file store [files/" in text
    assert "tool call key_frames(" in text and "3 images → h_" in text
    assert text.count("inside the tool result") == 6  # 3 frames × (Anthropic, OpenAI)
    for model in ("gemini:", "anthropic:", "openai-responses:"):
        assert f"[{model}" in text
    assert "result: " + result.output in text


def test_wire_cli_reads_a_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from plait.cli import main

    path = tmp_path / "conversation.json"
    path.write_bytes(conversation())
    assert main(["wire", str(path), "--provider", "openai-responses"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("POST /responses") or out.startswith("POST /v1/responses")
    assert "function_call_output" in out and "<base64:" in out


async def test_wire_resolves_handles_from_a_local_store(tmp_path: Path) -> None:
    from plait.stores import LocalFileStore

    store = LocalFileStore(tmp_path / "content")
    handle = await store.put(BIG, mime_type="image/png", display_name="chart.png")
    saved = msgspec.json.encode([Message.user("Describe", Image.from_handle(handle))])
    out = await wire_request(saved, "anthropic", store=store)
    wire = json.loads(out.partition("\n")[2])
    image = wire["messages"][0]["content"][1]
    assert image["type"] == "image" and image["source"]["data"] == f"<base64: {len(BIG)} bytes>"
