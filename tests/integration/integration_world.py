"""Helpers of the HTTP integration tests: people signed in over HTTP, and a look at the
database that bypasses the service (and any proxy in front of it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote
from uuid import UUID, uuid4

import attrs
import httpx2
import psycopg

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.runtime.blocking import blocking
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.system import SecureIds, SystemClock
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driving import Strongroom
from support.postgres import PostgresServer, scratch_database
from support.seaweed import SeaweedServer
from support.world import FAST_HASHER, PASSWORD, bearer, idp_access_token

# The service under test and the test's own facade share this key (and the database).
SECRET_KEY = "integration-tests-secret-key-0123456789abcdef"


def postgres_url(conninfo: str) -> str:
    """``postgresql://user[:password]@host:port/dbname`` for a conninfo string, the only
    form ``STRONGROOM_DATABASE_URL`` takes."""
    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    user = quote(str(params.get("user") or "postgres"), safe="")
    password = params.get("password")
    credentials = user if password is None else f"{user}:{quote(str(password), safe='')}"
    host = params.get("host") or "127.0.0.1"
    port = params.get("port") or 5432
    dbname = quote(str(params.get("dbname") or "postgres"), safe="")
    return f"postgresql://{credentials}@{host}:{port}/{dbname}"


@contextmanager
def on_postgres_and_seaweed(
    pg_server: PostgresServer, seaweed: SeaweedServer, bucket: str, prefix: str
) -> Iterator[dict[str, str]]:
    """The settings of a ``strongroom serve`` on a migrated scratch database (named from
    ``prefix``, dropped at the end) that stores in ``bucket`` on ``seaweed``."""
    with scratch_database(pg_server, prefix=prefix) as conninfo:
        with PostgresDatabase.from_url(conninfo, min_size=0) as database:
            database.migrate()
        yield {
            "STRONGROOM_DATABASE_URL": postgres_url(conninfo),
            "STRONGROOM_SECRET_KEY": SECRET_KEY,
            "STRONGROOM_S3_ENDPOINT": seaweed.endpoint,
            "STRONGROOM_S3_ACCESS_KEY": seaweed.access_key,
            "STRONGROOM_S3_SECRET_KEY": seaweed.secret_key,
            "STRONGROOM_S3_BUCKET": bucket,
        }


def setup_facade(database: PostgresDatabase) -> Any:
    """A blocking view of a facade on ``database``, for set-up the API does not offer
    (identity-provider accounts and tokens, operator quotas): argon2 tuned down so sign-ins
    are quick. ``unwrapped(view)`` is the async facade, to serve."""
    clock, ids = SystemClock(), SecureIds()
    identity = BuiltinIdentityProvider(uow=database.uow, clock=clock, ids=ids, hasher=FAST_HASHER)
    return blocking(
        bootstrap(uow=database.uow, clock=clock, ids=ids, identity=identity, secret_key=SECRET_KEY)
    )


def unique_email(prefix: str = "person") -> str:
    """An address nobody else in this database has."""
    return f"{prefix}-{uuid4().hex[:12]}@example.com"


def expect(response: httpx2.Response, status: int) -> dict[str, Any]:
    """The JSON body of a response that must have ``status``."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


def error_code(response: httpx2.Response) -> str:
    """The ``error.code`` of an error response (a marker if it is not the API's envelope)."""
    try:
        code: str = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return f"<not an API error: {response.text[:200]!r}>"
    return code


@attrs.frozen
class Tenant:
    """An admin's session, scoped to a workspace of their own."""

    email: str
    token: str
    workspace_id: UUID

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)

    @property
    def backups_path(self) -> str:
        return f"/v1/workspaces/{self.workspace_id}/backups"

    def create_backup(
        self, client: httpx2.Client, name: str, headers: dict[str, str] | None = None
    ) -> httpx2.Response:
        """``POST /v1/workspaces/{wid}/backups`` of a manual backup."""
        return client.post(
            self.backups_path,
            json={"name": name, "kind": "manual"},
            headers={**self.headers, **(headers or {})},
        )

    def backup_names(self, client: httpx2.Client) -> list[str]:
        """The names of every backup of the workspace (one page holds them all here)."""
        listing = expect(
            client.get(self.backups_path, params={"limit": "200"}, headers=self.headers), 200
        )
        assert listing["next_cursor"] is None
        return [item["name"] for item in listing["data"]]


def sign_in(client: httpx2.Client, facade: Strongroom, email: str) -> str:
    """An unscoped session for ``email``, from ``POST /v1/auth/sessions``."""
    access_token = idp_access_token(facade, email)
    session = expect(client.post("/v1/auth/sessions", headers=bearer(access_token)), 201)
    token: str = session["token"]
    return token


def new_tenant(client: httpx2.Client, facade: Strongroom, name: str = "Acme") -> Tenant:
    """A new person who creates a workspace over HTTP and switches to it."""
    email = unique_email()
    token = sign_in(client, facade, email)
    created = expect(client.post("/v1/workspaces", json={"name": name}, headers=bearer(token)), 201)
    workspace_id = UUID(created["id"])
    switched = expect(
        client.post(
            "/v1/auth/switch", json={"workspace_id": str(workspace_id)}, headers=bearer(token)
        ),
        201,
    )
    return Tenant(email, switched["token"], workspace_id)


@contextmanager
def direct(conninfo: str) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    """An autocommit connection straight to the database, for looking at what was stored."""
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as connection:
        yield connection


def stored_backups(conninfo: str, workspace_id: UUID) -> dict[str, UUID]:
    """The backups of a workspace as stored: name to id."""
    with direct(conninfo) as connection:
        rows = connection.execute(
            "SELECT name, id FROM backups WHERE workspace_id = %s", (workspace_id,)
        ).fetchall()
    return dict(rows)


def events(conninfo: str, workspace_id: UUID, action: str) -> list[UUID]:
    """The targets of the workspace's successful audit events of ``action``, as stored."""
    with direct(conninfo) as connection:
        rows = connection.execute(
            "SELECT target_id FROM audit_events"
            " WHERE workspace_id = %s AND action = %s AND outcome = 'success'",
            (workspace_id, action),
        ).fetchall()
    return [UUID(target) for (target,) in rows]


def created_events(conninfo: str, workspace_id: UUID) -> list[UUID]:
    """The targets of the workspace's ``backup.create`` audit events, as stored."""
    return events(conninfo, workspace_id, "backup.create")


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def sign_up_and_in(client: httpx2.Client, email: str) -> str:
    """Sign up, then the device flow over HTTP, then ``POST /v1/auth/sessions``: a session."""
    signed_up = expect(
        client.post(
            "/idp/signup", data={"email": email, "password": PASSWORD, "name": "Ada"}, headers=FORM
        ),
        201,
    )
    assert signed_up["email"] == email
    config = expect(client.get("/v1/auth/cli/config"), 200)
    authorization = expect(
        client.post("/idp/device/code", data={"client_id": config["client_id"]}, headers=FORM),
        200,
    )
    approval = client.post(
        "/idp/device",
        data={
            "user_code": authorization["user_code"],
            "email": email,
            "password": PASSWORD,
            "decision": "approve",
        },
        headers={**FORM, "Accept": "application/json"},
    )
    assert expect(approval, 200) == {"status": "approved"}
    issued = expect(
        client.post(
            "/idp/token",
            data={
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                "device_code": authorization["device_code"],
                "client_id": config["client_id"],
            },
            headers=FORM,
        ),
        200,
    )
    session = expect(client.post("/v1/auth/sessions", headers=bearer(issued["access_token"])), 201)
    assert session["user"]["email"] == email
    token: str = session["token"]
    return token


def workspace_admin(client: httpx2.Client, email: str) -> tuple[dict[str, Any], str]:
    """Sign ``email`` up and in, create a workspace and switch to it: the workspace and
    the scoped session token."""
    token = sign_up_and_in(client, email)
    workspace: dict[str, Any] = expect(
        client.post("/v1/workspaces", json={"name": "Acme"}, headers=bearer(token)), 201
    )
    switched = expect(
        client.post(
            "/v1/auth/switch", json={"workspace_id": workspace["id"]}, headers=bearer(token)
        ),
        201,
    )
    scoped: str = switched["token"]
    return workspace, scoped
