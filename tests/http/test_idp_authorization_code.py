"""The authorization-code grant with PKCE (RFC 6749 section 4.1, RFC 7636) of the built-in
identity provider, over HTTP: the sign-in page, the redirect with a code and the state, the
token exchange, and every refusal a careful client would meet."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from starlette.testclient import TestClient

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.memory.services import ManualClock
from strongroom.ports.driving import Strongroom
from support.pg_facade import postgres_facade
from support.world import PASSWORD, make_client, make_facade

EMAIL = "ada@example.com"
BASE = "http://testserver"
REDIRECT = f"{BASE}/app/"
WEB = "strongroom-web"


def challenge_of(verifier: str) -> str:
    """RFC 7636 S256, computed independently of the server's code."""
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


@pytest.fixture
def clock() -> ManualClock:
    """A clock the tests move by hand."""
    return ManualClock()


@pytest.fixture(params=["memory", "postgres"])
def stores(request: pytest.FixtureRequest) -> Iterator[TestClient]:
    """An HTTP client with one registered person, ``EMAIL``, on the in-memory store and on
    a scratch PostgreSQL database."""
    with ExitStack() as stack:
        if request.param == "postgres":
            facade = stack.enter_context(postgres_facade("strongroom_code_replay"))
        else:
            facade = make_facade()
        facade.deps.identity.add_account(EMAIL, PASSWORD, "Ada Lovelace")
        yield stack.enter_context(make_client(facade))


@pytest.fixture
def client(clock: ManualClock) -> Iterator[TestClient]:
    """An HTTP client with one registered person, ``EMAIL``."""
    facade: Strongroom = make_facade(clock=clock)
    provider = facade.deps.identity
    assert isinstance(provider, BuiltinIdentityProvider)
    provider.add_account(EMAIL, PASSWORD, "Ada Lovelace")
    with make_client(facade) as test_client:
        yield test_client


def request_params(verifier: str, **overrides: str) -> dict[str, str]:
    """A valid authorization request, with ``overrides``."""
    params = {
        "response_type": "code",
        "client_id": WEB,
        "redirect_uri": REDIRECT,
        "code_challenge": challenge_of(verifier),
        "code_challenge_method": "S256",
        "state": "st-" + secrets.token_urlsafe(8),
    }
    return {**params, **overrides}


def sign_in(
    client: TestClient, params: dict[str, str], password: str = PASSWORD
) -> httpx2.Response:
    """Post the sign-in form of the page with ``params``."""
    return client.post(
        "/idp/authorize",
        data={**params, "email": EMAIL, "password": password},
        follow_redirects=False,
    )


def redirected_query(response: httpx2.Response) -> dict[str, str]:
    """The query of a 303 to the redirect URI."""
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    assert location.startswith(REDIRECT + "?")
    return {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}


def exchange(client: TestClient, code: str, verifier: str, **overrides: str) -> httpx2.Response:
    """The token request of the authorization code grant."""
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT,
        "client_id": WEB,
    }
    return client.post("/idp/token", data={**form, **overrides})


def code_for(client: TestClient, verifier: str) -> str:
    """A fresh authorization code for ``verifier``."""
    params = request_params(verifier)
    query = redirected_query(sign_in(client, params))
    assert query["state"] == params["state"]
    return query["code"]


def oauth_error(response: httpx2.Response) -> str:
    """The ``error`` of an RFC 6749 section 5.2 answer (400, never cached)."""
    assert response.status_code == 400, response.text
    assert response.headers["cache-control"] == "no-store"
    body: dict[str, Any] = response.json()
    assert set(body) == {"error", "error_description"}
    error: str = body["error"]
    return error


def verifier() -> str:
    """A fresh PKCE verifier of 64 unreserved characters."""
    return secrets.token_urlsafe(48)


class TestTheWholeFlow:
    def test_page_then_code_then_token_then_session(self, client: TestClient) -> None:
        """A person signs in on the page; the browser exchanges the code with its verifier,
        then the access token for a session that `/v1/me` knows."""
        v = verifier()
        params = request_params(v)
        page = client.get("/idp/authorize", params=params)
        assert page.status_code == 200
        assert 'name="password"' in page.text
        assert f'value="{params["state"]}"' in page.text
        policy = page.headers["content-security-policy"]
        assert "script-src 'none'" in policy
        assert "form-action 'self'" in policy
        query = redirected_query(sign_in(client, params))
        assert query["state"] == params["state"]
        token = exchange(client, query["code"], v)
        assert token.status_code == 200, token.text
        assert token.headers["cache-control"] == "no-store"
        access = token.json()["access_token"]
        session = client.post("/v1/auth/sessions", headers={"Authorization": f"Bearer {access}"})
        assert session.status_code == 201, session.text
        me = client.get("/v1/me", headers={"Authorization": f"Bearer {session.json()['token']}"})
        assert me.json()["user"]["email"] == EMAIL

    def test_config_and_metadata_name_the_authorization_endpoint(self, client: TestClient) -> None:
        config = client.get("/v1/auth/cli/config").json()
        assert config["authorization_endpoint"] == f"{BASE}/idp/authorize"
        metadata = client.get("/.well-known/oauth-authorization-server").json()
        assert metadata["authorization_endpoint"] == f"{BASE}/idp/authorize"
        assert metadata["code_challenge_methods_supported"] == ["S256"]
        assert "authorization_code" in metadata["grant_types_supported"]
        assert metadata["response_types_supported"] == ["code"]


class TestTheTokenExchange:
    def test_a_wrong_verifier_is_refused(self, client: TestClient) -> None:
        v = verifier()
        code = code_for(client, v)
        assert oauth_error(exchange(client, code, verifier())) == "invalid_grant"
        # The right verifier still works afterwards: a wrong guess does not burn the code
        # for its owner (the code's 60 seconds bound the guessing).
        assert exchange(client, code, v).status_code == 200

    def test_a_code_is_single_use_and_reuse_revokes_its_token(self, client: TestClient) -> None:
        v = verifier()
        code = code_for(client, v)
        first = exchange(client, code, v)
        assert first.status_code == 200
        assert oauth_error(exchange(client, code, v)) == "invalid_grant"
        access = first.json()["access_token"]
        session = client.post("/v1/auth/sessions", headers={"Authorization": f"Bearer {access}"})
        assert session.status_code == 401

    def test_a_replayed_code_revokes_the_sessions_made_from_it(self, stores: TestClient) -> None:
        """RFC 6749 section 4.1.2, contract 13: the code's second exchange is refused and
        ends the session its token was exchanged for and the session switched from it,
        however late the replay; a session from another sign-in of the same person stays."""
        client = stores

        def signed_in() -> str:
            v = verifier()
            access = exchange(client, code_for(client, v), v).json()["access_token"]
            made = client.post("/v1/auth/sessions", headers={"Authorization": f"Bearer {access}"})
            assert made.status_code == 201, made.text
            token: str = made.json()["token"]
            return token

        v = verifier()
        code = code_for(client, v)
        access = exchange(client, code, v).json()["access_token"]
        made = client.post("/v1/auth/sessions", headers={"Authorization": f"Bearer {access}"})
        first = made.json()["token"]
        workspace = client.post(
            "/v1/workspaces", json={"name": "Acme"}, headers={"Authorization": f"Bearer {first}"}
        ).json()
        switched = client.post(
            "/v1/auth/switch",
            json={"workspace_id": workspace["id"]},
            headers={"Authorization": f"Bearer {first}"},
        ).json()["token"]
        kept = signed_in()
        for token in (switched, kept):
            me = client.get("/v1/me", headers={"Authorization": f"Bearer {token}"})
            assert me.status_code == 200

        assert oauth_error(exchange(client, code, v)) == "invalid_grant"
        for token in (first, switched):
            me = client.get("/v1/me", headers={"Authorization": f"Bearer {token}"})
            assert me.status_code == 401
        me = client.get("/v1/me", headers={"Authorization": f"Bearer {kept}"})
        assert me.status_code == 200

    def test_a_late_replay_still_revokes(self, client: TestClient, clock: ManualClock) -> None:
        """A replay after the code's minute is refused as before, and still ends the
        session made from it."""
        v = verifier()
        code = code_for(client, v)
        access = exchange(client, code, v).json()["access_token"]
        made = client.post("/v1/auth/sessions", headers={"Authorization": f"Bearer {access}"})
        session = {"Authorization": f"Bearer {made.json()['token']}"}
        clock.advance(timedelta(minutes=5))
        assert client.get("/v1/me", headers=session).status_code == 200
        assert oauth_error(exchange(client, code, v)) == "invalid_grant"
        assert client.get("/v1/me", headers=session).status_code == 401

    def test_a_code_expires_after_a_minute(self, client: TestClient, clock: ManualClock) -> None:
        v = verifier()
        code = code_for(client, v)
        clock.advance(timedelta(seconds=61))
        assert oauth_error(exchange(client, code, v)) == "invalid_grant"

    def test_another_redirect_uri_is_refused(self, client: TestClient) -> None:
        v = verifier()
        code = code_for(client, v)
        assert (
            oauth_error(exchange(client, code, v, redirect_uri=f"{BASE}/app/other"))
            == "invalid_grant"
        )

    def test_another_client_is_refused(self, client: TestClient) -> None:
        v = verifier()
        code = code_for(client, v)
        assert oauth_error(exchange(client, code, v, client_id="strongroom-cli")) == (
            "invalid_client"
        )

    @pytest.mark.parametrize("bad", ["short", "x" * 129, "spaces are not allowed" * 3])
    def test_a_malformed_verifier_is_invalid_request(self, client: TestClient, bad: str) -> None:
        v = verifier()
        code = code_for(client, v)
        assert oauth_error(exchange(client, code, bad)) == "invalid_request"

    @pytest.mark.parametrize("missing", ["code", "code_verifier", "redirect_uri"])
    def test_a_missing_parameter_is_invalid_request(self, client: TestClient, missing: str) -> None:
        form = {
            "grant_type": "authorization_code",
            "code": "bka_x",
            "code_verifier": verifier(),
            "redirect_uri": REDIRECT,
            "client_id": WEB,
        }
        del form[missing]
        assert oauth_error(client.post("/idp/token", data=form)) == "invalid_request"

    def test_a_device_code_exchange_cannot_spend_an_authorization_code(
        self, client: TestClient
    ) -> None:
        v = verifier()
        code = code_for(client, v)
        refused = client.post(
            "/idp/token",
            data={
                "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
                "device_code": code,
                "client_id": "strongroom-cli",
            },
        )
        assert oauth_error(refused) == "invalid_grant"
        assert exchange(client, code, v).status_code == 200


class TestTheAuthorizationRequest:
    @pytest.mark.parametrize(
        "redirect_uri",
        [
            "https://evil.example/app/",
            "http://testserver.evil.example/app/",
            "http://testserver:8081/app/",
            "//evil.example/app/",
            "/app/",
            "http://testserver/app/#fragment",
            "javascript:alert(1)",
            "http://testserver/v1/me",
            "http://testserver/idp/token",
            "http://testserver/application",
            "http://testserver/app/../idp/token",
            "http://testserver/app/%2e%2e/idp/token",
        ],
    )
    def test_a_foreign_redirect_uri_is_shown_never_followed(
        self, client: TestClient, redirect_uri: str
    ) -> None:
        params = request_params(verifier(), redirect_uri=redirect_uri)
        page = client.get("/idp/authorize", params=params, follow_redirects=False)
        assert page.status_code == 400
        assert "location" not in page.headers
        assert "redirect_uri" in page.text
        posted = sign_in(client, params)
        assert posted.status_code == 400
        assert "location" not in posted.headers

    def test_an_unknown_client_is_shown_never_followed(self, client: TestClient) -> None:
        params = request_params(verifier(), client_id="strongroom-cli")
        page = client.get("/idp/authorize", params=params, follow_redirects=False)
        assert page.status_code == 400
        assert "location" not in page.headers

    @pytest.mark.parametrize(
        ("override", "error"),
        [
            ({"state": ""}, "invalid_request"),
            ({"code_challenge_method": "plain"}, "invalid_request"),
            ({"code_challenge_method": ""}, "invalid_request"),
            ({"code_challenge": "too-short"}, "invalid_request"),
            ({"response_type": "token"}, "unsupported_response_type"),
        ],
    )
    def test_other_refusals_go_back_to_the_client(
        self, client: TestClient, override: dict[str, str], error: str
    ) -> None:
        params = request_params(verifier(), **override)
        response = client.get("/idp/authorize", params=params, follow_redirects=False)
        query = redirected_query(response)
        assert query["error"] == error
        assert query["error_description"]
        assert query.get("state", "") == params["state"]
        assert "code" not in query

    def test_a_wrong_password_shows_the_page_again(self, client: TestClient) -> None:
        params = request_params(verifier())
        response = sign_in(client, params, password="not the password")
        assert response.status_code == 400
        assert "location" not in response.headers
        assert "Wrong email or password" in response.text
        assert f'value="{params["code_challenge"]}"' in response.text

    def test_the_state_is_echoed_exactly(self, client: TestClient) -> None:
        state = "a b&c=d/é"
        params = request_params(verifier(), state=state)
        assert redirected_query(sign_in(client, params))["state"] == state


class TestFailedSignIns:
    def test_failures_are_limited_per_email_and_address(self, client: TestClient) -> None:
        """The page counts failed passwords like device approvals: the eleventh attempt
        for one email from one address is 429 with Retry-After, shown on the page."""
        params = request_params(verifier())
        for _ in range(10):
            assert sign_in(client, params, password="not the password").status_code == 400
        limited = sign_in(client, params)
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) > 0
        assert "Too many failed attempts" in limited.text
        assert "location" not in limited.headers
