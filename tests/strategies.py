"""Shared hypothesis strategies, and the contract's kind rules as tests see them.

Domain-level strategies build the domain's own values (``Duration``, ``RetentionPolicy``,
``BackupChanges``...); HTTP-level strategies build JSON ``PATCH /v1/backups/{bid}`` bodies
in the contract's field shapes (section 5 and 10), for the HTTP tests to reuse.

Every strategy is written from the contract, never from the code under test: valid
durations are spelled from their parts and carry the number of seconds they mean, names
carry the trimmed form the service must store, and ``kind_rule_violation`` restates the
kind rules of api-spec section 2 and contract sections 5 and 10.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
from hypothesis import strategies as st

from strongroom.domain.backups import (
    UNSET,
    Backup,
    BackupChanges,
    BackupKind,
    CustomerS3Destination,
    Destination,
    PostgresSource,
    RetentionPolicy,
    S3Source,
    Schedule,
    ServiceDestination,
    Source,
    UnsupportedSource,
)
from strongroom.domain.durations import Duration
from strongroom.domain.permissions import Permission

# --------------------------------------------------------------------------- names

MAX_NAME = 100
# What ``str.strip`` removes at the ends; the contract trims names before checking them.
PADDING = st.text(st.sampled_from(" \t\n\r\u00a0\u2003\u3000"), max_size=3)
_NAME_CHARACTERS = st.characters(exclude_categories=("Cc", "Cs"))


def _core_names(min_size: int, max_size: int) -> st.SearchStrategy[str]:
    """Names with no whitespace at either end and no control character."""
    return st.text(_NAME_CHARACTERS, min_size=min_size, max_size=max_size).filter(
        lambda text: text == text.strip() and min_size <= len(text)
    )


def names_with_cleaned() -> st.SearchStrategy[tuple[str, str]]:
    """``(raw, stored)``: an acceptable raw name (maybe padded) and its trimmed form."""
    return st.tuples(PADDING, _core_names(1, MAX_NAME), PADDING).map(
        lambda parts: ("".join(parts), parts[1])
    )


def valid_names() -> st.SearchStrategy[str]:
    """Raw names the service accepts: 1..100 characters after trimming, no control chars."""
    return names_with_cleaned().map(lambda pair: pair[0])


def simple_names() -> st.SearchStrategy[str]:
    """Short readable names (letters, digits, a few marks) for state machines."""
    return st.text(st.sampled_from("abcDEFxyzé0123 -_."), min_size=1, max_size=12).filter(
        lambda text: text.strip() != ""
    )


def invalid_names() -> st.SearchStrategy[str]:
    """Raw names the service refuses: blank, over 100 after trimming, a control character
    inside, or a lone surrogate (not text at all)."""
    blank = PADDING
    too_long = st.tuples(PADDING, _core_names(MAX_NAME + 1, MAX_NAME + 40), PADDING).map("".join)
    with_bad_character = st.tuples(
        _core_names(1, 40),
        st.characters(categories=("Cc", "Cs")),
        _core_names(1, 40),
    ).map("".join)
    return st.one_of(blank, too_long, with_bad_character)


# --------------------------------------------------------------------------- durations

SECONDS_PER = {"W": 604_800, "D": 86_400, "H": 3_600, "M": 60, "S": 1}
MAX_DURATION_SECONDS = 36_500 * 86_400  # contract: durations up to a hundred years


def durations(
    min_seconds: int = 0, max_seconds: int = MAX_DURATION_SECONDS
) -> st.SearchStrategy[Duration]:
    """Durations in range, biased towards whole weeks, days, hours and minutes."""

    def whole(unit: int) -> st.SearchStrategy[int]:
        return st.integers(-(-min_seconds // unit), max_seconds // unit).map(lambda n: n * unit)

    units = [u for u in SECONDS_PER.values() if -(-min_seconds // u) <= max_seconds // u]
    seconds = st.one_of(
        st.integers(min_seconds, max_seconds),
        *(whole(unit) for unit in units),
        st.sampled_from([min_seconds, max_seconds]),
    )
    return seconds.map(Duration)


def duration_spellings(duration: Duration, *, zero_parts: bool = True) -> st.SearchStrategy[str]:
    """ISO 8601 texts that all mean ``duration``: any split into weeks, days, hours,
    minutes and seconds, zero parts sometimes written out."""

    @st.composite
    def spell(draw: st.DrawFn) -> str:
        rest = duration.seconds
        amounts: dict[str, int] = {}
        for unit in "WDHM":
            size = SECONDS_PER[unit]
            amounts[unit] = draw(st.integers(0, rest // size))
            rest -= amounts[unit] * size
        amounts["S"] = rest

        def shown(unit: str) -> bool:
            return amounts[unit] > 0 or (zero_parts and draw(st.booleans()))

        date = "".join(f"{amounts[u]}{u}" for u in "WD" if shown(u))
        time = "".join(f"{amounts[u]}{u}" for u in "HMS" if shown(u))
        if not date and not time:
            time = "0S" if draw(st.booleans()) else ""
            date = "" if time else "0D"
        return "P" + date + ("T" + time if time else "")

    return spell()


def valid_duration_texts() -> st.SearchStrategy[tuple[str, Duration]]:
    """``(text, meaning)``: a valid duration spelling and the duration it denotes."""
    return durations().flatmap(
        lambda duration: duration_spellings(duration).map(lambda text: (text, duration))
    )


_DURATION_GARBAGE = st.sampled_from(
    [
        "",
        "P",
        "PT",
        "P1DT",
        "T1H",
        "1D",
        "P1M",
        "P1Y",
        "P2Y3D",
        "P1Y2M3DT4H",
        "P3M",
        "PT1.5H",
        "P0.5D",
        "P0,5D",
        "PT0.1S",
        "P1.0W",
        "-P1D",
        "P-1D",
        "+P1D",
        "p1d",
        "pt1h",
        "P1d",
        "P 1D",
        " P1D",
        "P1D ",
        "P1D\n",
        "PT1S1M",
        "P1D1W",
        "P1D1D",
        "PT1H1H",
        "P1H",
        "PT1D",
        "PT1W",
        "P1WT",
        "P\u0661D",  # ARABIC-INDIC DIGIT ONE
        "P\uff11D",  # FULLWIDTH DIGIT ONE
        "P36501D",
        "P5215W",
        "PT876001H",
        "P1e3D",
        "P0x10D",
        "P1_000D",
        "P²D",
        "30 days",
        "P30D/P1D",
        "R5/P1D",
    ]
)


def invalid_duration_texts() -> st.SearchStrategy[str]:
    """Texts the service must refuse as durations: months, years, fractions, signs, empty,
    wrong order, over a hundred years, huge digit strings, and any text that does not
    start with ``P`` or holds a character outside ``0-9 W D T H M S``."""
    huge = st.tuples(st.integers(13, 4000), st.sampled_from("WDHMS")).map(
        lambda t: ("PT" if t[1] in "HMS" else "P") + "9" * t[0] + t[1]
    )
    not_starting_with_p = st.text(max_size=20).filter(lambda text: not text.startswith("P"))
    foreign_character = st.tuples(
        st.text(st.sampled_from("0123456789WDTHMS"), max_size=8),
        st.characters(exclude_characters="0123456789WDTHMS"),
        st.text(st.sampled_from("0123456789WDTHMS"), max_size=8),
    ).map(lambda t: "P" + "".join(t))
    return st.one_of(_DURATION_GARBAGE, huge, not_starting_with_p, foreign_character)


# --------------------------------------------------------------------------- retention


@st.composite
def retention_policies(draw: st.DrawFn) -> RetentionPolicy:
    """Acceptable retention: ``expire_after`` > 0 and ``lock_for`` <= ``expire_after``."""
    expire_after = draw(durations(min_seconds=1))
    lock_for = draw(durations(max_seconds=expire_after.seconds))
    return RetentionPolicy(expire_after, lock_for)


@st.composite
def lock_exceeding_retention_policies(draw: st.DrawFn) -> RetentionPolicy:
    """Retention whose lock is longer than its expiry (422 ``lock_exceeds_expiry``)."""
    expire_after = draw(durations(min_seconds=1, max_seconds=MAX_DURATION_SECONDS - 1))
    lock_for = draw(durations(min_seconds=expire_after.seconds + 1))
    return RetentionPolicy(expire_after, lock_for)


def any_retention_policies() -> st.SearchStrategy[RetentionPolicy]:
    """Acceptable and lock-exceeding retention policies."""
    return st.one_of(retention_policies(), lock_exceeding_retention_policies())


def _policy(expire_after: str, lock_for: str) -> RetentionPolicy:
    return RetentionPolicy(Duration.parse(expire_after), Duration.parse(lock_for))


# A few policies that collide often: equal ones spelled differently, and a bad one.
RETENTION_POOL: tuple[RetentionPolicy, ...] = (
    _policy("P7D", "PT0S"),
    _policy("P1W", "PT0S"),  # the same as the first
    _policy("P30D", "P7D"),
    _policy("PT36H", "P1DT12H"),  # lock equal to expiry
    _policy("P1D", "P2D"),  # lock longer than expiry
)


def pooled_retention_policies() -> st.SearchStrategy[RetentionPolicy]:
    """Retention from a small pool (so re-sends and conflicts happen), or any other."""
    return st.one_of(st.sampled_from(RETENTION_POOL), any_retention_policies())


# --------------------------------------------------------------------------- backups


def backup_kinds() -> st.SearchStrategy[BackupKind]:
    """Every backup kind."""
    return st.sampled_from(BackupKind)


# Contract section 10: the credential fields of each source type.
CREDENTIAL_FIELDS_BY_TYPE: Mapping[str, frozenset[str]] = {
    "s3": frozenset({"access_key_id", "secret_access_key"}),
    "postgres": frozenset({"username", "password"}),
}
CLOUD_SOURCE_TYPES = frozenset({"s3", "postgres"})

_ENDPOINTS = st.sampled_from(
    ["https://s3.example.com", "https://minio.internal:9000", "http://10.0.0.9:9000"]
)
_BUCKETS = st.from_regex(r"[a-z0-9][a-z0-9-]{1,20}[a-z0-9]", fullmatch=True)
_PREFIXES = st.none() | st.from_regex(r"[a-z0-9/_-]{1,20}", fullmatch=True)
_SECRETS = st.text(string.ascii_letters + string.digits + "/+=", min_size=1, max_size=40)


def s3_sources() -> st.SearchStrategy[S3Source]:
    """S3 buckets a cloud backup may read."""
    return st.builds(S3Source, endpoint=_ENDPOINTS, bucket=_BUCKETS, prefix=_PREFIXES)


def postgres_sources() -> st.SearchStrategy[PostgresSource]:
    """PostgreSQL databases a cloud backup may dump."""
    return st.builds(
        PostgresSource,
        host=st.sampled_from(["db.example.com", "10.0.0.5", "localhost"]),
        port=st.integers(1, 65_535),
        database=st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True),
    )


def unsupported_sources() -> st.SearchStrategy[UnsupportedSource]:
    """Well-formed sources of types no kind offers."""
    return st.sampled_from(["ftp", "mysql", "gcs", "local", "manual", "S3", "Postgres"]).map(
        UnsupportedSource
    )


def sources() -> st.SearchStrategy[Source]:
    """Any source: offered for cloud backups or not."""
    return st.one_of(s3_sources(), postgres_sources(), unsupported_sources())


def credentials_for(source_type: str) -> st.SearchStrategy[dict[str, str]]:
    """Credentials with exactly the fields ``source_type`` takes."""
    fields = CREDENTIAL_FIELDS_BY_TYPE[source_type]
    return st.fixed_dictionaries(dict.fromkeys(sorted(fields), _SECRETS))


def wrong_credentials() -> st.SearchStrategy[dict[str, str]]:
    """Credentials that fit no source type: missing, extra or unknown fields (malformed:
    400, and no ``BackupChanges`` can hold them)."""
    every = sorted(CREDENTIAL_FIELDS_BY_TYPE["s3"] | CREDENTIAL_FIELDS_BY_TYPE["postgres"])
    keys = st.sets(st.sampled_from([*every, "token", "api_key", "user"]), max_size=4).filter(
        lambda chosen: chosen not in CREDENTIAL_FIELDS_BY_TYPE.values()
    )
    return keys.flatmap(lambda chosen: st.fixed_dictionaries(dict.fromkeys(chosen, _SECRETS)))


def any_credentials() -> st.SearchStrategy[dict[str, str]]:
    """S3 credentials or PostgreSQL credentials (well-formed; which one fits is a kind rule)."""
    return st.one_of(credentials_for("s3"), credentials_for("postgres"))


VALID_CRONS = ("0 3 * * *", "*/15 * * * *", "30 2 * * 1-5", "0 0 1 * *", "0 0 29 2 *")
TIMEZONES = ("UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe")
INVALID_CRONS = (
    "",
    "* * * *",
    "* * * * * *",
    "61 * * * *",
    "* 25 * * *",
    "@daily",
    "not a cron",
    "0 0 30 2 *",  # never fires: February has no 30th
    "0 0 31 4,6,9,11 *",  # never fires
    # Contract 13: nothing beyond numbers, *, ranges, steps within range, lists and names.
    "0 0 L * *",
    "0 0 ? * *",
    "0 0 15W * *",
    "0 0 * * 1#2",
    "0 0 * * 5L",
    "H * * * *",
    "*/60 * * * *",
    "*/500 * * * *",
    "0 0 1-31/40 * *",
    "0 */0 * * *",
    "5/15 * * * *",
    "0 0 * * 5-1",
    "0 0 * * monday",
    "0 0 * 13 *",
    "0 0 * * 8",
)
# Accepted by contract 13's grammar (and firing).
GRAMMAR_CRONS = (
    "*/59 * * * *",
    "0-59/5 * * * *",
    "0 0,12 1,15 */2 mon,wed,fri",
    "0 0 1-31/31 * *",
    "0 0 * JAN-DEC/3 Sun",
    "0 0 * * 7",
    "0 0 * * 0-7",
    "  0 3 * * *  ",
)
INVALID_TIMEZONES = (
    *("", "Mars/Olympus_Mons", "America", "../etc/passwd", "/UTC", "UTC/", "+02:00"),
    # Names of the database that are not zones of the world (contract 13, turn 3).
    *("localtime", "posixrules", "Factory", "right/UTC", "posix/Europe/Berlin"),
)


def schedules() -> st.SearchStrategy[Schedule]:
    """Valid schedules: a 5-field cron that fires, in an IANA time zone."""
    return st.builds(Schedule, st.sampled_from(VALID_CRONS), st.sampled_from(TIMEZONES))


def customer_destinations() -> st.SearchStrategy[CustomerS3Destination]:
    """The customer's own S3 bucket."""
    return st.builds(CustomerS3Destination, endpoint=_ENDPOINTS, bucket=_BUCKETS, prefix=_PREFIXES)


def destinations() -> st.SearchStrategy[Destination]:
    """The service's storage or a customer's bucket."""
    return st.one_of(st.just(ServiceDestination()), customer_destinations())


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Half the time ``UNSET`` (the PATCH does not mention the field)."""
    return st.one_of(st.just(UNSET), strategy)


def backup_changes(
    *,
    names: st.SearchStrategy[str] | None = None,
    worker_ids: st.SearchStrategy[Any] | None = None,
    retentions: st.SearchStrategy[RetentionPolicy] | None = None,
) -> st.SearchStrategy[BackupChanges]:
    """Any domain-level PATCH: present fields mix what the kind rules accept and what they
    refuse. Half of the PATCHes mention every field independently (so several rules break
    at once), half mention only one or two (so each rule is also broken on its own)."""
    dense = st.builds(
        BackupChanges,
        name=_maybe(names if names is not None else valid_names()),
        source=_maybe(sources()),
        credentials=_maybe(any_credentials()),
        schedule=_maybe(st.none() | schedules()),
        worker_id=_maybe(worker_ids if worker_ids is not None else st.uuids()),
        retention=_maybe(retentions if retentions is not None else any_retention_policies()),
        destination=_maybe(destinations()),
        destination_credentials=_maybe(credentials_for("s3")),
    )
    fields = [field.name for field in attrs.fields(BackupChanges)]
    sparse = st.tuples(dense, st.sets(st.sampled_from(fields), min_size=1, max_size=2)).map(
        lambda pair: BackupChanges(**{name: getattr(pair[0], name) for name in pair[1]})
    )
    return st.one_of(dense, sparse)


@st.composite
def accepted_changes_for(
    draw: st.DrawFn,
    kind: BackupKind,
    *,
    names: st.SearchStrategy[str] | None = None,
    worker_ids: st.SearchStrategy[Any] | None = None,
    retentions: st.SearchStrategy[RetentionPolicy] | None = None,
) -> BackupChanges:
    """A PATCH that ``kind``'s rules accept whatever is stored: source and credentials come
    together, a customer bucket comes with its credentials, ``worker_id`` only on a local
    backup (drawn from ``worker_ids``, which must name existing workers)."""
    fields: dict[str, Any] = {
        "name": draw(_maybe(names if names is not None else valid_names())),
        "retention": draw(
            _maybe(retentions if retentions is not None else any_retention_policies())
        ),
    }
    destination = draw(_maybe(destinations()))
    fields["destination"] = destination
    if isinstance(destination, CustomerS3Destination):
        fields["destination_credentials"] = draw(credentials_for("s3"))
    if kind is not BackupKind.MANUAL:
        fields["schedule"] = draw(_maybe(st.none() | schedules()))
    if kind is BackupKind.CLOUD and draw(st.booleans()):
        source = draw(st.one_of(s3_sources(), postgres_sources()))
        fields["source"] = source
        fields["credentials"] = draw(credentials_for(source.type))
    if kind is BackupKind.LOCAL and worker_ids is not None:
        fields["worker_id"] = draw(_maybe(worker_ids))
    return BackupChanges(**fields)


@attrs.frozen
class StoredConfig:
    """What the kind rules look at in a stored backup."""

    kind: BackupKind
    source_type: str | None = None
    customer_destination: bool = False
    has_destination_credentials: bool = False

    @classmethod
    def of(cls, backup: Backup) -> StoredConfig:
        """The stored configuration of ``backup``."""
        return cls(
            backup.kind,
            None if backup.source is None else backup.source.type,
            isinstance(backup.destination, CustomerS3Destination),
            backup.sealed_destination_credentials is not None,
        )


def kind_rule_violation(
    stored: StoredConfig, changes: BackupChanges, *, worker_exists: bool
) -> str | None:
    """Why the contract's kind rules refuse ``changes`` (422), or ``None`` if they accept.

    api-spec section 2: ``worker`` only on local; ``source`` and ``credentials`` refused on
    local and manual; ``schedule`` refused on manual; a source type illegal for the kind.
    Contract 10: cloud offers ``s3`` and ``postgres``; credentials take exactly the fields
    of their source type (credentials of no source type's shape are malformed, 400, and
    never reach the kind rules); a ``worker_id`` must name a worker of the workspace; a
    ``customer_s3`` destination takes its own ``destination_credentials``.
    Credentials of one source type cannot be kept for a source of another type.
    """
    kind = stored.kind
    if changes.worker_id is not UNSET:
        if kind is not BackupKind.LOCAL:
            return "worker_id on a backup that is not local"
        if not worker_exists:
            return "worker_id names no worker"
    if changes.source is not UNSET and kind is not BackupKind.CLOUD:
        return "source on a backup that is not cloud"
    if changes.credentials is not UNSET and kind is not BackupKind.CLOUD:
        return "credentials on a backup that is not cloud"
    if changes.schedule is not UNSET and kind is BackupKind.MANUAL:
        return "schedule on a manual backup"
    if changes.source is not UNSET and changes.source.type not in CLOUD_SOURCE_TYPES:
        return "source type not offered for cloud"
    source_type = stored.source_type if changes.source is UNSET else changes.source.type
    if changes.credentials is not UNSET:
        if source_type is None:
            return "credentials without a source"
        if set(changes.credentials) != CREDENTIAL_FIELDS_BY_TYPE[source_type]:
            return "credentials that do not fit the source type"
    elif changes.source is not UNSET and stored.source_type not in (None, source_type):
        return "a new source type without new credentials"
    customer = (
        stored.customer_destination
        if changes.destination is UNSET
        else isinstance(changes.destination, CustomerS3Destination)
    )
    if changes.destination_credentials is not UNSET:
        if not customer:
            return "destination_credentials without a customer_s3 destination"
    elif isinstance(changes.destination, CustomerS3Destination) and (
        not stored.has_destination_credentials
    ):
        return "a customer_s3 destination without destination_credentials"
    return None


# --------------------------------------------------------------------------- JSON bodies


def json_duration(duration: Duration) -> st.SearchStrategy[str]:
    """A JSON duration field meaning ``duration`` (any valid spelling)."""
    return duration_spellings(duration)


def json_retention(policy: RetentionPolicy) -> st.SearchStrategy[dict[str, str]]:
    """``{expire_after, lock_for}`` meaning ``policy``."""
    return st.fixed_dictionaries(
        {
            "expire_after": json_duration(policy.expire_after),
            "lock_for": json_duration(policy.lock_for),
        }
    )


def _json_location(endpoint: str, bucket: str, prefix: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"endpoint": endpoint, "bucket": bucket}
    if prefix is not None:
        body["prefix"] = prefix
    return body


def json_source(source: Source) -> dict[str, Any]:
    """The JSON form of a source (contract section 5)."""
    if isinstance(source, S3Source):
        return {"type": "s3", **_json_location(source.endpoint, source.bucket, source.prefix)}
    if isinstance(source, PostgresSource):
        return {
            "type": "postgres",
            "host": source.host,
            "port": source.port,
            "database": source.database,
        }
    return {"type": source.type}


def json_destination(destination: Destination) -> dict[str, Any]:
    """The JSON form of a destination (contract section 5)."""
    if isinstance(destination, CustomerS3Destination):
        location = _json_location(destination.endpoint, destination.bucket, destination.prefix)
        return {"type": "customer_s3", **location}
    return {"type": "service"}


def json_patch_body(changes: BackupChanges) -> st.SearchStrategy[dict[str, Any]]:
    """JSON bodies of ``PATCH /v1/backups/{bid}`` that mean exactly ``changes``."""
    fixed: dict[str, Any] = {}
    if changes.name is not UNSET:
        fixed["name"] = changes.name
    if changes.source is not UNSET:
        fixed["source"] = json_source(changes.source)
    if changes.credentials is not UNSET:
        fixed["credentials"] = dict(changes.credentials)
    if changes.schedule is not UNSET:
        schedule = changes.schedule
        fixed["schedule"] = (
            None if schedule is None else {"cron": schedule.cron, "timezone": schedule.timezone}
        )
    if changes.worker_id is not UNSET:
        fixed["worker_id"] = str(changes.worker_id)
    if changes.destination is not UNSET:
        fixed["destination"] = json_destination(changes.destination)
    if changes.destination_credentials is not UNSET:
        fixed["destination_credentials"] = dict(changes.destination_credentials)
    if changes.retention is UNSET:
        return st.just(fixed)
    return json_retention(changes.retention).map(
        lambda retention: {**fixed, "retention": retention}
    )


def patch_bodies(
    changes: st.SearchStrategy[BackupChanges] | None = None,
) -> st.SearchStrategy[tuple[dict[str, Any], BackupChanges]]:
    """``(body, changes)``: a well-formed PATCH body (it passes every 400 check) and the
    domain changes it means; its values may still break kind rules (422), retention rules
    (409/422) or name rules checked later (taken names)."""
    chosen = changes if changes is not None else backup_changes()
    return chosen.flatmap(lambda change: json_patch_body(change).map(lambda b: (b, change)))


def accepted_patch_bodies(kind: BackupKind) -> st.SearchStrategy[dict[str, Any]]:
    """Well-formed PATCH bodies that ``kind``'s rules accept on a new backup (no
    ``worker_id``: a worker must exist first), retention always acceptable."""
    return accepted_changes_for(kind, retentions=retention_policies()).flatmap(json_patch_body)


# One field each that makes a body malformed (400 ``invalid_request``).
MALFORMED_FIELDS: tuple[dict[str, Any], ...] = (
    {"kind": "local"},
    {"kind": "cloud"},
    {"id": "2b1c8c4e-3c1e-4a55-9d0f-8d4c9b0c7a11"},
    {"state": "active"},
    {"unexpected": True},
    {"name": 5},
    {"name": None},
    {"name": ["a"]},
    {"source": None},
    {"source": "s3"},
    {"source": {"endpoint": "https://s3.example.com", "bucket": "bucket-b"}},
    {"source": {"type": "s3", "endpoint": "ftp://s3.example.com", "bucket": "bucket-b"}},
    {"source": {"type": "s3", "endpoint": "not a url", "bucket": "bucket-b"}},
    {"source": {"type": "s3", "endpoint": "https://s3.example.com"}},
    {"source": {"type": "s3", "endpoint": "https://s3.example.com", "bucket": "bucket-b", "x": 1}},
    {"source": {"type": "postgres", "host": "h", "port": "5432", "database": "d"}},
    {"source": {"type": "postgres", "host": "h", "port": 0, "database": "d"}},
    {"source": {"type": "postgres", "host": "h", "port": 70_000, "database": "d"}},
    {"source": {"type": "postgres", "host": "h", "port": 5432.0, "database": "d"}},
    {"source": {"type": "postgres", "host": "h", "port": True, "database": "d"}},
    {"credentials": None},
    {"credentials": "secret"},
    {"credentials": {"access_key_id": 1, "secret_access_key": "s"}},
    {"credentials": {"user": "u", "password": "p"}},
    {"credentials": {"username": "u"}},
    {"credentials": {"access_key_id": "a", "secret_access_key": "s", "session_token": "t"}},
    {"credentials": {}},
    {"destination_credentials": {"username": "u", "password": "p"}},
    {"destination_credentials": {"access_key_id": "a"}},
    {"schedule": "0 3 * * *"},
    {"schedule": {"cron": "0 3 * * *"}},
    {"schedule": {"cron": "0 3 * * *", "timezone": "UTC", "jitter": 5}},
    *({"schedule": {"cron": cron, "timezone": "UTC"}} for cron in INVALID_CRONS),
    *({"schedule": {"cron": "0 3 * * *", "timezone": zone}} for zone in INVALID_TIMEZONES),
    {"worker_id": None},
    {"worker_id": "not-a-uuid"},
    {"worker_id": 42},
    {"retention": None},
    {"retention": "P30D"},
    {"retention": {"expire_after": "P30D"}},
    {"retention": {"expire_after": "P30D", "lock_for": "PT0S", "extra": "P1D"}},
    {"retention": {"expire_after": "PT0S", "lock_for": "PT0S"}},  # expire_after must be > 0
    {"retention": {"expire_after": 30, "lock_for": "PT0S"}},
    {"retention": {"expire_after": "P1M", "lock_for": "PT0S"}},
    {"retention": {"expire_after": "P30D", "lock_for": "P1Y"}},
    {"retention": {"expire_after": "P1.5D", "lock_for": "PT0S"}},
    {"destination": None},
    {"destination": {"type": "gcs"}},
    {"destination": {"type": "service", "bucket": "bucket-b"}},
    {"destination": {"type": "customer_s3", "endpoint": "ftp://x", "bucket": "bucket-b"}},
    {"destination_credentials": None},
    {"destination_credentials": ["access_key_id"]},
)


def malformed_patch_bodies() -> st.SearchStrategy[dict[str, Any]]:
    """PATCH bodies that must get 400 ``invalid_request``: a well-formed body with one
    malformed field (or an invalid name, or a bad duration) merged in."""
    bad_field = st.one_of(
        st.sampled_from(MALFORMED_FIELDS),
        invalid_names().map(lambda name: {"name": name}),
        invalid_duration_texts().map(
            lambda text: {"retention": {"expire_after": text, "lock_for": "PT0S"}}
        ),
    )
    return st.tuples(patch_bodies(), bad_field).map(lambda pair: {**pair[0][0], **pair[1]})


# Permissions.


def permission_sets() -> st.SearchStrategy[frozenset[Permission]]:
    """Any subset of the permission catalog."""
    return st.frozensets(st.sampled_from(list(Permission)))


# --------------------------------------------------------------------------- schedule slots

# Zones with DST: a 1-hour change at 02:00 (Berlin, New York), a 30-minute one (Lord Howe:
# 02:00-02:30 skipped in October, 01:30-02:00 repeated in April), and none (UTC).
DST_TIMEZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC")
# The 2026 DST changes of those zones, in UTC.
DST_CHANGES = {
    "Europe/Berlin": (
        datetime(2026, 3, 29, 1, tzinfo=UTC),  # 02:00 -> 03:00
        datetime(2026, 10, 25, 1, tzinfo=UTC),  # 03:00 -> 02:00
    ),
    "America/New_York": (
        datetime(2026, 3, 8, 7, tzinfo=UTC),  # 02:00 -> 03:00
        datetime(2026, 11, 1, 6, tzinfo=UTC),  # 02:00 -> 01:00
    ),
    "Australia/Lord_Howe": (
        datetime(2026, 4, 4, 15, tzinfo=UTC),  # 02:00 -> 01:30
        datetime(2026, 10, 3, 15, 30, tzinfo=UTC),  # 02:00 -> 02:30
    ),
    "UTC": (datetime(2026, 3, 29, 1, tzinfo=UTC),),  # none: Berlin's, for comparison
}


def _cron_field(low: int, high: int, near: tuple[int, ...]) -> st.SearchStrategy[str]:
    """One cron field in contract 13's grammar: ``*``, a step, a value, a range or a list,
    drawn mostly from ``near`` (the hours around DST changes) so that slots meet them."""
    values = (
        st.one_of(st.sampled_from(near), st.integers(low, high))
        if near
        else (st.integers(low, high))
    )
    ranges = st.tuples(values, values).map(lambda pair: f"{min(pair)}-{max(pair)}")
    return st.one_of(
        st.just("*"),
        st.integers(1, high).map(lambda step: f"*/{step}"),
        values.map(str),
        ranges,
        st.lists(values, min_size=2, max_size=4, unique=True).map(
            lambda items: ",".join(map(str, sorted(items)))
        ),
    )


def slot_crons() -> st.SearchStrategy[str]:
    """5-field cron expressions that fire at least daily, in hours and minutes likely to
    meet a DST change (days, months and weekdays stay ``*``)."""
    minutes = _cron_field(0, 59, (0, 15, 30, 45, 59))
    hours = _cron_field(0, 23, (1, 2, 3))
    return st.tuples(minutes, hours).map(lambda pair: f"{pair[0]} {pair[1]} * * *")


@st.composite
def zoned_instants(draw: st.DrawFn) -> tuple[str, datetime]:
    """A zone of ``DST_TIMEZONES`` and a UTC instant (to the second) up to three hours
    before one of its DST changes (so that a window of a few hours after it often holds
    the change), up to a day around it, or anywhere in 2026."""
    timezone = draw(st.sampled_from(DST_TIMEZONES))
    change = draw(st.sampled_from(DST_CHANGES[timezone]))
    return timezone, draw(
        st.one_of(
            st.integers(-3 * 3600, 0).map(lambda seconds: change + timedelta(seconds=seconds)),
            st.integers(-86_400, 86_400).map(lambda seconds: change + timedelta(seconds=seconds)),
            st.datetimes(datetime(2026, 1, 1), datetime(2026, 12, 31)).map(
                lambda moment: moment.replace(microsecond=0, tzinfo=UTC)
            ),
        )
    )
