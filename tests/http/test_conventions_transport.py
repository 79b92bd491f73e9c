"""HTTP conventions of contract 13 on the wire: gzip for answers of 1 KiB and more, CORS
for the configured origins only, and ``Content-Disposition`` on downloads (local disk and
S3)."""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from strongroom.adapters.storage.disposition import content_disposition
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.adapters.webkit.compression import accepts_gzip
from strongroom.adapters.webkit.cors import parse_origins
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom
from support.seaweed import SeaweedServer, s3_storage
from support.world import Api, bearer, make_client, make_facade

GZIP = {"Accept-Encoding": "gzip"}
IDENTITY = {"Accept-Encoding": "identity"}
ORIGIN = "https://console.example.com"


def raw(client: Any, method: str, path: str, **options: Any) -> httpx2.Response:
    """A response with its body as sent (not decoded)."""
    with client.stream(method, path, **options) as response:
        response.body_as_sent = b"".join(response.iter_raw())
    return response  # type: ignore[no-any-return]


@pytest.fixture
def tenant(api: Api) -> tuple[Api, dict[str, str], str]:
    token, workspace_id = api.workspace_admin("ada@example.com")
    return api, bearer(token), str(workspace_id)


def fill(api: Api, headers: dict[str, str], workspace_id: str, count: int) -> str:
    """``count`` backups; the list's path."""
    path = f"/v1/workspaces/{workspace_id}/backups"
    for number in range(count):
        body = {"name": f"backup-{number}", "kind": "manual"}
        assert api.client.post(path, json=body, headers=headers).status_code == 201
    return path


class TestGzip:
    """Answers of 1 KiB and more are gzip-compressed for clients that accept it."""

    def test_a_large_list_is_compressed_and_says_so(self, tenant: Any) -> None:
        api, headers, workspace_id = tenant
        path = fill(api, headers, workspace_id, 20)
        plain = raw(api.client, "GET", path, headers={**headers, **IDENTITY})
        packed = raw(api.client, "GET", path, headers={**headers, **GZIP})
        assert len(plain.body_as_sent) >= 1024
        assert "content-encoding" not in plain.headers
        assert packed.headers["content-encoding"] == "gzip"
        assert "accept-encoding" in packed.headers["vary"].lower()
        assert int(packed.headers["content-length"]) == len(packed.body_as_sent)
        assert len(packed.body_as_sent) < len(plain.body_as_sent) / 3
        assert gzip.decompress(packed.body_as_sent) == plain.body_as_sent

    def test_a_small_answer_is_sent_as_is(self, tenant: Any) -> None:
        """A backup's read (under 1 KiB) goes out uncompressed even to a gzip client."""
        api, headers, workspace_id = tenant
        path = fill(api, headers, workspace_id, 1)
        backup_id = api.client.get(path, headers=headers).json()["data"][0]["id"]
        response = raw(api.client, "GET", f"/v1/backups/{backup_id}", headers={**headers, **GZIP})
        assert "content-encoding" not in response.headers
        assert len(response.body_as_sent) < 1024
        assert response.body_as_sent.startswith(b'{"id":')

    @pytest.mark.parametrize("accept", ["identity", "gzip;q=0", "br", "*;q=0", ""])
    def test_a_client_that_refuses_gzip_gets_none(self, tenant: Any, accept: str) -> None:
        api, headers, workspace_id = tenant
        path = fill(api, headers, workspace_id, 5)
        response = raw(api.client, "GET", path, headers={**headers, "Accept-Encoding": accept})
        assert "content-encoding" not in response.headers
        assert response.body_as_sent.startswith(b'{"data":')

    def test_the_metrics_scrape_is_compressed_correctly(self, api: Api) -> None:
        api.client.get("/healthz")
        plain = raw(api.client, "GET", "/metrics", headers=IDENTITY)
        packed = raw(api.client, "GET", "/metrics", headers=GZIP)
        assert packed.headers["content-encoding"] == "gzip"
        assert packed.headers["content-type"] == plain.headers["content-type"]
        text = gzip.decompress(packed.body_as_sent).decode()
        assert text.splitlines()[0] == plain.body_as_sent.decode().splitlines()[0]

    @given(st.sampled_from(["gzip", "GZIP", "x-gzip", "*", "deflate, gzip;q=0.5", "br, *"]))
    def test_accepting_spellings(self, value: str) -> None:
        assert accepts_gzip(value)

    @given(st.sampled_from(["", "identity", "gzip;q=0", "gzip;q=0.0, *", "*;q=0", "br"]))
    def test_refusing_spellings(self, value: str) -> None:
        assert not accepts_gzip(value)


class TestCors:
    """Browsers may call from the configured origins only."""

    @pytest.fixture
    def cors_api(self, facade: Strongroom) -> Iterator[Api]:
        with make_client(facade, cors_origins=(ORIGIN,)) as client:
            yield Api(facade, client)

    def test_a_preflight_from_an_allowed_origin_is_answered(self, cors_api: Api) -> None:
        response = cors_api.client.options(
            "/v1/backups/00000000-0000-0000-0000-000000000000",
            headers={
                "Origin": ORIGIN,
                "Access-Control-Request-Method": "PATCH",
                "Access-Control-Request-Headers": "authorization, content-type, if-match",
            },
        )
        assert response.status_code == 204
        assert response.headers["access-control-allow-origin"] == ORIGIN
        assert "PATCH" in response.headers["access-control-allow-methods"]
        allowed = response.headers["access-control-allow-headers"].lower()
        for header in ("authorization", "content-type", "if-match", "idempotency-key"):
            assert header in allowed
        assert response.headers["x-request-id"].startswith("req_")
        assert "access-control-allow-credentials" not in response.headers

    def test_an_allowed_origins_call_can_read_the_answer_and_its_headers(
        self, cors_api: Api
    ) -> None:
        token, workspace_id = cors_api.workspace_admin("ada@example.com")
        response = cors_api.client.post(
            f"/v1/workspaces/{workspace_id}/backups",
            json={"name": "n", "kind": "manual"},
            headers={**bearer(token), "Origin": ORIGIN},
        )
        assert response.status_code == 201
        assert response.headers["access-control-allow-origin"] == ORIGIN
        exposed = {
            h.strip().lower() for h in response.headers["access-control-expose-headers"].split(",")
        }
        assert {"location", "etag", "retry-after", "x-request-id"} <= exposed
        assert "origin" in response.headers["vary"].lower()

    @pytest.mark.parametrize("origin", ["https://evil.example", "https://console.example.com:8443"])
    def test_another_origin_gets_no_cors_header(self, cors_api: Api, origin: str) -> None:
        preflight = cors_api.client.options(
            "/v1/me", headers={"Origin": origin, "Access-Control-Request-Method": "GET"}
        )
        call = cors_api.client.get("/healthz", headers={"Origin": origin})
        for response in (preflight, call):
            assert not any(name.startswith("access-control-") for name in response.headers)
        assert preflight.status_code == 405

    def test_none_is_allowed_by_default(self, api: Api) -> None:
        preflight = api.client.options(
            "/v1/me", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "GET"}
        )
        call = api.client.get("/healthz", headers={"Origin": ORIGIN})
        for response in (preflight, call):
            assert not any(name.startswith("access-control-") for name in response.headers)

    def test_the_setting_reads_a_comma_list_of_origins(self) -> None:
        settings = Settings.from_env(
            {"STRONGROOM_CORS_ORIGINS": "https://A.example.com/, http://localhost:3000"}
        )
        assert settings.cors_origins == ("https://a.example.com", "http://localhost:3000")
        assert Settings.from_env({}).cors_origins == ()

    @pytest.mark.parametrize(
        "value", ["*", "console.example.com", "https://x.example/app", "ftp://x"]
    )
    def test_a_value_that_is_no_origin_is_refused(self, value: str) -> None:
        with pytest.raises(ValueError, match="STRONGROOM_CORS_ORIGINS"):
            parse_origins(value)


NAMES = ["db.dump", 'quote"and\\back.tar', "données été.sql.gz", "日本.bin"]


class TestContentDisposition:
    """A download is saved under the artifact's name."""

    @pytest.mark.parametrize("name", NAMES)
    def test_the_header_names_the_file_safely(self, name: str) -> None:
        value = content_disposition(name)
        assert value.startswith('attachment; filename="')
        fallback = value.split('filename="', 1)[1].split('"', 1)[0]
        assert fallback.isascii()
        assert '"' not in fallback
        assert "\\" not in fallback
        if fallback == name:
            assert "filename*" not in value
        else:
            encoded = value.split("filename*=UTF-8''", 1)[1]
            assert unquote(encoded) == name

    @given(st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=255))
    def test_any_name_gives_one_header_line_that_gives_it_back(self, name: str) -> None:
        value = content_disposition(name)
        value.encode("latin-1")  # a header value
        assert "\n" not in value
        assert "\r" not in value
        star = value.partition("filename*=UTF-8''")[2]
        shown = unquote(star) if star else value.split('filename="', 1)[1][:-1]
        assert shown == name

    @pytest.mark.parametrize("where", ["local", "s3"])
    def test_a_download_is_an_attachment_named_as_the_artifact(
        self, where: str, tmp_path: Path, request: pytest.FixtureRequest
    ) -> None:
        if where == "local":
            storage: Any = LocalDiskStorage(tmp_path / "objects", b"signing key")
        else:
            seaweed: SeaweedServer = request.getfixturevalue("seaweed")
            storage = s3_storage(seaweed)
        facade = make_facade(storage=storage)
        name = "données été.sql.gz"
        data = os.urandom(4096)
        with make_client(facade) as client:
            api = Api(facade, client)
            token, workspace_id = api.workspace_admin("ada@example.com")
            headers = bearer(token)
            backup = client.post(
                f"/v1/workspaces/{workspace_id}/backups",
                json={"name": "n", "kind": "manual"},
                headers=headers,
            ).json()["id"]
            retention = {"retention": {"expire_after": "P1D", "lock_for": "PT0S"}}
            assert client.patch(f"/v1/backups/{backup}", json=retention, headers=headers).is_success
            run = client.post("/v1/runs", json={"backup_id": backup}, headers=headers).json()["id"]
            body = {"name": name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            plan = client.post(f"/v1/runs/{run}/upload-url", json=body, headers=headers).json()
            assert transfer(
                client, "PUT", plan["url"], content=data, headers=plan["headers"]
            ).is_success
            assert client.post(f"/v1/runs/{run}/confirm", headers=headers).is_success
            url = client.post(
                f"/v1/artifacts/{plan['artifact_id']}/download-url", headers=headers
            ).json()["url"]
            downloaded = transfer(client, "GET", url, headers=GZIP)
        assert downloaded.status_code == 200
        assert downloaded.content == data
        assert downloaded.headers["content-disposition"] == content_disposition(name)
        assert "content-encoding" not in downloaded.headers

    def test_the_name_is_signed_into_a_local_url(self, tmp_path: Path) -> None:
        """Changing the name in a local presigned URL breaks its signature."""
        facade = make_facade(storage=LocalDiskStorage(tmp_path / "objects", b"signing key"))
        storage = facade.deps.storage
        request = storage.presign_get(
            "ns/b/r/a", datetime.now(UTC) + timedelta(minutes=5), filename="a"
        )
        with make_client(facade) as client:
            forged = client.get(request.url.replace("filename=a", "filename=b"))
        assert forged.status_code == 403


def transfer(client: Any, method: str, url: str, **options: Any) -> httpx2.Response:
    """A request to a presigned URL: the app's own for local disk, else real HTTP."""
    if url.startswith("http://testserver/"):
        response: httpx2.Response = client.request(method, url, **options)
        return response
    return httpx2.request(method, url, timeout=60, **options)
