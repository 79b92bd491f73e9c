"""The catalog of named SQL queries, read from the package's ``queries/*.sql`` files.

``common.sql`` holds what both dialects run word for word; ``sqlite.sql`` and
``postgres.sql`` hold what differs (row locks, the readiness probe). Queries are written
with ``:name`` parameters, SQLite's own style; for psycopg they become ``%(name)s``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from functools import cache
from importlib.resources import files

_NAME_LINE = re.compile(r"^--\s*name:\s*(?P<name>[a-z_][a-z0-9_]*)\s*$")
_PARAMETER = re.compile(r"(?<![:\w]):(?P<name>[A-Za-z_]\w*)")
FILTERS_MARKER = "/*filters*/"
LOCK_MARKER = "/*lock*/"
# A claim's lock: the rows of one table, skipping rows another transaction holds.
SKIP_LOCK_MARKER = re.compile(r"/\*lock of (?P<table>\w+), skip locked\*/")
# A named fragment's text, put in place (the expression of a backup's JSON, say).
FRAGMENT_MARKER = re.compile(r"/\*fragment (?P<name>[a-z_]+)\*/")


class Dialect(StrEnum):
    """The SQL dialects Strongroom speaks."""

    SQLITE = "sqlite"
    POSTGRES = "postgres"


class Q(StrEnum):
    """Every named query (and ``filter_*`` fragment) the repositories run."""

    PING = "ping"
    WORKSPACE_INSERT = "workspace_insert"
    WORKSPACE_GET = "workspace_get"
    WORKSPACE_GET_COUNTED = "workspace_get_counted"
    WORKSPACE_UPDATE = "workspace_update"
    WORKSPACE_DELETE = "workspace_delete"
    WORKSPACE_COUNT_CREATED_BY = "workspace_count_created_by"
    MEMBERSHIP_INSERT = "membership_insert"
    MEMBERSHIP_GET = "membership_get"
    MEMBERSHIP_LIST_FOR_USER = "membership_list_for_user"
    FILTER_MEMBERSHIP_AFTER = "filter_membership_after"
    MEMBERSHIP_COUNT = "membership_count"
    MEMBERSHIP_LIST_MEMBERS = "membership_list_members"
    FILTER_MEMBER_AFTER = "filter_member_after"
    MEMBERSHIP_UPDATE = "membership_update"
    MEMBERSHIP_DELETE = "membership_delete"
    MEMBERSHIP_COUNT_ROLE = "membership_count_role"
    USER_INSERT = "user_insert"
    USER_GET = "user_get"
    USER_GET_BY_SUBJECT = "user_get_by_subject"
    SESSION_INSERT = "session_insert"
    SESSION_GRANT_COLUMNS = "session_grant_columns"
    SESSION_GRANT_JOINS = "session_grant_joins"
    SESSION_FIND = "session_find"
    SESSION_FIND_WITH_BACKUP = "session_find_with_backup"
    SESSION_FIND_WITH_BACKUPS = "session_find_with_backups"
    SESSION_FIND_WITH_WORKSPACE = "session_find_with_workspace"
    SESSION_FIND_WITH_BACKUP_BODY = "session_find_with_backup_body"
    SESSION_FIND_WITH_BACKUPS_BODY = "session_find_with_backups_body"
    SESSION_REVOKE = "session_revoke"
    SESSION_ORIGIN = "session_origin"
    SESSION_REVOKE_FROM = "session_revoke_from"
    BACKUP_COLUMNS = "backup_columns"
    BACKUP_INSERT_COLUMNS = "backup_insert_columns"
    BACKUP_INSERT_VALUES = "backup_insert_values"
    BACKUP_INSERT = "backup_insert"
    BACKUP_INSERT_COUNTED = "backup_insert_counted"
    BACKUP_CREATE_COUNTED = "backup_create_counted"
    BACKUP_GET = "backup_get"
    BACKUP_UPDATE = "backup_update"
    BACKUP_DELETE = "backup_delete"
    BACKUP_LIST = "backup_list"
    FILTER_BACKUP_AFTER = "filter_backup_after"
    FILTER_BACKUP_WORKER = "filter_backup_worker"
    BACKUP_COUNT = "backup_count"
    BACKUP_DUE = "backup_due"
    BACKUP_ADVANCE_SCHEDULE = "backup_advance_schedule"
    BACKUP_DRILL_DUE = "backup_drill_due"
    BACKUP_ADVANCE_DRILL = "backup_advance_drill"
    RUN_INSERT = "run_insert"
    RUN_GET = "run_get"
    RUN_UPDATE = "run_update"
    RUN_LIST_FOR_BACKUP = "run_list_for_backup"
    RUN_NEXT_QUEUED = "run_next_queued"
    RUN_NEXT_QUEUED_CLOUD = "run_next_queued_cloud"
    RUN_LEASE_EXPIRED = "run_lease_expired"
    RUN_LEFT_MANUAL = "run_left_manual"
    RUN_OPEN_EXISTS = "run_open_exists"
    RUN_ANNOUNCE = "run_announce"
    RUN_WORKERS_WITH_QUEUED = "run_workers_with_queued"
    FILTER_RUN_STATE = "filter_run_state"
    FILTER_RUN_AFTER = "filter_run_after"
    RESTORE_INSERT = "restore_insert"
    RESTORE_GET = "restore_get"
    RESTORE_UPDATE = "restore_update"
    RESTORE_NEXT_QUEUED = "restore_next_queued"
    RESTORE_LEASE_EXPIRED = "restore_lease_expired"
    ARTIFACT_GET_MANY = "artifact_get_many"
    ARTIFACT_LOCK_UNTIL = "artifact_lock_until"
    RUN_REFERENCES_ADD = "run_references_add"
    RUN_REFERENCES_OF_BACKUP = "run_references_of_backup"
    RUN_REFERENCES_REFERRERS = "run_references_referrers"
    DRILL_INSERT = "drill_insert"
    DRILL_GET = "drill_get"
    DRILL_UPDATE = "drill_update"
    DRILL_NEXT_QUEUED = "drill_next_queued"
    DRILL_LIST_FOR_BACKUP = "drill_list_for_backup"
    DRILL_STARTED_BEFORE = "drill_started_before"
    DRILL_OPEN_EXISTS = "drill_open_exists"
    FILTER_DRILL_AFTER = "filter_drill_after"
    ARTIFACT_MANIFEST_INSERT = "artifact_manifest_insert"
    ARTIFACT_MANIFEST_GET = "artifact_manifest_get"
    ARTIFACT_INSERT = "artifact_insert"
    ARTIFACT_GET = "artifact_get"
    ARTIFACT_UPDATE = "artifact_update"
    ARTIFACT_FIND_IN_RUN = "artifact_find_in_run"
    ARTIFACT_LIST_FOR_RUN = "artifact_list_for_run"
    ARTIFACT_LIST = "artifact_list"
    FILTER_ARTIFACT_DELETED = "filter_artifact_deleted"
    FILTER_ARTIFACT_NOT_DELETED = "filter_artifact_not_deleted"
    FILTER_ARTIFACT_AFTER = "filter_artifact_after"
    ARTIFACT_COUNT_AVAILABLE = "artifact_count_available"
    ARTIFACT_ANY_LOCKED = "artifact_any_locked"
    FILTER_ARTIFACT_BACKUP = "filter_artifact_backup"
    FILTER_ARTIFACT_STORAGE = "filter_artifact_storage"
    ARTIFACT_STORAGE_BYTES = "artifact_storage_bytes"
    FILTER_ARTIFACT_PENDING = "filter_artifact_pending"
    ARTIFACT_EXPIRED = "artifact_expired"
    ARTIFACT_TO_VERIFY = "artifact_to_verify"
    FILTER_ARTIFACT_VERIFIED_BEFORE = "filter_artifact_verified_before"
    RETENTION_RULED_BACKUPS = "retention_ruled_backups"
    RETENTION_FINISHED_RUNS = "retention_finished_runs"
    RETENTION_AVAILABLE_ARTIFACTS = "retention_available_artifacts"
    RETENTION_REFERENCES = "retention_references"
    RETENTION_REFERENCE_INSERT = "retention_reference_insert"
    RETENTION_LOCK_ARTIFACTS = "retention_lock_artifacts"
    RETENTION_LOCK_RUNS = "retention_lock_runs"
    RETENTION_STORE_ARTIFACTS = "retention_store_artifacts"
    RETENTION_STORE_RUNS = "retention_store_runs"
    WORKER_INSERT = "worker_insert"
    WORKER_EXISTS = "worker_exists"
    WORKER_GET = "worker_get"
    WORKER_FIND = "worker_find"
    WORKER_FIND_MANY = "worker_find_many"
    WORKER_UPDATE = "worker_update"
    WORKER_TOUCH = "worker_touch"
    WORKER_TOUCH_MANY = "worker_touch_many"
    WORKER_DELETE = "worker_delete"
    WORKER_LIST = "worker_list"
    FILTER_WORKER_AFTER = "filter_worker_after"
    WORKER_COUNT = "worker_count"
    API_KEY_INSERT = "api_key_insert"
    API_KEY_GET = "api_key_get"
    API_KEY_FIND = "api_key_find"
    API_KEY_TOUCH = "api_key_touch"
    API_KEY_DELETE = "api_key_delete"
    API_KEY_LIST = "api_key_list"
    FILTER_API_KEY_AFTER = "filter_api_key_after"
    API_KEY_COUNT = "api_key_count"
    ROLE_INSERT = "role_insert"
    ROLE_GET = "role_get"
    ROLE_LIST = "role_list"
    ROLE_UPDATE = "role_update"
    ROLE_DELETE = "role_delete"
    INVITATION_INSERT = "invitation_insert"
    INVITATION_GET = "invitation_get"
    INVITATION_GET_FOR_EMAIL = "invitation_get_for_email"
    INVITATION_UPDATE = "invitation_update"
    INVITATION_LIST = "invitation_list"
    FILTER_INVITATION_AFTER = "filter_invitation_after"
    INVITATION_COUNT_PENDING = "invitation_count_pending"
    FILTER_INVITATION_ROLE = "filter_invitation_role"
    AUDIT_INSERT = "audit_insert"
    AUDIT_INSERT_MANY = "audit_insert_many"
    AUDIT_INSERT_IF_BACKUP = "audit_insert_if_backup"
    AUDIT_LIST = "audit_list"
    FILTER_AUDIT_ACTION = "filter_audit_action"
    FILTER_AUDIT_ACTOR = "filter_audit_actor"
    FILTER_AUDIT_SINCE = "filter_audit_since"
    FILTER_AUDIT_AFTER = "filter_audit_after"
    IDEMPOTENCY_RESERVE = "idempotency_reserve"
    IDEMPOTENCY_GET = "idempotency_get"
    IDEMPOTENCY_COMPLETE = "idempotency_complete"
    IDEMPOTENCY_PURGE = "idempotency_purge"
    ACCOUNT_INSERT = "account_insert"
    ACCOUNT_GET = "account_get"
    ACCOUNT_GET_BY_EMAIL = "account_get_by_email"
    FAILED_LOGIN_INSERT = "failed_login_insert"
    FAILED_LOGIN_RECENT = "failed_login_recent"
    FAILED_LOGIN_RECENT_BY_ADDRESS = "failed_login_recent_by_address"
    FAILED_LOGIN_PURGE = "failed_login_purge"
    DEVICE_GRANT_INSERT = "device_grant_insert"
    DEVICE_GRANT_COLUMNS = "device_grant_columns"
    DEVICE_GRANT_BY_DEVICE_CODE = "device_grant_by_device_code"
    DEVICE_GRANT_BY_USER_CODE = "device_grant_by_user_code"
    DEVICE_GRANT_BY_ACCESS_TOKEN = "device_grant_by_access_token"  # noqa: S105 (a name)
    DEVICE_GRANT_UPDATE = "device_grant_update"
    STATISTICS_RUNS_BY_STATE = "statistics_runs_by_state"
    STATISTICS_ARTIFACTS_BY_STATE = "statistics_artifacts_by_state"
    STATISTICS_ARTIFACTS_BY_VERIFICATION = "statistics_artifacts_by_verification"
    STATISTICS_WORKSPACE_STORAGE_BYTES = "statistics_workspace_storage_bytes"
    HEALTH_FACTS = "health_facts"
    FILTER_HEALTH_WORKSPACE = "filter_health_workspace"
    HEALTH_INSERT = "health_insert"
    HEALTH_UPDATE = "health_update"
    HEALTH_MAILED = "health_mailed"
    HEALTH_COUNTS = "health_counts"
    WEBHOOK_INSERT = "webhook_insert"
    WEBHOOK_GET = "webhook_get"
    WEBHOOK_LIST = "webhook_list"
    FILTER_WEBHOOK_AFTER = "filter_webhook_after"
    WEBHOOK_IN_WORKSPACE = "webhook_in_workspace"
    WEBHOOK_UPDATE = "webhook_update"
    WEBHOOK_DELETE = "webhook_delete"
    DELIVERY_INSERT = "delivery_insert"
    DELIVERY_COLUMNS = "delivery_columns"
    DELIVERY_GET = "delivery_get"
    DELIVERY_LIST = "delivery_list"
    FILTER_DELIVERY_AFTER = "filter_delivery_after"
    DELIVERY_UPDATE = "delivery_update"
    DELIVERY_TAKE = "delivery_take"


class QueryFileError(Exception):
    """A query file is malformed, or the files do not define exactly the queries of ``Q``."""


def parse_queries(text: str, source: str) -> dict[str, str]:
    """The named queries of one file, full-line comments and blank lines dropped."""
    queries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        named = _NAME_LINE.match(line.strip())
        if named is not None:
            name = named["name"]
            if name in queries:
                raise QueryFileError(f"{source}: query {name} is defined twice")
            current = queries[name] = []
        elif line.strip().startswith("--") or not line.strip():
            continue
        elif current is None:
            raise QueryFileError(f"{source}: SQL before the first '-- name:' line")
        else:
            current.append(line.rstrip())
    return {name: "\n".join(lines) for name, lines in queries.items()}


def _read(file_name: str) -> dict[str, str]:
    resource = files("strongroom.adapters.sql").joinpath("queries", file_name)
    return parse_queries(resource.read_text(encoding="utf-8"), file_name)


def to_pyformat(text: str) -> str:
    """``:name`` parameters as psycopg's ``%(name)s`` (and literal ``%`` doubled)."""
    return _PARAMETER.sub(r"%(\g<name>)s", text.replace("%", "%%"))


class Queries:
    """The query texts of one dialect, by name, in the driver's parameter style."""

    def __init__(self, dialect: Dialect, texts: Mapping[str, str]) -> None:
        self.dialect = dialect
        self._texts = dict(texts)
        self._compiled: dict[tuple[Q, tuple[Q, ...], bool], str] = {}

    def raw(self, name: Q) -> str:
        """The text as written in the file (``:name`` parameters)."""
        return self._texts[name]

    def text(self, name: Q, filters: Sequence[Q] = (), *, lock: bool = False) -> str:
        """The text to run, with ``filters`` fragments put at its ``/*filters*/`` marker and,
        when ``lock``, the dialect's row lock at its ``/*lock*/`` marker."""
        key = (name, tuple(filters), lock)
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = self._compile(name, key[1], lock)
            self._compiled[key] = compiled
        return compiled

    def _compile(self, name: Q, filters: tuple[Q, ...], lock: bool) -> str:
        text = self._texts[name].replace(LOCK_MARKER, _ROW_LOCK[self.dialect] if lock else "")
        text = FRAGMENT_MARKER.sub(lambda marker: self._texts[marker["name"]], text)
        text = SKIP_LOCK_MARKER.sub(
            lambda marker: _skip_lock(self.dialect, marker["table"]) if lock else "", text
        )
        if FILTERS_MARKER in text:
            text = text.replace(FILTERS_MARKER, " ".join(self._texts[f] for f in filters))
        elif filters:
            raise ValueError(f"query {name} takes no filters")
        return to_pyformat(text) if self.dialect is Dialect.POSTGRES else text


# What the lock marker of a read asked to lock becomes: a row lock on PostgreSQL; nothing on
# SQLite, whose unit of work holds the database's one writer from its first lock or write.
_ROW_LOCK = {Dialect.POSTGRES: "FOR NO KEY UPDATE", Dialect.SQLITE: ""}


def _skip_lock(dialect: Dialect, table: str) -> str:
    """What ``/*lock of T, skip locked*/`` becomes in a read asked to lock: on PostgreSQL a
    row lock on ``T``'s rows that passes over rows locked by others (concurrent claimers
    never wait for, nor take, the same run); nothing on SQLite (the one writer)."""
    return f"{_ROW_LOCK[dialect]} OF {table} SKIP LOCKED" if dialect is Dialect.POSTGRES else ""


@cache
def queries_for(dialect: Dialect) -> Queries:
    """Every query of ``dialect``: ``common.sql`` plus the dialect's own file."""
    common = _read("common.sql")
    own = _read(f"{dialect.value}.sql")
    twice = sorted(set(common) & set(own))
    if twice:
        raise QueryFileError(f"{dialect}: defined both in common.sql and its own file: {twice}")
    texts = {**common, **own}
    missing = sorted(set(Q) - set(texts))
    unknown = sorted(set(texts) - set(Q))
    if missing or unknown:
        raise QueryFileError(f"{dialect}: missing queries {missing}, unknown queries {unknown}")
    return Queries(dialect, texts)
