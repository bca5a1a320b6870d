"""The file-API emulators refuse what the real services refuse (raw HTTP, no plait client)."""

from __future__ import annotations

import httpx

from plait.testing import AnthropicFilesEmulator, FalStorageEmulator, GeminiFilesEmulator


async def test_anthropic_requires_the_beta_header() -> None:
    with AnthropicFilesEmulator() as emu:
        async with httpx.AsyncClient(base_url=emu.url) as client:
            files = {"file": ("a.txt", b"hello", "text/plain")}
            base = {"x-api-key": emu.api_key, "anthropic-version": "2023-06-01"}
            refused = await client.post("/v1/files", files=files, headers=base)
            ok = await client.post("/v1/files", files=files, headers={
                **base, "anthropic-beta": "other-beta,files-api-2025-04-14"})
    assert refused.status_code == 400 and "anthropic-beta" in refused.json()["error"]["message"]
    assert ok.status_code == 200 and ok.json()["size_bytes"] == 5
    assert ok.json()["mime_type"] == "text/plain" and ok.json()["downloadable"] is False


async def test_gemini_rejects_a_wrong_offset_and_reports_progress() -> None:
    with GeminiFilesEmulator() as emu:
        async with httpx.AsyncClient() as client:
            start = await client.post(
                f"{emu.url}/upload/v1beta/files", json={"file": {"display_name": "x"}},
                headers={"x-goog-api-key": emu.api_key, "x-goog-upload-protocol": "resumable",
                         "x-goog-upload-command": "start",
                         "x-goog-upload-header-content-length": "6",
                         "x-goog-upload-header-content-type": "text/plain"})
            url = start.headers["x-goog-upload-url"]
            first = await client.post(url, content=b"abc", headers={
                "x-goog-upload-command": "upload", "x-goog-upload-offset": "0"})
            wrong = await client.post(url, content=b"def", headers={
                "x-goog-upload-command": "upload, finalize", "x-goog-upload-offset": "0"})
            query = await client.post(url, headers={"x-goog-upload-command": "query"})
            final = await client.post(url, content=b"def", headers={
                "x-goog-upload-command": "upload, finalize", "x-goog-upload-offset": "3"})
            late = await client.post(url, content=b"g", headers={
                "x-goog-upload-command": "upload", "x-goog-upload-offset": "6"})
    assert first.status_code == 200 and first.headers["x-goog-upload-status"] == "active"
    assert wrong.status_code == 400
    assert query.headers["x-goog-upload-size-received"] == "3"
    assert final.json()["file"]["sizeBytes"] == "6" and final.json()["file"]["state"] == "ACTIVE"
    assert late.status_code == 400


async def test_fal_upload_needs_a_token_from_the_key() -> None:
    with FalStorageEmulator() as emu:
        async with httpx.AsyncClient(base_url=emu.url) as client:
            no_token = await client.post("/files/upload", content=b"x",
                                         headers={"authorization": f"Key {emu.api_key}"})
            bad_key = await client.post("/storage/auth/token",
                                        headers={"authorization": "Key wrong"})
    assert no_token.status_code == 401 and bad_key.status_code == 401
