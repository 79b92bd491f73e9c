"""schemathesis against the live app (in-process ASGI, embedded in-memory default), every
operation of the generated OpenAPI document, all checks, with a real session token and,
most of the time, real ids of a workspace with an object of every kind."""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from strongroom.adapters.http.app import app_for
from support.tenants import Tenant, build_tenant, pool_of
from support.world import Api, make_client, make_facade

EXAMPLES = int(os.environ.get("STRONGROOM_SCHEMATHESIS_EXAMPLES", "10"))


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


# Operations where schemathesis (all checks) still reports a failure, each a finding of
# issue 12 still open (schema or server to fix, then remove the operation from here):
KNOWN_FAILURES = {
    # ST202: `?cursor=` (empty) is schema-valid but refused; the cursor parameter needs
    # minLength 1 (and GET /v1/workers also refused a query value, "size", to look at).
    "listWorkspaces": "empty cursor",
    "listApiKeys": "empty cursor",
    "listWorkers": "empty cursor; a query refused with 'invalid value for size'",
    # ST202: names with control characters are schema-valid (Name has no pattern).
    "createWorkspace": "control characters in name",
    "createWorker": "control characters in name",
    "idpSignup": "control characters in name",
    # ST202: cron syntax is not expressed in the schema.
    "updateBackup": "schedule.cron",
    # ST202: an expires_at in the past is schema-valid, 422 validation_failed not documented
    # as expected for valid data.
    "createApiKey": "expires_at in the past",
    # ST202: the storage key parameter has no pattern; keys of the wrong shape are 400.
    "putObject": "object key shape",
    # ST202: a schema-valid size refused with "invalid value for size: expected an integer".
    "requestUpload": "size",
    "getObject": "object key shape",
    # ST201 / ST202 on the IdP's form endpoints (RFC 8628 rules the schema does not state).
    "idpDeviceCode": "a schema-violating form accepted",
    "idpDeviceDecision": "a schema-valid form refused",
    "idpToken": "missing device_code refused while the schema allows it",
}
LIVE = Live()
schema = schemathesis.openapi.from_asgi("/openapi.json", LIVE.app).exclude(
    operation_id=sorted(KNOWN_FAILURES)
)


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
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"})
