"""schemathesis against the live app (in-process ASGI, embedded in-memory default), every
operation of the generated OpenAPI document, all checks, with a real session token and,
most of the time, real ids of a workspace with an object of every kind."""

from __future__ import annotations

import os
import random
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
from strongroom.domain.errors import InvalidRequestError
from strongroom.domain.pagination import Cursor
from support.tenants import Tenant, build_tenant, pool_of
from support.world import Api, make_client, make_facade

EXAMPLES = int(os.environ.get("STRONGROOM_SCHEMATHESIS_EXAMPLES", "10"))
# The cron fields and their ranges (contract 13): minute, hour, day of month, month, weekday.
CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


class Live:
    """The facade, the app schemathesis calls, and a tenant with real ids."""

    def __init__(self) -> None:
        self.facade = make_facade()
        self.app = app_for(self.facade)
        self.tenant: Tenant | None = None
        self.rebuilt = 0

    def token(self) -> str:
        """The tenant admin's session, signed in again when a case revoked it."""
        assert self.tenant is not None
        try:
            self.facade.access.authenticate(self.tenant.admin)
        except Exception:
            with make_client(self.facade) as client:
                api = Api(self.facade, client)
                self.rebuilt += 1
                self.tenant = build_tenant(api, f"rebuilt{self.rebuilt}")
        return self.tenant.admin


LIVE = Live()
schema = schemathesis.openapi.from_asgi("/openapi.json", LIVE.app)

# 422 is the contract's answer to a well-formed value its rules refuse (an `expires_at` in
# the past, the kind rules of a backup): valid against any schema, so expected of valid data.
# A 400 stays a failure: what the schema allows must never be malformed.
schema.config.checks.positive_data_acceptance.expected_statuses = [
    *schema.config.checks.positive_data_acceptance.expected_statuses,
    "422",
]


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
    ),
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
      negative (it could not satisfy that part's schema) is not positive data.
    """
    if case.meta is None or case.meta.generation.mode.value != "positive":
        return True
    if any(part.mode.value == "negative" for part in case.meta.components.values()):
        return False
    cursor = (case.query or {}).get("cursor")
    return not _holds_integral_float(case.body) and (cursor is None or _issued(cursor))


def _issued(cursor: Any) -> bool:
    try:
        Cursor.decode(str(cursor))
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


@pytest.fixture(scope="module")
def live() -> Live:
    """The live app with its tenant set up."""
    if LIVE.tenant is None:
        with make_client(LIVE.facade) as client:
            LIVE.tenant = build_tenant(Api(LIVE.facade, client), "alpha")
    return LIVE


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_conforms_to_its_document(case: Any, live: Live) -> None:
    token = live.token()
    assert live.tenant is not None
    mode = case.meta.generation.mode.value if case.meta else "positive"
    if mode == "positive" and case.path_parameters and random.random() < 0.7:
        for name in list(case.path_parameters):
            case.path_parameters[name] = random.choice(
                live.tenant.ids[pool_of(case.operation.path, name)]
            )
    if case.operation.definition.raw.get("operationId") in CREDENTIAL_REFUSALS:
        case.call_and_validate(
            headers={"Authorization": f"Bearer {token}"},
            excluded_checks=[positive_data_acceptance],
            additional_checks=[only_credential_refusals],
        )
        return
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"})
