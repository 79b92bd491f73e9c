"""The generated cross-tenant isolation test (issue 12's acceptance).

Two workspaces, A and B, each with an object of every kind. For every bearer route of the
app's route table whose path has an id parameter (read from the table, never hand-listed),
every credential kind that can call it (a person's scoped session, an API key holding every
permission, a worker), a seeded generator picks ids that belong to the OTHER workspace
(foreign), ids of the other workspace's objects of another kind, and mixed ones (an own
workspace with a foreign object, and the reverse), in both directions. Each such request is
paired with the same request where every foreign id is replaced by a random one: the two
answers must be indistinguishable (status, body with the ids masked, headers but the
request id). Nothing of either workspace may change (a snapshot of both, read through the
API, before and after).

The number of attempts (pairs) is ``STRONGROOM_ISOLATION_ATTEMPTS`` when set, otherwise it
follows ``HYPOTHESIS_PROFILE``: 2 000 with ``dev``, 10 000 with ``ci``, 50 000 with
``thorough``. ``STRONGROOM_ISOLATION_SEED`` changes the seed. docs/testing.md tells how to
run a larger run, and the whole run on PostgreSQL (``STRONGROOM_ISOLATION_DATABASE=postgres``;
a smaller PostgreSQL run, ``STRONGROOM_ISOLATION_POSTGRES_ATTEMPTS`` per direction, is
always part of the suite).
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import string
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from uuid import UUID, uuid4

import attrs
import pytest

from strongroom.adapters.http.app import operations
from strongroom.adapters.webkit.declare import Auth, Operation
from support.pg_facade import postgres_facade
from support.tenants import UUID_POOLS, Tenant, build_tenant, pool_of
from support.world import Api, bearer, make_client, make_facade

PROFILE_ATTEMPTS = {"dev": 2_000, "ci": 10_000, "thorough": 50_000}
ATTEMPTS = int(
    os.environ.get("STRONGROOM_ISOLATION_ATTEMPTS")
    or PROFILE_ATTEMPTS.get(os.environ.get("HYPOTHESIS_PROFILE", "dev"), 2_000)
)
# The in-memory run's database: ``postgres`` runs the whole count on PostgreSQL.
DATABASE = os.environ.get("STRONGROOM_ISOLATION_DATABASE", "memory")
POSTGRES_ATTEMPTS = int(os.environ.get("STRONGROOM_ISOLATION_POSTGRES_ATTEMPTS", "300"))
SEED = int(os.environ.get("STRONGROOM_ISOLATION_SEED", "12"))
SHARDS = 4  # two per direction, so that pytest-xdist spreads them
CREDENTIALS = ("session", "api_key", "worker")
# Headers that differ between any two responses, foreign or not.
VOLATILE_HEADERS = {"x-request-id", "date", "content-length"}
# Fields that change when a credential is merely used.
VOLATILE_FIELDS = {"last_used_at", "last_seen_at"}

# A valid body for each id route that requires one: a request the server would carry out
# on an object of the caller's own workspace. Routes with an optional or empty body are
# called without one. A new id route with a required body fails the coverage test below.
VALID_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("PATCH", "/v1/workspaces/{wid}"): {"name": "Renamed"},
    ("POST", "/v1/workspaces/{wid}/backups"): {"name": "intruder", "kind": "manual"},
    ("PATCH", "/v1/backups/{bid}"): {"name": "renamed"},
    ("PATCH", "/v1/workspaces/{wid}/members/{id}"): {"role": "admin"},
    ("POST", "/v1/workspaces/{wid}/roles"): {"slug": "intruder", "name": "X", "permissions": []},
    ("PATCH", "/v1/workspaces/{wid}/roles/{slug}"): {"name": "Renamed"},
    ("POST", "/v1/workspaces/{wid}/invitations"): {"email": "eve@example.com", "role": "admin"},
    ("POST", "/v1/runs/{run_id}/upload-url"): {
        "name": "intruder.bin",
        "size": 3,
        "sha256": hashlib.sha256(b"abc").hexdigest(),
    },
    ("POST", "/v1/runs/{run_id}/upload-urls"): {
        "artifacts": [
            {"name": "intruder.bin", "size": 3, "sha256": hashlib.sha256(b"abc").hexdigest()}
        ]
    },
    ("POST", "/v1/runs/{run_id}/fail"): {"error": "intruder"},
    ("POST", "/v1/backups/{bid}/retention/preview"): {
        "retention": {"expire_after": "P1D", "lock_for": "PT0S", "keep": {"daily": 1}}
    },
    ("POST", "/v1/workspaces/{wid}/webhooks"): {
        "url": "https://intruder.example.com/",
        "events": ["run.failed"],
    },
    ("PATCH", "/v1/webhooks/{id}"): {"url": "https://intruder.example.com/"},
    ("POST", "/v1/artifacts/{aid}/restores"): {
        "target": {"type": "s3", "endpoint": "https://s3.example.com", "bucket": "intruder"},
        "credentials": {"access_key_id": "intruder", "secret_access_key": "intruder"},
    },
}


def id_operations() -> list[Operation]:
    """Every bearer operation of the route table with an id parameter in its path."""
    return [op for op in operations() if op.auth == Auth.BEARER and "{" in op.path]


def parameters(operation: Operation) -> list[str]:
    """The path parameters of ``operation``, in order."""
    return re.findall(r"\{(\w+)\}", operation.path)


def snapshot(api: Api, tenant: Tenant) -> dict[str, Any]:
    """Everything of ``tenant`` the API shows its admin, volatile usage fields removed."""
    headers = bearer(tenant.admin)
    wid = tenant.ids["wid"][0]
    base = f"/v1/workspaces/{wid}"

    def get(path: str) -> Any:
        response = api.client.get(path, headers=headers)
        assert response.status_code == 200, (path, response.text)
        return strip(response.json())

    def every(path: str) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        while True:
            query = f"?limit=200&cursor={cursor}" if cursor else "?limit=200"
            page = get(path + query)
            items.extend(page["data"])
            cursor = page["next_cursor"]
            if cursor is None:
                return items

    lists = ("backups", "members", "roles", "invitations", "artifacts", "audit", "webhooks")
    state: dict[str, Any] = {name: every(f"{base}/{name}") for name in lists}
    state["workspace"] = get(base)
    state["quotas"] = get(f"{base}/quotas")
    state["api_keys"] = every("/v1/api-keys")
    state["workers"] = every("/v1/workers")
    state["backup"] = [get(f"/v1/backups/{bid}") for bid in tenant.ids["bid"]]
    state["runs"] = [get(f"/v1/runs/{run}") for run in tenant.ids["run_id"]]
    state["restores"] = [get(f"/v1/restores/{rid}") for rid in tenant.ids["restore"]]
    state["deliveries"] = [
        every(f"/v1/webhooks/{hook}/deliveries") for hook in tenant.ids["webhook"]
    ]
    return state


def strip(value: Any) -> Any:
    """``value`` without the fields that change when a credential is only used."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in VOLATILE_FIELDS}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


@attrs.frozen
class Attempt:
    """One generated request: who calls what with which ids; ``foreign`` are the values
    taken from the victim (each is replaced by ``randoms`` in the paired request)."""

    operation: Operation
    credential: str
    mode: str
    values: dict[str, str]
    foreign: dict[str, str]
    randoms: dict[str, str]

    def path(self, values: dict[str, str]) -> str:
        path = self.operation.path
        for parameter, value in values.items():
            path = path.replace("{" + parameter + "}", value)
        return path


def random_value(rng: random.Random, pool: str) -> str:
    """An id of the pool's shape that nothing has."""
    if pool == "slug":
        return rng.choice(string.ascii_lowercase) + "".join(
            rng.choices(string.ascii_lowercase + string.digits + "-", k=rng.randint(2, 12))
        )
    return str(UUID(int=rng.getrandbits(128), version=4))


def generate(rng: random.Random, attacker: Tenant, victim: Tenant) -> Attempt:
    """A request of ``attacker`` with at least one id of ``victim`` in its path."""
    operation = rng.choice(id_operations())
    params = parameters(operation)
    pools = {p: pool_of(operation.path, p) for p in params}
    if len(params) > 1:
        mode = rng.choice(("foreign", "own-workspace", "foreign-workspace", "wrong-kind"))
    else:
        mode = rng.choice(("foreign", "foreign", "wrong-kind"))
    # The first parameter holds the rest ({wid}, or a webhook's {id} before its {did}).
    owner = params[0]
    victim_side = {
        "foreign": set(params),
        "wrong-kind": set(params),
        "own-workspace": {p for p in params if p != owner},
        "foreign-workspace": {owner},
    }[mode]
    values: dict[str, str] = {}
    foreign: dict[str, str] = {}
    randoms: dict[str, str] = {}
    for parameter in params:
        pool = pools[parameter]
        if parameter not in victim_side:
            values[parameter] = rng.choice(attacker.ids[pool])
            continue
        if mode == "wrong-kind" and pool != "slug":
            pool = rng.choice([other for other in UUID_POOLS if other != pool])
        candidates = victim.ids[pool]
        if owner not in victim_side:  # in the caller's own workspace: only the victim's own
            candidates = [v for v in candidates if v not in attacker.ids[pool]]
        value = rng.choice(candidates)
        values[parameter] = foreign[parameter] = value
        randoms[parameter] = random_value(rng, pools[parameter])
    return Attempt(operation, rng.choice(CREDENTIALS), mode, values, foreign, randoms)


def masked(text: str, values: dict[str, str]) -> str:
    """``text`` with every substituted id replaced by a placeholder."""
    for parameter, value in values.items():
        text = text.replace(value, "{" + parameter + "}")
    return text


def send(api: Api, attempt: Attempt, token: str, substitutes: dict[str, str]) -> dict[str, Any]:
    """The answer to the attempt with ``substitutes`` in place of the foreign ids, in a form
    to compare: status, masked body, headers but the volatile ones."""
    values = {**attempt.values, **substitutes}
    key = (attempt.operation.method, attempt.operation.path)
    response = api.client.request(
        attempt.operation.method,
        attempt.path(values),
        json=VALID_BODIES.get(key),
        headers=bearer(token),
    )
    body = masked(response.text, substitutes)
    request_id = response.headers.get("x-request-id", "")
    body = body.replace(request_id, "{request_id}") if request_id else body
    headers = {
        name: masked(value, substitutes)
        for name, value in response.headers.items()
        if name not in VOLATILE_HEADERS
    }
    return {"status": response.status_code, "body": body, "headers": headers}


@contextmanager
def facade_on(database: str) -> Iterator[Any]:
    """A fresh Strongroom in memory, or on a scratch PostgreSQL database."""
    if database == "memory":
        yield make_facade()
        return
    with postgres_facade("strongroom_iso") as facade:
        yield facade


@contextmanager
def two_tenants(database: str = "memory") -> Iterator[tuple[Api, Tenant, Tenant]]:
    """A fresh Strongroom with workspaces A and B."""
    with facade_on(database) as facade, make_client(facade) as client:
        api = Api(facade, client)
        yield api, build_tenant(api, "alpha"), build_tenant(api, "beta")


def run_attempts(api: Api, attacker: Tenant, victim: Tenant, count: int, seed: int) -> None:
    """``count`` attempts of ``attacker`` against ``victim``; every difference between a
    foreign answer and its random twin is collected, then reported together."""
    rng = random.Random(seed)
    before = {t.name: snapshot(api, t) for t in (attacker, victim)}
    differences: list[str] = []
    statuses: dict[int, int] = {}
    for _ in range(count):
        attempt = generate(rng, attacker, victim)
        token = attacker.tokens[attempt.credential]
        foreign = send(api, attempt, token, attempt.foreign)
        twin = send(api, attempt, token, attempt.randoms)
        statuses[foreign["status"]] = statuses.get(foreign["status"], 0) + 1
        if foreign != twin and len(differences) < 20:
            differences.append(
                f"{attempt.operation.method} {attempt.path(attempt.values)} as "
                f"{attempt.credential} ({attempt.mode}):\n  foreign {foreign}\n  random  {twin}"
            )
        assert foreign["status"] < 500, foreign
    assert not differences, "\n".join(differences)
    after = {t.name: snapshot(api, t) for t in (attacker, victim)}
    assert after == before
    # Only refusals: never an answer that acted on an object.
    assert set(statuses) <= {403, 404}, statuses


@pytest.mark.slow
@pytest.mark.parametrize("shard", range(SHARDS))
def test_a_foreign_id_answers_like_a_random_one(shard: int) -> None:
    """Tenant A against B (even shards) and B against A (odd shards): 0 differences and
    nothing changed, over ``ATTEMPTS`` attempts in all."""
    with two_tenants(DATABASE) as (api, alpha, beta):
        attacker, victim = (alpha, beta) if shard % 2 == 0 else (beta, alpha)
        run_attempts(api, attacker, victim, -(-ATTEMPTS // SHARDS), SEED * 1000 + shard)


@pytest.mark.parametrize("direction", ["alpha-beta", "beta-alpha"])
def test_isolation_holds_on_postgresql(direction: str) -> None:
    """The same generator, fewer attempts, on PostgreSQL (where the queries, not a dict,
    decide what a foreign id finds)."""
    with two_tenants("postgres") as (api, alpha, beta):
        attacker, victim = (alpha, beta) if direction == "alpha-beta" else (beta, alpha)
        run_attempts(api, attacker, victim, POSTGRES_ATTEMPTS, SEED * 1000 + 7)


def test_the_generator_covers_every_id_route_and_credential() -> None:
    """Every id route of the table has an id pool for each parameter and, when it needs
    one, a valid body; a sample of the generator reaches every route, credential and mode,
    both ways."""
    routes = id_operations()
    assert len(routes) >= 30
    for operation in routes:
        for parameter in parameters(operation):
            pool_of(operation.path, parameter)
        needs_body = operation.body is not None and operation.body_required
        assert not needs_body or (operation.method, operation.path) in VALID_BODIES, operation
    alpha = Tenant("a", "", {p: [str(uuid4())] for p in (*UUID_POOLS, "slug")}, {})
    beta = Tenant("b", "", {p: [str(uuid4())] for p in (*UUID_POOLS, "slug")}, {})
    rng = random.Random(SEED)
    sample = [generate(rng, alpha, beta) for _ in range(3000)]
    assert {a.operation.operation_id for a in sample} == {op.operation_id for op in routes}
    assert {a.credential for a in sample} == set(CREDENTIALS)
    assert {a.mode for a in sample} == {
        "foreign",
        "own-workspace",
        "foreign-workspace",
        "wrong-kind",
    }
    assert all(a.foreign and set(a.foreign) == set(a.randoms) for a in sample)


def test_snapshots_are_stable() -> None:
    """Reading a snapshot changes nothing (so a difference after the attack is the
    attack's), and the snapshot sees a real change."""
    with two_tenants() as (api, alpha, _):
        first = snapshot(api, alpha)
        assert snapshot(api, alpha) == first
        renamed = api.client.patch(
            f"/v1/backups/{alpha.ids['bid'][0]}", json={"name": "x"}, headers=bearer(alpha.admin)
        )
        assert renamed.status_code == 200, renamed.text
        assert snapshot(api, alpha) != first
