"""schemathesis against the live app (in-process ASGI) on the embedded default (SQLite) and
on PostgreSQL: every operation of the generated OpenAPI document, all checks, with a real
session token and, most of the time, real ids of a workspace with an object of every kind.

Nothing is excluded. 422 (a well-formed value a rule refuses) is an expected answer to
valid data; the few data restrictions JSON Schema cannot state are in ``filter_case`` and
``CREDENTIAL_REFUSALS``, each with its reason."""

from __future__ import annotations

import asyncio
import os
import random
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any
from zoneinfo import available_timezones

import pytest
import schemathesis
from croniter import croniter
from croniter.croniter import CroniterBadDateError
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import positive_data_acceptance

from strongroom.adapters.http.app import app_for
from strongroom.adapters.http.openapi import IF_MATCH_PATTERN
from strongroom.adapters.sql.postgres import PostgresDatabase
from strongroom.adapters.sql.sqlite import SqliteDatabase
from strongroom.adapters.wire.converter import CONVERTER
from strongroom.adapters.wire.scalars import Endpoint
from strongroom.domain.durations import Duration
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.pagination import Cursor
from strongroom.domain.role_pages import decode_role_cursor, encode_role_cursor
from support import pg_fixtures
from support.postgres import scratch_database
from support.tenants import build_tenant, pool_of
from support.world import Api, make_client, make_facade

pg_server = pg_fixtures.pg_server  # the shared server fixture, found by its name here

# Per operation and backend (the coverage phase adds its own cases): about 45 s in all.
EXAMPLES = int(os.environ.get("STRONGROOM_SCHEMATHESIS_EXAMPLES", "5"))
# The cron fields and their ranges (contract 13): minute, hour, day of month, month, weekday.
CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
ROLE_SLUG = r"[a-z][a-z0-9-]{1,39}"


class Live:
    """The facade, the app schemathesis calls, and a tenant with real ids."""

    def __init__(self, facade: Any) -> None:
        self.facade = facade
        self.app = app_for(self.facade)
        with make_client(self.facade) as client:
            self.tenant = build_tenant(Api(self.facade, client), "alpha")
        self.rebuilt = 0

    def token(self) -> str:
        """The tenant admin's session, signed in again when a case revoked it."""
        try:
            self.facade.access.authenticate(self.tenant.admin)
        except Exception:
            with make_client(self.facade) as client:
                api = Api(self.facade, client)
                self.rebuilt += 1
                self.tenant = build_tenant(api, f"rebuilt{self.rebuilt}")
        return self.tenant.admin


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Live]:
    """The live app on a fresh database of the backend, with its tenant set up."""
    with ExitStack() as stack:
        if request.param == "sqlite":
            database: Any = SqliteDatabase(tmp_path_factory.mktemp("st") / "strongroom.db")
            stack.callback(lambda: asyncio.run(database.aclose()))
        else:
            server = request.getfixturevalue("pg_server")
            conninfo = stack.enter_context(scratch_database(server, prefix="strongroom_st"))
            database = stack.enter_context(PostgresDatabase.from_url(conninfo, min_size=0))
        database.migrate()
        yield Live(make_facade(uow=database.uow))


# The document is the same whatever the backend: read from an app on the in-memory store;
# each case is sent to the app of the backend under test (``app=`` of the ASGI transport).
schema = schemathesis.openapi.from_asgi("/openapi.json", app_for(make_facade()))
# 422 is the contract's answer to a well-formed value a rule refuses (an `expires_at` in the
# past, the kind rules of a backup): valid against any schema, so expected of valid data. A
# 400 stays a failure: what the schema allows must never be malformed.
_acceptance = schema.config.checks.positive_data_acceptance
_acceptance.expected_statuses = [*_acceptance.expected_statuses, "422"]


def _cron_field(low: int, high: int) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    ranges = st.tuples(value, value).map(sorted).map(lambda pair: f"{pair[0]}-{pair[1]}")
    item = st.one_of(
        st.just("*"),
        value.map(str),
        ranges,
        st.tuples(st.sampled_from(["*"]) | ranges, st.integers(1, high)).map(
            lambda pair: f"{pair[0]}/{pair[1]}"
        ),
    )
    return st.lists(item, min_size=1, max_size=3).map(",".join)


def _fires(expression: str) -> bool:
    try:
        croniter(expression, datetime(2000, 1, 1, tzinfo=UTC)).get_next(datetime)
    except CroniterBadDateError:
        return False
    return True


# Formats the document names for what JSON Schema cannot say; their values are generated
# as the server documents them.
schemathesis.openapi.format(
    "cron",
    st.tuples(*(_cron_field(low, high) for low, high in CRON_RANGES)).map(" ".join).filter(_fires),
)
schemathesis.openapi.format("time-zone", st.sampled_from(sorted(available_timezones())))
schemathesis.openapi.format(
    "page-cursor",
    st.builds(
        lambda moment, item: Cursor(moment, item).encode(),
        st.datetimes(timezones=st.just(UTC)),
        st.uuids(),
    )
    | st.from_regex(ROLE_SLUG, fullmatch=True).map(encode_role_cursor),
)


def _holds_integral_float(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(_holds_integral_float(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_integral_float(item) for item in value)
    return False


@schema.hook
def filter_case(context: Any, case: Any) -> bool:
    """Data restrictions of positive cases, each narrow:

    - the API reads JSON numbers as written, so `5.0` is not an integer (400, tested in
      test_backups); JSON Schema cannot tell `5.0` from `5`;
    - a cursor is one the service issued (`format: page-cursor`); a well-formed other one
      is 400 (contract 1), which no pattern can tell;
    - a case the coverage phase labels positive while one of its parts was generated
      negative (it could not satisfy that part's schema), or with an `If-Match` off its
      documented pattern (that phase does not follow it), is not positive data;
    - a duration is at most 36 500 days in all (documented; 400 beyond), a sum of its
      parts that no pattern can bound;
    - a heartbeat's `progress.bytes_done` is at most its `bytes_total` (documented; 400
      beyond), a relation of two fields no schema states;
    - an `endpoint` is an http(s) URL with a host and a port of 1..65535 (documented on
      the field), narrower than `format: uri`, which admits any scheme (`a:b`).
    """
    if case.meta is None or case.meta.generation.mode.value != "positive":
        return True
    if any(part.mode.value == "negative" for part in case.meta.components.values()):
        return False
    cursor = (case.query or {}).get("cursor")
    if_match = (case.headers or {}).get("If-Match")
    if if_match is not None and not re.search(IF_MATCH_PATTERN, str(if_match)):
        return False
    return (
        not _holds_integral_float(case.body)
        and (cursor is None or _issued(str(cursor), case.operation.path))
        and all(_within_bounds(text) for text in _durations(case.body))
        and _progress_in_bounds(case.body)
        and all(_is_endpoint(text) for text in _endpoints(case.body))
    )


def _endpoints(value: Any) -> Iterator[Any]:
    """Every ``endpoint`` value of the body."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "endpoint":
                yield item
            else:
                yield from _endpoints(item)


def _is_endpoint(value: Any) -> bool:
    try:
        CONVERTER.structure(value, Endpoint)
    except (ValueError, TypeError, InvalidRequestError):
        return False
    return True


def _progress_in_bounds(body: Any) -> bool:
    """Whether a heartbeat body's progress, if any, has ``bytes_done <= bytes_total``."""
    progress = body.get("progress") if isinstance(body, dict) else None
    if not isinstance(progress, dict):
        return True
    done, total = progress.get("bytes_done"), progress.get("bytes_total")
    return not (isinstance(done, int) and isinstance(total, int) and done > total)


def _durations(value: Any) -> Iterator[str]:
    """Every string of the body that is a duration."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("expire_after", "lock_for") and isinstance(item, str):
                yield item
            else:
                yield from _durations(item)


def _within_bounds(text: str) -> bool:
    try:
        Duration.parse(text, "duration")
    except InvalidRequestError:
        return False
    return True


def _issued(cursor: str, path: str) -> bool:
    """Whether ``cursor`` is one the list at ``path`` issues (roles page by slug)."""
    try:
        if path.endswith("/roles"):
            decode_role_cursor(cursor)
        else:
            Cursor.decode(cursor)
    except InvalidRequestError:
        return False
    return True


# The identity provider's forms refuse, with 400 as OAuth prescribes (RFC 6749 section 5.2,
# RFC 8628 section 3.5), credentials that do not exist: a device code never issued, a user
# code or password that do not match, a client that did not identify itself (in the form
# or with HTTP Basic). For these operations only, positive data may get exactly those
# refusals; any other 400 still fails.
CREDENTIAL_REFUSALS = {
    "idpToken": (
        "invalid_grant: unknown device code",
        "invalid_request: missing parameter client_id",
        # Which parameters a token request needs depends on its grant type.
        "invalid_request: missing parameter device_code",
        "invalid_request: missing parameter code",
        "invalid_request: missing parameter redirect_uri",
        "invalid_grant: unknown, expired or used authorization code",
        "invalid_client: unknown client_id",
    ),
    # The authorization request: a redirect URI must be on the server's own origin, which
    # no schema can say; the sign-in form also refuses a password that does not match.
    "idpAuthorizePage": (
        "client_id must be strongroom-web",
        "redirect_uri must be an absolute URL on this server",
    ),
    "idpAuthorize": (
        "redirect_uri must be an absolute URL on this server",
        "Wrong email or password.",
    ),
    "idpDeviceDecision": ("Unknown or expired code.", "Wrong email or password."),
    "idpDeviceCode": ("invalid_request: missing parameter client_id",),
}


@schemathesis.check
def only_credential_refusals(ctx: Any, response: Any, case: Any) -> bool | None:
    """Positive data of an identity-provider form: 2xx, or one of its credential refusals."""
    refusals = CREDENTIAL_REFUSALS.get(case.operation.definition.raw.get("operationId"))
    mode = case.meta.generation.mode.value if case.meta else "positive"
    if refusals is None or mode != "positive" or response.status_code != 400:
        return None
    text = response.text
    if response.headers.get("content-type", [""])[0].startswith("application/json"):
        body = response.json()
        text = f"{body.get('error')}: {body.get('error_description')}"
    if not any(refusal in text for refusal in refusals):
        raise AssertionError(f"schema-valid form refused with 400: {text[:200]}")
    return None


def with_real_ids(case: Any, live: Live) -> None:
    """Most of the time, a positive case names the tenant's real objects in its path."""
    mode = case.meta.generation.mode.value if case.meta else "positive"
    if mode == "positive" and case.path_parameters and random.random() < 0.7:
        for name in list(case.path_parameters):
            case.path_parameters[name] = random.choice(
                live.tenant.ids[pool_of(case.operation.path, name)]
            )


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_conforms_to_its_document(case: Any, live: Live) -> None:
    token = live.token()
    with_real_ids(case, live)
    if case.operation.definition.raw.get("operationId") in CREDENTIAL_REFUSALS:
        case.call_and_validate(
            app=live.app,
            headers={"Authorization": f"Bearer {token}"},
            excluded_checks=[positive_data_acceptance],
            additional_checks=[only_credential_refusals],
        )
        return
    case.call_and_validate(app=live.app, headers={"Authorization": f"Bearer {token}"})


STATEFUL_EXAMPLES = int(os.environ.get("STRONGROOM_SCHEMATHESIS_STATEFUL_EXAMPLES", "8"))
Workflow: Any = schema.as_state_machine()


def test_linked_operations_conform_to_the_document(live: Live) -> None:
    """The stateful phase: chains of operations linked by the ids their answers carry
    (schemathesis infers the links from the responses and `Location` headers), all checks
    on every step, on the backend under test."""

    steps: Counter[tuple[str, int]] = Counter()

    class LiveWorkflow(Workflow):  # type: ignore[misc, valid-type]
        def step(self, input: Any) -> Any:
            # A chain starts, most of the time, from the tenant's real objects; the steps
            # after it take the ids that the links carry.
            if input.transition is None:
                with_real_ids(input.case, live)
            return super().step(input)

        def after_call(self, response: Any, case: Any) -> None:
            super().after_call(response, case)
            steps[(case.operation.label, response.status_code)] += 1

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"app": live.app, "headers": {"Authorization": f"Bearer {live.token()}"}}

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            if case.operation.definition.raw.get("operationId") in CREDENTIAL_REFUSALS:
                case.validate_response(
                    response,
                    excluded_checks=[positive_data_acceptance],
                    additional_checks=[only_credential_refusals],
                    transport_kwargs=kwargs,
                )
                return
            case.validate_response(response, transport_kwargs=kwargs)

    LiveWorkflow.run(
        settings=settings(
            max_examples=STATEFUL_EXAMPLES,
            stateful_step_count=6,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
    )
    # Chains ran, and some step got past creation to an operation on what it created.
    assert sum(steps.values()) >= STATEFUL_EXAMPLES
    assert any(200 <= status < 300 and "{" in label for label, status in steps), steps
