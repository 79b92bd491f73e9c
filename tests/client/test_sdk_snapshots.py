"""The SDK's snapshot operations as sent and read (sync and async, over a mock transport):
batch upload and download URLs, a confirm with references, ``encryption`` on a backup's
create and read tolerantly from a server that has or lacks it; byte ranges of a
presigned download (206, a storage that ignores ``Range``, an expired URL)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import pytest

from strongroom.client import AsyncClient, Client, SingleUpload
from strongroom.client.batches import Encryption, UploadItem, backup_encryption, backup_format
from strongroom.client.packs import UrlExpiredError, get_range

RUN = "6f1c2a9e-0000-4000-8000-000000000001"
ARTIFACT = "6f1c2a9e-0000-4000-8000-000000000002"
WHEN = "2026-01-01T00:00:00.000Z"
SHA = "ab" * 32


def answer(request: httpx2.Request) -> httpx2.Response:
    body = json.loads(request.content) if request.content else None
    path = request.url.path
    if path.endswith("/upload-urls"):
        plan = {
            "artifact_id": ARTIFACT,
            "method": "PUT",
            "url": "http://storage/x",
            "headers": {},
            "expires_at": WHEN,
        }
        return httpx2.Response(201, json={"data": [plan for _ in body["artifacts"]]})
    if path.endswith("/download-urls"):
        urls = [
            {"artifact_id": a, "method": "GET", "url": f"http://storage/{a}", "expires_at": WHEN}
            for a in body["artifact_ids"]
        ]
        return httpx2.Response(200, json={"data": urls})
    return httpx2.Response(418)


SENT: list[tuple[str, str, Any]] = []


def recording(request: httpx2.Request) -> httpx2.Response:
    SENT.append((request.method, request.url.path, json.loads(request.content or b"null")))
    return answer(request)


def test_batch_uploads_downloads_and_references_as_sent_and_read() -> None:
    SENT.clear()
    client = Client("http://api", "bks_x", transport=httpx2.MockTransport(recording))
    plans = client.request_uploads(
        RUN, [UploadItem("index", 3, SHA), UploadItem("manifest", 4, SHA)]
    )
    assert [type(p) for p in plans.data] == [SingleUpload, SingleUpload]
    urls = client.request_downloads([ARTIFACT])
    assert [str(u.artifact_id) for u in urls.data] == [ARTIFACT]
    assert SENT[0] == (
        "POST",
        f"/v1/runs/{RUN}/upload-urls",
        {
            "artifacts": [
                {"name": "index", "size": 3, "sha256": SHA},
                {"name": "manifest", "size": 4, "sha256": SHA},
            ]
        },
    )
    assert SENT[1] == ("POST", "/v1/artifacts/download-urls", {"artifact_ids": [ARTIFACT]})


def test_the_async_client_has_them_too() -> None:
    async def go() -> Any:
        async with AsyncClient("http://api", "bks_x", transport=httpx2.MockTransport(answer)) as c:
            return await c.request_downloads([ARTIFACT])

    assert str(asyncio.run(go()).data[0].artifact_id) == ARTIFACT


def test_confirm_sends_references_only_when_given() -> None:
    bodies: list[Any] = []

    def confirm(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content) if request.content else None)
        return httpx2.Response(418)

    client = Client("http://api", "bks_x", transport=httpx2.MockTransport(confirm))
    with pytest.raises(Exception):  # noqa: B017, PT011 - only the body matters here
        client.confirm_run(RUN)
    with pytest.raises(Exception):  # noqa: B017, PT011
        client.confirm_run(RUN, references=[ARTIFACT])
    assert bodies == [None, {"references": [ARTIFACT]}]


def test_create_sends_encryption_and_reads_it_back_tolerantly() -> None:
    bodies: list[Any] = []

    def create(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return httpx2.Response(418)

    client = Client("http://api", "bks_x", transport=httpx2.MockTransport(create))
    with pytest.raises(Exception):  # noqa: B017, PT011
        client.create_backup(RUN, "files", "manual", encryption=Encryption(["age1x"]))
    assert bodies[0]["encryption"] == {"recipients": ["age1x"]}
    assert backup_encryption({"encryption": {"recipients": ["age1x"]}}) == Encryption(["age1x"])
    assert backup_encryption({"name": "older server"}) is None
    assert backup_format({"name": "older server"}) == "archive"
    assert backup_format({"format": "snapshot", "encryption": {"recipients": ["a"]}}) == "snapshot"


def test_ranges_of_a_presigned_download() -> None:
    data = bytes(range(256)) * 4

    def storage(request: httpx2.Request) -> httpx2.Response:
        if "expired" in request.url.path:
            return httpx2.Response(403)
        header = request.headers.get("Range")
        if "ignores" in request.url.path or header is None:
            return httpx2.Response(200, content=data)
        start, end = (int(x) for x in header.removeprefix("bytes=").split("-"))
        return httpx2.Response(206, content=data[start : end + 1])

    with httpx2.Client(transport=httpx2.MockTransport(storage)) as http:
        assert get_range(http, "http://s/a", 10, 5) == data[10:15]
        assert get_range(http, "http://s/ignores", 10, 5) == data[10:15]
        assert get_range(http, "http://s/a", None, None) == data
        with pytest.raises(UrlExpiredError):
            get_range(http, "http://s/expired", 0, 1)
