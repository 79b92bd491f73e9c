"""The dashboard's files as served, and every API path its scripts name is an operation of
the OpenAPI document (a static check beside the browser suite's record of real requests)."""

from __future__ import annotations

import re
from importlib import resources

from strongroom.ports.driven.identity import CliConfig, Identity
from support.world import Api, make_client, make_facade

ASSETS = resources.files("strongroom.adapters.dashboard").joinpath("static")
# A path literal or template in the scripts: "/v1/..." or `/v1/...${x}...`, also /idp.
PATH_LITERAL = re.compile(r"[\"`](/(?:v1|idp)/[^\"`?]*)[\"`?]")


def script_paths() -> set[str]:
    """Every API path the dashboard's scripts name, `${...}` turned into `{}`."""
    found: set[str] = set()
    for entry in ASSETS.iterdir():
        if entry.name.endswith(".js"):
            for literal in PATH_LITERAL.findall(entry.read_text(encoding="utf-8")):
                found.add(re.sub(r"\$\{[^}]*\}", "{}", literal))
    return found


def test_every_path_in_the_scripts_is_documented(api: Api) -> None:
    document = api.client.get("/openapi.json").json()
    templates = [re.sub(r"\{[^}]+\}", "{}", path) for path in document["paths"]]
    paths = script_paths()
    assert "/v1/auth/sessions" in paths
    assert "/idp/signup" in paths
    # `${base}/members` style paths start from a template the scripts also name in full.
    undocumented = {
        p for p in paths if not any(t == p or t.endswith(p.split("}", 1)[-1]) for t in templates)
    }
    assert undocumented == set()


def test_the_page_and_its_files_carry_the_policy(api: Api) -> None:
    page = api.client.get("/app")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    policy = page.headers["content-security-policy"]
    assert "script-src 'self';" in policy
    assert "unsafe" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    assert re.search(r"<script(?![^>]*\bsrc=)", page.text) is None, "an inline script"
    assert " style=" not in page.text
    for name in ("app.js", "api.js", "auth.js", "cron.js", "style.css"):
        response = api.client.get(f"/app/{name}")
        assert response.status_code == 200, name
        assert response.headers["content-security-policy"] == policy


def test_unknown_and_malformed_files(api: Api) -> None:
    assert api.client.get("/app/nothing.js").json()["error"]["code"] == "not_found"
    response = api.client.get("/app/..%2Fapp.py")
    assert response.status_code in (400, 404)
    assert api.client.get("/app/.hidden").status_code == 400


class ExternalProvider:
    """An external OIDC stand-in whose token endpoint is on another origin."""

    async def verify_access_token(self, token: str) -> Identity:
        """Vouches for nobody."""
        raise NotImplementedError

    async def create_organization(self, name: str) -> str:
        """A fixed organization id."""
        return "org_external"

    async def delete_organization(self, org_id: str) -> None:
        """Nothing to remove."""

    def cli_config(self, base_url: str) -> CliConfig:
        """Endpoints at the provider."""
        return CliConfig(
            issuer="https://login.example.com/",
            client_id="dashboard-client",
            device_authorization_endpoint="https://login.example.com/oauth/device/code",
            token_endpoint="https://login.example.com/oauth/token",
            scopes=("openid",),
            authorization_endpoint="https://login.example.com/authorize",
        )


def test_an_external_providers_token_endpoint_is_the_only_other_connection() -> None:
    """With an external provider, the browser exchanges the code at its token endpoint:
    that origin joins `connect-src`, and nothing else changes."""
    with make_client(make_facade(identity=ExternalProvider())) as client:
        policy = client.get("/app").headers["content-security-policy"]
        config = client.get("/v1/auth/cli/config").json()
    assert "connect-src 'self' https://login.example.com;" in policy
    assert "script-src 'self';" in policy
    assert config["authorization_endpoint"] == "https://login.example.com/authorize"
