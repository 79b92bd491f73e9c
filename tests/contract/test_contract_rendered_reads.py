"""The read models of the two hot reads (``GET /v1/backups/{id}`` and a page of a
workspace's backups, with a session's bearer): the JSON a store renders is byte for byte
what the Python presenter writes of the same backup or page (so the ``ETag`` is the same
too), on every adapter; and the credential and permission checks are ``get``'s and
``list_in``'s, in their order, with their errors."""

from __future__ import annotations

import os
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import attrs
import pytest
from contract_records import T0, Adapter, api_key, backup, user, workspace
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

from strategies import (
    accepted_changes_for,
    any_retention_policies,
    backup_kinds,
    schedules,
    valid_names,
)
from strongroom.adapters.runtime.blocking import blocking
from strongroom.adapters.sql.catalog import Dialect, Q, queries_for
from strongroom.adapters.webkit.conventions import etag_of, etag_of_object
from strongroom.adapters.wire.present import render
from strongroom.domain.backups import (
    Backup,
    BackupChanges,
    BackupKind,
    BackupState,
    CustomerS3Destination,
    PostgresSource,
    S3Source,
    ServiceDestination,
    UnsupportedSource,
)
from strongroom.domain.errors import NotFoundError, StrongroomError, UnauthenticatedError
from strongroom.domain.pagination import Cursor, Page, PageRequest
from strongroom.domain.principals import Session
from strongroom.domain.tokens import TokenKind, format_token, hash_token
from strongroom.domain.workspaces import Membership
from strongroom.entrypoints.bootstrap import bootstrap
from strongroom.ports.driven.repositories import Rendered
from strongroom.ports.driving.access import Bearer

SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@attrs.frozen
class World:
    """A workspace with an admin's live session, a worker, and the facade over ``adapter``."""

    adapter: Adapter
    facade: Any
    workspace_id: UUID
    worker_id: UUID
    token: str
    admin: Any


def _session_token(adapter: Adapter, user_id: UUID, workspace_id: UUID, **changes: Any) -> str:
    token = format_token(TokenKind.SESSION, os.urandom(32))
    now = datetime.now(UTC)
    fields: dict[str, Any] = {"expires_at": now + timedelta(days=1), **changes}
    adapter.store(
        Session(uuid4(), hash_token(token), user_id, workspace_id, now, fields.pop("expires_at"))
    )
    if fields.get("revoked_at") is not None:
        with adapter.uow() as uow:
            found = uow.sessions.find(hash_token(token))
            uow.sessions.revoke(found.session.id, fields["revoked_at"])
            uow.commit()
    return token


@pytest.fixture
def world(adapter: Adapter) -> World:
    """A fresh world on each adapter."""
    ada = user()
    target = workspace(ada)
    adapter.store(ada, target, Membership(target.id, ada.id, "admin", T0))
    worker_id = uuid4()
    adapter.add_worker(target.id, worker_id)
    token = _session_token(adapter, ada.id, target.id)
    facade = blocking(bootstrap(uow=adapter.async_uow))
    admin = facade.access.authenticate(token)
    return World(adapter, facade, target.id, worker_id, token, admin)


def _rendered_get(world: World, backup_id: UUID) -> bytes:
    answer = world.facade.backups.get_rendered(Bearer(world.token), backup_id)
    assert isinstance(answer, Rendered)
    return answer.body


def _pages_agree(world: World, limit: int, pages: int) -> None:
    """Walk up to ``pages`` pages both ways: each rendered page equals the presented one."""
    after: Cursor | None = None
    for _ in range(pages):
        request = PageRequest(limit, after)
        expected: Page[Backup] = world.facade.backups.list_in(
            Bearer(world.token), world.workspace_id, request
        )
        answer = world.facade.backups.list_rendered(
            Bearer(world.token), world.workspace_id, request
        )
        assert isinstance(answer, Rendered)
        assert answer.body == render(expected)
        after = expected.next_cursor
        if after is None:
            return


unique_names = valid_names().map(lambda name: f"{name.strip()[:90]} {uuid4().hex[:8]}")


@SETTINGS
@given(data=st.data())
def test_a_backup_written_by_the_use_cases_renders_as_presented(
    world: World, data: st.DataObject
) -> None:
    """Every kind, configured or not, draft or active, paused or not: the body (and so the
    ETag) of the read model is the presenter's, and so is every page of the list."""
    # Everything drawn first: what the store already holds must not steer the draws. Names
    # are made unique: a name_taken refusal is not what this test is about.
    kind = data.draw(backup_kinds(), "kind")
    name = data.draw(unique_names, "name")
    changes = data.draw(
        accepted_changes_for(kind, names=unique_names, worker_ids=st.just(world.worker_id)),
        "changes",
    )
    paused = data.draw(st.booleans(), "paused")
    limit = data.draw(st.integers(1, 4), "limit")
    created = world.facade.backups.create(world.admin, world.workspace_id, name, kind)
    with suppress(StrongroomError):  # an endpoint refused: the draft stays
        world.facade.backups.update(world.admin, created.id, changes)
    if paused:
        world.facade.backups.pause(world.admin, created.id)
    backup = world.facade.backups.get(Bearer(world.token), created.id)
    body = _rendered_get(world, created.id)
    assert body == render(backup)
    assert etag_of(body) == etag_of_object(backup)
    _pages_agree(world, limit, 3)


# Text that the presenter must escape, or carry as it is: quotes, backslashes, control
# characters, non-ASCII and astral characters (no NUL: PostgreSQL text cannot hold it).
awkward_text = st.text(
    st.characters(exclude_characters="\x00", exclude_categories=("Cs",))
    | st.sampled_from('"\\/\n\t\x1f\x7f\u2028é😀'),
    min_size=1,
    max_size=12,
)
# Endpoints are http(s) URLs (the reading adapter checks them); their paths may be awkward.
awkward_endpoints = st.builds(
    "{}/{}".format,
    st.sampled_from(["https://s3.example.com", "http://10.0.0.9:9000", "https://[::1]:9000"]),
    st.text(
        st.characters(exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp", "Cf", "Co", "Cn"))
        | st.sampled_from('"\\/é😀'),
        max_size=8,
    ),
)
instants = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)


@st.composite
def stored_backups(draw: st.DrawFn, workspace_id: UUID, worker_id: UUID) -> Backup:
    """Any backup a store may hold, beyond what the use cases write today: awkward text in
    every string, any instant to the microsecond, sources of unknown types."""
    location = {
        "endpoint": awkward_endpoints,
        "bucket": awkward_text,
        "prefix": st.none() | awkward_text,
    }
    source = draw(
        st.none()
        | st.builds(S3Source, **location)
        | st.builds(
            PostgresSource, host=awkward_text, port=st.integers(1, 65_535), database=awkward_text
        )
        | st.builds(
            UnsupportedSource, awkward_text.filter(lambda tag: tag not in ("s3", "postgres"))
        )
    )
    return Backup(
        id=uuid4(),
        workspace_id=workspace_id,
        name=f"{draw(awkward_text)} {uuid4().hex[:8]}",  # names are unique in a workspace
        kind=draw(backup_kinds()),
        state=draw(st.sampled_from(BackupState)),
        paused=draw(st.booleans()),
        source=source,
        sealed_credentials=draw(st.none() | st.just(b"sealed")),
        schedule=draw(st.none() | schedules()),
        worker_id=draw(st.none() | st.just(worker_id)),
        retention=draw(st.none() | any_retention_policies()),
        destination=draw(
            st.just(ServiceDestination()) | st.builds(CustomerS3Destination, **location)
        ),
        sealed_destination_credentials=draw(st.none() | st.just(b"sealed")),
        next_run_at=draw(st.none() | instants),
        created_at=draw(instants),
        updated_at=draw(instants),
    )


@SETTINGS
@given(data=st.data())
def test_any_stored_backup_renders_as_presented(world: World, data: st.DataObject) -> None:
    """Backups stored as they are (awkward text, instants to the microsecond, every
    duration): rendered by the store, their bodies and pages are the presenter's."""
    backup = data.draw(stored_backups(world.workspace_id, world.worker_id), "backup")
    limit = data.draw(st.integers(1, 3), "limit")
    world.adapter.store(backup)
    assert _rendered_get(world, backup.id) == render(
        world.facade.backups.get(Bearer(world.token), backup.id)
    )
    _pages_agree(world, limit, 2)


@SETTINGS
@given(data=st.data())
def test_a_changed_backup_renders_as_changed(world: World, data: st.DataObject) -> None:
    """A backup read, then changed and read again after each change: renamed, PATCHed
    (schedule, retention, source, destination, worker), paused and resumed, its next slot
    moved by the scheduler's compare-and-set. Each body (and page) is the presenter's of
    the backup as it now is: in both SQL dialects the body is a column rendered when the
    row is written (PostgreSQL's generated column, SQLite's triggers), so every write path
    must render it again."""
    kind = data.draw(backup_kinds(), "kind")
    name, rename = data.draw(unique_names, "name"), data.draw(unique_names, "rename")
    changes = data.draw(
        st.lists(
            accepted_changes_for(kind, names=unique_names, worker_ids=st.just(world.worker_id)),
            min_size=1,
            max_size=3,
        ),
        "changes",
    )
    slot = data.draw(instants, "slot")
    facade, admin, own = world.facade, world.admin, Bearer(world.token)
    created = facade.backups.create(admin, world.workspace_id, name, kind)

    def agrees() -> Backup:
        backup = facade.backups.get(own, created.id)
        assert _rendered_get(world, created.id) == render(backup)
        _pages_agree(world, 50, 1)
        return backup

    agrees()
    facade.backups.update(admin, created.id, BackupChanges(name=rename))
    assert agrees().name == rename.strip()
    for change in changes:
        with suppress(StrongroomError):  # an endpoint refused: the backup stays as it was
            facade.backups.update(admin, created.id, change)
        agrees()
    facade.backups.pause(admin, created.id)
    assert agrees().paused
    facade.backups.resume(admin, created.id)
    current = agrees()
    assert not current.paused
    if current.next_run_at is None:  # a slot to advance, written as a repository writes it
        with world.adapter.uow() as uow:
            uow.backups.update(attrs.evolve(current, next_run_at=slot))
            uow.commit()
        current = agrees()
    assert current.next_run_at is not None
    following = current.next_run_at + timedelta(days=1, microseconds=1_001)
    with world.adapter.uow() as uow:
        assert uow.backups.advance_schedule(
            world.workspace_id, created.id, current.next_run_at, following
        )
        uow.commit()
    assert agrees().next_run_at == following


def _outcome(call: Any) -> tuple[Any, ...]:
    """What a read answers: its body as the wire shows it, or its error."""
    try:
        result = call()
    except StrongroomError as error:
        return type(error), error.message
    return ("body", result.body if isinstance(result, Rendered) else render(result))


def test_the_read_models_refuse_as_the_reads_do(world: World) -> None:
    """Unknown, revoked or expired sessions, another workspace's person, a backup of none:
    the read models answer what ``get`` and ``list_in`` answer (the same body, or the same
    error and message); callers other than a session's bearer get those reads' objects."""
    adapter, facade = world.adapter, world.facade
    mine = facade.backups.create(world.admin, world.workspace_id, "Mine", BackupKind.MANUAL)
    bob = user()
    other = workspace(bob)
    adapter.store(bob, other, Membership(other.id, bob.id, "viewer", T0))
    theirs = backup(other.id)
    adapter.store(theirs)
    now = datetime.now(UTC)
    bearers = [
        Bearer(format_token(TokenKind.SESSION, os.urandom(32))),
        Bearer(world.token),
        Bearer(_session_token(adapter, bob.id, other.id)),
        Bearer(_session_token(adapter, bob.id, other.id, revoked_at=now)),
        Bearer(_session_token(adapter, bob.id, other.id, expires_at=now - timedelta(seconds=1))),
    ]
    outcomes = set()
    request = PageRequest(10, None)
    for bearer in bearers:
        for backup_id in (mine.id, theirs.id, uuid4()):
            got = _outcome(lambda: facade.backups.get(bearer, backup_id))  # noqa: B023
            assert _outcome(lambda: facade.backups.get_rendered(bearer, backup_id)) == got  # noqa: B023
            outcomes.add(got[0])
        for workspace_id in (world.workspace_id, other.id, uuid4()):
            listed = _outcome(lambda: facade.backups.list_in(bearer, workspace_id, request))  # noqa: B023
            rendered = _outcome(
                lambda: facade.backups.list_rendered(bearer, workspace_id, request)  # noqa: B023
            )
            assert rendered == listed
            outcomes.add(listed[0])
    assert outcomes >= {"body", UnauthenticatedError, NotFoundError}
    own = Bearer(world.token)
    missing = uuid4()
    assert _outcome(lambda: facade.backups.get_rendered(own, missing)) == _outcome(
        lambda: facade.backups.get(own, missing)
    )
    key_token = format_token(TokenKind.API_KEY, os.urandom(32))
    adapter.store(api_key(world.workspace_id, token_hash=hash_token(key_token)))
    by_key = Bearer(key_token)
    assert facade.backups.get_rendered(by_key, mine.id) == facade.backups.get(by_key, mine.id)
    request = PageRequest(10, None)
    assert facade.backups.list_rendered(by_key, world.workspace_id, request) == (
        facade.backups.list_in(by_key, world.workspace_id, request)
    )


def test_a_session_revoked_after_a_read_is_refused_at_the_next(world: World) -> None:
    """The session's grant is decoded once per distinct row (an adapter may keep it), but
    the database is asked at every read: a revocation between two reads refuses the second."""
    facade = world.facade
    mine = facade.backups.create(world.admin, world.workspace_id, "Mine", BackupKind.MANUAL)
    own = Bearer(world.token)
    request = PageRequest(10, None)
    for _ in range(2):  # twice: the second read finds whatever the first one kept
        assert _rendered_get(world, mine.id) == render(facade.backups.get(own, mine.id))
        assert isinstance(facade.backups.list_rendered(own, world.workspace_id, request), Rendered)
    with world.adapter.uow() as uow:
        found = uow.sessions.find(hash_token(world.token))
        uow.sessions.revoke(found.session.id, datetime.now(UTC))
        uow.commit()
    with pytest.raises(UnauthenticatedError):
        facade.backups.get_rendered(own, mine.id)
    with pytest.raises(UnauthenticatedError):
        facade.backups.list_rendered(own, world.workspace_id, request)


def test_the_postgres_read_models_fit_psycopgs_parse_cache() -> None:
    """psycopg parses a statement's text again at every execution when it is longer than
    its cache's limit (a sixth of a GET's CPU): both read models stay under it."""
    queries = queries_for(Dialect.POSTGRES)
    for statement, filters in (
        (Q.SESSION_FIND_WITH_BACKUP_BODY, []),
        (Q.SESSION_FIND_WITH_BACKUPS_BODY, [Q.FILTER_BACKUP_AFTER]),
    ):
        assert len(queries.text(statement, filters).encode()) <= MAX_CACHED_STATEMENT_LENGTH


def test_full_pages_keep_the_list_order(world: World) -> None:
    """Pages of 50 and of 7 over 120 backups created in scrambled order (some in the same
    millisecond): every item in the presenter's order, every cursor the same."""
    created = [
        backup(world.workspace_id, created_at=T0 + timedelta(microseconds=(n * 7919) % 120 * 300))
        for n in range(120)
    ]
    world.adapter.store(*created)
    for limit in (50, 7):
        _pages_agree(world, limit, 20)
