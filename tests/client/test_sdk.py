"""The SDK against the real server: in-process (the app's ASGI interface, through
Starlette's TestClient or httpx2's ASGITransport) and over a loopback socket (a real
``strongroom serve`` process)."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx2
import pytest

from strongroom.adapters.wire.artifacts import UploadRequest
from strongroom.adapters.wire.backups import EncryptionShape
from strongroom.client import (
    AsyncClient,
    AuthenticationError,
    BadRequestError,
    Client,
    ConflictError,
    ConnectionFailedError,
    NotFoundError,
    ProgressReport,
    RateLimitedError,
    Retention,
    RetryPolicy,
    S3Credentials,
    S3Source,
    ServerError,
    SingleUpload,
)
from strongroom.entrypoints.http import create_app
from strongroom.entrypoints.settings import Settings
from support.client_people import PASSWORD, admin_in_new_workspace, sign_in
from support.serve_process import free_port, serving

FAST = RetryPolicy(attempts=3, backoff=0.01, max_delay=2.0)


def sha(content: bytes) -> str:
    """The hex sha256 of ``content``."""
    return hashlib.sha256(content).hexdigest()


class TestSyncClientInProcess:
    """``Client`` over the app in-process: typed answers, pages, errors, a manual run."""

    def test_answers_are_typed_and_lists_follow_next_cursor(self, admin: Client) -> None:
        """A page holds ``limit`` backups and a cursor; ``iterate`` walks every page,
        newest first, with ids as UUIDs and timestamps as aware datetimes."""
        workspace_id = admin.get_me().workspace_id
        assert isinstance(workspace_id, UUID)
        names = [f"backup-{i}" for i in range(5)]
        for name in names:
            admin.create_backup(workspace_id, name, "manual")
        page = admin.list_backups(workspace_id, limit=2)
        assert len(page) == 2
        assert page.next_cursor is not None
        every = list(admin.list_backups.iterate(workspace_id, limit=2))
        assert [b.name for b in every] == names[::-1]
        assert isinstance(every[0].id, UUID)
        assert isinstance(every[0].created_at, datetime)
        assert every[0].created_at.tzinfo is not None

    def test_update_changes_only_the_fields_given(self, admin: Client) -> None:
        """Fields left out of ``update_backup`` keep their value."""
        workspace_id = admin.get_me().workspace_id
        assert workspace_id is not None
        backup = admin.create_backup(workspace_id, "nightly", "manual")
        with_retention = admin.update_backup(backup.id, retention=Retention("P1W"))
        assert with_retention.retention == Retention("P7D", "PT0S")
        assert with_retention.state == "active"
        renamed = admin.update_backup(backup.id, name="weekly")
        assert renamed.name == "weekly"
        assert renamed.retention == Retention("P7D", "PT0S")

    def test_refusals_raise_api_errors_with_code_message_and_request_id(
        self, admin: Client, anonymous: Client
    ) -> None:
        """404, 400, 409 and 401 each raise their subclass, carrying the API's code and
        message and the request id the server answered with."""
        workspace_id = admin.get_me().workspace_id
        assert workspace_id is not None
        with pytest.raises(NotFoundError) as missing:
            admin.get_backup(UUID(int=1))
        assert (missing.value.code, missing.value.status) == ("not_found", 404)
        assert missing.value.message
        assert str(missing.value.request_id).startswith("req_")
        with pytest.raises(BadRequestError) as bad:
            admin.create_backup(workspace_id, "x", "weekly")
        assert bad.value.code == "invalid_request"
        admin.create_backup(workspace_id, "same", "manual")
        with pytest.raises(ConflictError) as taken:
            admin.create_backup(workspace_id, "SAME", "manual")
        assert taken.value.code == "name_taken"
        with pytest.raises(AuthenticationError) as unknown:
            Client(anonymous.base_url, "bks_nonsense", http=anonymous.http).get_me()
        assert unknown.value.status == 401

    def test_a_manual_run_uploads_confirms_and_downloads(self, admin: Client) -> None:
        """start_run, request_upload, upload, confirm_run; the download gives the bytes."""
        workspace_id = admin.get_me().workspace_id
        assert workspace_id is not None
        backup = admin.create_backup(workspace_id, "files", "manual")
        admin.update_backup(backup.id, retention=Retention("P7D"))
        run = admin.start_run(backup.id)
        content = b"strongroom" * 1000
        plan = admin.request_upload(run.id, "files.bin", len(content), sha(content))
        assert isinstance(plan, SingleUpload)
        assert admin.upload(plan.url, content, plan.headers).status == 200
        done = admin.confirm_run(run.id)
        assert (done.state, done.artifact_count, done.bytes) == ("succeeded", 1, len(content))
        (artifact,) = admin.list_artifacts(workspace_id).data
        download = admin.request_download(artifact.id)
        assert b"".join(admin.download(download.url)) == content

    def test_a_snapshot_run_in_batches_with_references(self, admin: Client) -> None:
        """create_backup(encryption=...), request_uploads, confirm_run(references=...),
        request_downloads: the typed answers of contract 14."""
        workspace_id = admin.get_me().workspace_id
        assert workspace_id is not None
        recipient = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
        backup = admin.create_backup(
            workspace_id, "home", "manual", encryption=EncryptionShape([recipient])
        )
        assert (backup.format, backup.encryption) == ("snapshot", EncryptionShape([recipient]))
        admin.update_backup(backup.id, retention=Retention("P7D"))
        made = []
        for content in (b"pack one", b"index two"):
            run = admin.start_run(backup.id)
            asked = [UploadRequest("object", len(content), sha(content))]
            (plan,) = admin.request_uploads(run.id, asked).data
            assert isinstance(plan, SingleUpload)
            assert admin.upload(plan.url, content, plan.headers).status == 200
            admin.confirm_run(run.id, references=made)
            made.append(plan.artifact_id)
        downloads = admin.request_downloads(list(reversed(made))).data
        assert [d.artifact_id for d in downloads] == list(reversed(made))
        assert b"".join(admin.download(downloads[1].url)) == b"pack one"

    def test_a_worker_claims_heartbeats_uploads_and_confirms(self, admin: Client) -> None:
        """The agent's protocol through the SDK: claim (None when nothing is queued),
        heartbeat with progress, upload, confirm; cancel reaches the worker's heartbeat."""
        workspace_id = admin.get_me().workspace_id
        assert workspace_id is not None
        worker = admin.create_worker("rack")
        backup = admin.create_backup(workspace_id, "laptop", "local")
        admin.update_backup(backup.id, worker_id=worker.id, retention=Retention("P7D"))
        agent = Client(admin.base_url, worker.token, http=admin.http)
        assert agent.claim_run() is None
        queued = admin.trigger_backup(backup.id)
        claim = agent.claim_run(wait_seconds=1)
        assert claim is not None
        assert (claim.run.id, claim.run.state, claim.backup.id) == (queued.id, "running", backup.id)
        beat = agent.heartbeat_run(claim.run.id, progress=ProgressReport(5, 10, "halfway"))
        assert beat.cancel_requested is False
        progress = admin.get_run(claim.run.id).progress
        assert progress is not None
        assert (progress.bytes_done, progress.bytes_total) == (5, 10)
        content = b"0123456789"
        plan = agent.request_upload(claim.run.id, "home.tar.zst", len(content), sha(content))
        assert isinstance(plan, SingleUpload)
        agent.upload(plan.url, content, plan.headers)
        assert agent.confirm_run(claim.run.id).state == "succeeded"

        second = admin.trigger_backup(backup.id)
        assert agent.claim_run() is not None
        assert admin.cancel_run(second.id).cancel_requested is True
        assert agent.heartbeat_run(second.id).cancel_requested is True

    def test_sign_out_revokes_the_session(self, anonymous: Client) -> None:
        """After ``delete_current_session`` the token is refused."""
        person = sign_in(anonymous, "grace@example.com")
        assert person.get_me().user is not None
        person.delete_current_session()
        with pytest.raises(AuthenticationError):
            person.get_me()


# -- async, in-process through httpx2's ASGITransport ----------------------------------


Handler = Callable[[httpx2.Request, int], Awaitable[httpx2.Response | None]]


class Faulty(httpx2.AsyncBaseTransport):
    """The real app behind a transport that lets a test answer (or break) attempts first:
    ``before(request, n)`` may return a response (the app never sees the request); a
    ``lose_answer_of`` attempt reaches the app but its answer is lost (ReadError)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner
        self.seen: list[httpx2.Request] = []
        self.before: Handler | None = None
        self.lose_answer_of: set[int] = set()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(request)
        number = len(self.seen)
        if self.before is not None and (answer := await self.before(request, number)):
            return answer
        response = await self.inner.handle_async_request(request)
        if number in self.lose_answer_of:
            await response.aread()
            raise httpx2.ReadError("connection reset by peer", request=request)
        return response


@asynccontextmanager
async def running_app(data_dir: Path, **settings: Any) -> AsyncIterator[Faulty]:
    """The app (``settings`` beside the data dir) with its lifespan running in this event
    loop, behind a ``Faulty``."""
    app = create_app(Settings(data_dir=data_dir, **settings))
    async with app.router.lifespan_context(app) as state:

        async def with_state(scope: Any, receive: Any, send: Any) -> None:
            scope["state"] = dict(state or {})  # what a server does with lifespan state
            await app(scope, receive, send)

        yield Faulty(httpx2.ASGITransport(with_state))


async def async_admin(transport: Faulty) -> AsyncClient:
    """An ``AsyncClient`` as the admin of a new workspace (signed in with the sync client
    protocol steps, over the same transport)."""
    base = "http://testserver"
    anonymous = AsyncClient(base, transport=transport, retry=FAST)
    await anonymous.idp_signup("ada@example.com", PASSWORD, "Ada")
    code = await anonymous.idp_device_code()
    approved = await anonymous.http.post(
        f"{base}/idp/device",
        data={
            "user_code": code.user_code,
            "email": "ada@example.com",
            "password": PASSWORD,
            "decision": "approve",
        },
        headers={"Accept": "application/json"},
    )
    assert approved.status_code == 200
    access = await anonymous.idp_token(code.device_code)
    anonymous.token = access.access_token
    session = await anonymous.create_session()
    anonymous.token = session.token
    workspace = await anonymous.create_workspace("Acme")
    anonymous.token = (await anonymous.switch_workspace(workspace.id)).token
    return anonymous


def run_async(
    data_dir: Path, scenario: Callable[[Faulty, AsyncClient], Awaitable[None]], **settings: Any
) -> None:
    """``scenario(transport, admin)`` against a fresh app (with ``settings``)."""

    async def main() -> None:
        async with running_app(data_dir, **settings) as transport:
            client = await async_admin(transport)
            try:
                await scenario(transport, client)
            finally:
                await client.aclose()

    asyncio.run(main())


async def cloud_artifact(admin: AsyncClient) -> UUID:
    """A confirmed artifact of a cloud backup of an S3 source (its run triggered, its bytes
    uploaded by the admin): what the service restores."""
    workspace_id = (await admin.get_me()).workspace_id
    assert workspace_id is not None
    backup = await admin.create_backup(workspace_id, "cloud", "cloud")
    await admin.update_backup(
        backup.id,
        source=S3Source("https://s3.example.com", "source"),
        credentials=S3Credentials("AKIA-SOURCE", "source-secret"),
        retention=Retention("P30D"),
    )
    run = await admin.trigger_backup(backup.id)
    content = b"archive bytes"
    plan = await admin.request_upload(run.id, "archive", len(content), sha(content))
    assert isinstance(plan, SingleUpload)
    await admin.upload(plan.url, content, plan.headers)
    await admin.confirm_run(run.id)
    return plan.artifact_id


class TestAsyncClientAndRetries:
    """``AsyncClient`` in-process; retries, idempotency keys and Retry-After."""

    def test_async_client_lists_and_iterates(self, data_dir: Path) -> None:
        """The coroutine methods and the async iterator give what the sync ones give."""

        async def scenario(_: Faulty, admin: AsyncClient) -> None:
            workspace_id = (await admin.get_me()).workspace_id
            assert workspace_id is not None
            for name in ("a", "b", "c"):
                await admin.create_backup(workspace_id, name, "manual")
            names = [b.name async for b in admin.list_backups.iterate(workspace_id, limit=1)]
            assert names == ["c", "b", "a"]

        run_async(data_dir, scenario)

    def test_a_lost_answer_to_a_create_is_retried_with_the_same_key(self, data_dir: Path) -> None:
        """The server created the backup but the answer was lost: the retry carries the
        same Idempotency-Key, gets the same backup, and no duplicate exists."""

        async def scenario(transport: Faulty, admin: AsyncClient) -> None:
            workspace_id = (await admin.get_me()).workspace_id
            assert workspace_id is not None
            transport.lose_answer_of = {len(transport.seen) + 1}
            before = len(transport.seen)
            backup = await admin.create_backup(workspace_id, "once", "manual")
            attempts = transport.seen[before:]
            assert len(attempts) == 2
            keys = {request.headers["Idempotency-Key"] for request in attempts}
            assert len(keys) == 1
            listed = (await admin.list_backups(workspace_id)).data
            assert [b.id for b in listed] == [backup.id]

        run_async(data_dir, scenario)

    def test_each_create_gets_its_own_key(self, data_dir: Path) -> None:
        """Two creating calls are two keys (two backups), never a replay of each other."""

        async def scenario(transport: Faulty, admin: AsyncClient) -> None:
            workspace_id = (await admin.get_me()).workspace_id
            assert workspace_id is not None
            before = len(transport.seen)
            await admin.create_backup(workspace_id, "one", "manual")
            await admin.create_backup(workspace_id, "two", "manual")
            keys = [r.headers.get("Idempotency-Key") for r in transport.seen[before:]]
            assert len(set(keys)) == 2
            assert None not in keys

        run_async(data_dir, scenario)

    def test_a_lost_answer_to_a_restore_is_retried_with_the_same_key(self, data_dir: Path) -> None:
        """The server queued the restore but the answer was lost: the retry carries the
        same Idempotency-Key and gets that restore back, so one restore writes into the
        target; the next call has a key of its own."""

        async def scenario(transport: Faulty, admin: AsyncClient) -> None:
            artifact_id = await cloud_artifact(admin)
            target = S3Source("https://s3.example.net", "restored")
            keys = S3Credentials("AKIA-TARGET", "target-secret")
            transport.lose_answer_of = {len(transport.seen) + 1}
            before = len(transport.seen)
            restore = await admin.create_restore(artifact_id, target, keys)
            attempts = transport.seen[before:]
            assert len(attempts) == 2
            assert len({request.headers["Idempotency-Key"] for request in attempts}) == 1
            assert (await admin.get_restore(restore.id)).artifact_id == artifact_id
            workspace_id = (await admin.get_me()).workspace_id
            assert workspace_id is not None
            events = await admin.list_audit_events(workspace_id, action="restore.create")
            assert [event.target.id for event in events.data] == [str(restore.id)]
            another = await admin.create_restore(artifact_id, target, keys)
            assert another.id != restore.id
            assert transport.seen[-1].headers["Idempotency-Key"] not in {
                request.headers["Idempotency-Key"] for request in attempts
            }

        # No executor (the test uploads the cloud run itself) and no restore runner.
        run_async(data_dir, scenario, executors=0, restore_poll=0)

    def test_a_lost_answer_to_a_keyless_post_is_not_repeated(self, data_dir: Path) -> None:
        """A POST without an Idempotency-Key whose answer was lost is not sent twice."""

        async def scenario(transport: Faulty, admin: AsyncClient) -> None:
            workspace_id = (await admin.get_me()).workspace_id
            assert workspace_id is not None
            backup = await admin.create_backup(workspace_id, "b", "manual")
            transport.lose_answer_of = {len(transport.seen) + 1}
            before = len(transport.seen)
            with pytest.raises(ConnectionFailedError) as failed:
                await admin.pause_backup(backup.id)
            assert len(transport.seen) - before == 1
            assert failed.value.status == 0
            assert failed.value.request_id

        run_async(data_dir, scenario)

    def test_503_and_429_are_retried_honouring_retry_after(self, data_dir: Path) -> None:
        """A 503 then a 429 asking for 1 s: the third attempt answers, after >= 1 s."""

        async def scenario(transport: Faulty, admin: AsyncClient) -> None:
            async def busy(request: httpx2.Request, number: int) -> httpx2.Response | None:
                if number == start + 1:
                    return httpx2.Response(503, json={"error": {"code": "unavailable"}})
                if number == start + 2:
                    return httpx2.Response(429, headers={"Retry-After": "1"})
                return None

            start = len(transport.seen)
            transport.before = busy
            began = time.monotonic()
            me = await admin.get_me()
            assert me.workspace_id is not None
            assert time.monotonic() - began >= 1.0
            assert len(transport.seen) - start == 3

        run_async(data_dir, scenario)

    def test_retries_are_bounded(self, data_dir: Path) -> None:
        """Past the attempts, the last refusal is raised; a Retry-After longer than the
        policy's longest wait is raised at once instead of waited for."""

        async def scenario(transport: Faulty, admin: AsyncClient) -> None:
            async def always(request: httpx2.Request, number: int) -> httpx2.Response:
                return httpx2.Response(502, text="bad gateway")

            start = len(transport.seen)
            transport.before = always
            with pytest.raises(ServerError) as gateway:
                await admin.get_me()
            assert gateway.value.status == 502
            assert gateway.value.code == "http_502"
            assert len(transport.seen) - start == FAST.attempts

            async def later(request: httpx2.Request, number: int) -> httpx2.Response:
                return httpx2.Response(
                    429,
                    headers={"Retry-After": "3600"},
                    json={"error": {"code": "rate_limited", "message": "slow", "request_id": "r"}},
                )

            start = len(transport.seen)
            transport.before = later
            with pytest.raises(RateLimitedError) as limited:
                await admin.get_me()
            assert (limited.value.code, limited.value.request_id) == ("rate_limited", "r")
            assert len(transport.seen) - start == 1

        run_async(data_dir, scenario)


def test_an_unreachable_server_raises_connection_failed_after_the_retries() -> None:
    """Nothing listens: every attempt fails to connect, then ConnectionFailedError."""
    with Client(f"http://127.0.0.1:{free_port()}", retry=FAST) as client:
        began = time.monotonic()
        with pytest.raises(ConnectionFailedError) as failed:
            client.get_health()
    assert failed.value.status == 0
    assert failed.value.code == "connection_failed"
    assert time.monotonic() - began < 10


# -- over a real socket ----------------------------------------------------------------


@pytest.fixture(scope="module")
def live_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``strongroom serve`` in its own process on a loopback port."""
    root = tmp_path_factory.mktemp("sdk-live")
    with serving(root / "data", free_port(), root / "serve.log") as url:
        yield url


class TestOverASocket:
    """Both clients against ``strongroom serve`` over TCP."""

    def test_sync_client_signs_in_and_works_in_a_workspace(self, live_url: str) -> None:
        """Device flow, workspace, backup, audit: all through the sync client."""
        with Client(live_url) as anonymous:
            admin = admin_in_new_workspace(anonymous, "live-sync@example.com")
            workspace_id = admin.get_me().workspace_id
            assert workspace_id is not None
            backup = admin.create_backup(workspace_id, "live", "manual")
            assert admin.get_backup(backup.id) == backup
            actions = [e.action for e in admin.list_audit_events.iterate(workspace_id)]
            assert "backup.create" in actions

    def test_async_client_over_the_socket(self, live_url: str) -> None:
        """The async client reads what the sync client wrote."""
        with Client(live_url) as anonymous:
            admin = admin_in_new_workspace(anonymous, "live-async@example.com")
            workspace_id = admin.get_me().workspace_id
            admin.create_backup(workspace_id or "", "seen", "manual")

        async def read() -> list[str]:
            async with AsyncClient(live_url, admin.token) as client:
                return [b.name async for b in client.list_backups.iterate(workspace_id or "")]

        assert asyncio.run(read()) == ["seen"]
