"""The built-in identity provider with real OAuth client libraries (contract 13), over a
real server: authlib and requests-oauthlib at their defaults discover the endpoints from
the RFC 8414 metadata, run the device-code grant while a person approves in the browser
form, and the token they get opens exactly one Strongroom session.

The service runs on a clock the test moves, so that waiting out the poll interval takes
no real time.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests
from authlib.common.security import generate_token
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session as AuthlibSession
from live_server import LiveServer
from oauthlib.oauth2 import DeviceClient
from oauthlib.oauth2.rfc6749.errors import OAuth2Error
from requests.auth import HTTPBasicAuth
from requests_oauthlib import OAuth2Session as OAuthlibSession

from strongroom.adapters.http.app import app_for
from strongroom.adapters.identity.builtin import CLIENT_ID, WEB_CLIENT_ID
from strongroom.adapters.memory.services import ManualClock
from support.world import make_facade

DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"
EMAIL = "ada@example.com"
PASSWORD = "correct-horse-battery"
AUTHORIZATION_FIELDS = (
    "response_type",
    "client_id",
    "redirect_uri",
    "code_challenge",
    "code_challenge_method",
    "state",
)
# Longer than the poll interval the server asks for (5 s).
POLL_WAIT = timedelta(seconds=6)


class Provider:
    """The served identity provider, a person who approves in its form, and its clock."""

    def __init__(self, url: str, clock: ManualClock) -> None:
        self.url = url
        self.clock = clock
        self.metadata: dict[str, Any] = requests.get(
            f"{url}/.well-known/oauth-authorization-server", timeout=10
        ).json()

    def approve(self, user_code: str) -> None:
        """What the person does in the browser: post the approval form."""
        form = {"user_code": user_code, "email": EMAIL, "password": PASSWORD}
        page = requests.post(
            f"{self.url}/idp/device", data={**form, "decision": "approve"}, timeout=10
        )
        assert page.status_code == 200
        assert "Device approved" in page.text

    def exchange(self, access_token: str) -> requests.Response:
        """``POST /v1/auth/sessions`` with the provider's token."""
        return requests.post(
            f"{self.url}/v1/auth/sessions",
            headers={"Authorization": f"Bearer {access_token}"},
            timeout=10,
        )


@pytest.fixture
def provider() -> Iterator[Provider]:
    clock = ManualClock()
    with LiveServer(app_for(make_facade(clock=clock))) as server:
        signup = requests.post(
            f"{server.url}/idp/signup",
            data={"email": EMAIL, "password": PASSWORD, "name": "Ada"},
            timeout=10,
        )
        assert signup.status_code == 201, signup.text
        yield Provider(server.url, clock)


def assert_signs_in_once(provider: Provider, token: dict[str, Any]) -> None:
    """The token opens one session; its second exchange is 401 (contract 13)."""
    assert token["token_type"].lower() == "bearer"
    first = provider.exchange(token["access_token"])
    assert first.status_code == 201, first.text
    assert first.json()["token"].startswith("bks_")
    again = provider.exchange(token["access_token"])
    assert again.status_code == 401
    assert again.json()["error"]["code"] == "unauthenticated"


def test_the_metadata_names_the_endpoints_the_clients_use(provider: Provider) -> None:
    """RFC 8414: the issuer, both endpoints under it, the device grant, and the two client
    authentication methods a public client uses."""
    metadata = provider.metadata
    assert metadata["issuer"] == f"{provider.url}/idp"
    assert metadata["device_authorization_endpoint"] == f"{provider.url}/idp/device/code"
    assert metadata["token_endpoint"] == f"{provider.url}/idp/token"
    assert DEVICE_CODE in metadata["grant_types_supported"]
    assert set(metadata["token_endpoint_auth_methods_supported"]) >= {
        "none",
        "client_secret_basic",
    }


def test_authlib_runs_the_device_grant(provider: Provider) -> None:
    """authlib's requests session (a public client: auth method ``none``, the client id in
    the body): ``authorization_pending`` before the approval, a token after it."""
    session = AuthlibSession(CLIENT_ID)
    sent: list[requests.PreparedRequest] = []
    session.hooks["response"].append(lambda response, *_a, **_k: sent.append(response.request))
    authorization = session.post(
        provider.metadata["device_authorization_endpoint"],
        data={"client_id": CLIENT_ID},
        withhold_token=True,
    ).json()
    with pytest.raises(OAuthError) as pending:
        session.fetch_token(
            provider.metadata["token_endpoint"],
            grant_type=DEVICE_CODE,
            device_code=authorization["device_code"],
        )
    assert pending.value.error == "authorization_pending"
    provider.approve(authorization["user_code"])
    provider.clock.advance(POLL_WAIT)
    token = session.fetch_token(
        provider.metadata["token_endpoint"],
        grant_type=DEVICE_CODE,
        device_code=authorization["device_code"],
    )
    assert f"client_id={CLIENT_ID}" in str(sent[-1].body)
    assert "Authorization" not in sent[-1].headers
    assert_signs_in_once(provider, token)


def test_requests_oauthlib_runs_the_device_grant(
    provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """requests-oauthlib with oauthlib's ``DeviceClient``: its token requests identify the
    client with HTTP Basic and an empty password (its default), as does the device
    authorization request here."""
    # oauthlib refuses plain HTTP unless told; the test server is loopback HTTP.
    monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")
    session = OAuthlibSession(client=DeviceClient(CLIENT_ID))
    sent: list[requests.PreparedRequest] = []
    session.hooks["response"].append(lambda response, *_a, **_k: sent.append(response.request))
    authorization = session.post(
        provider.metadata["device_authorization_endpoint"],
        data={"scope": "openid profile email"},
        auth=HTTPBasicAuth(CLIENT_ID, ""),
    ).json()
    with pytest.raises(OAuth2Error) as pending:
        session.fetch_token(
            provider.metadata["token_endpoint"], device_code=authorization["device_code"]
        )
    assert pending.value.error == "authorization_pending"
    provider.approve(authorization["user_code"])
    provider.clock.advance(POLL_WAIT)
    token = session.fetch_token(
        provider.metadata["token_endpoint"], device_code=authorization["device_code"]
    )
    basic = base64.b64encode(f"{CLIENT_ID}:".encode()).decode()
    assert sent[-1].headers["Authorization"] == f"Basic {basic}"
    assert_signs_in_once(provider, token)


def test_authlib_runs_the_authorization_code_grant_with_pkce(provider: Provider) -> None:
    """The dashboard's flow with a real client library: authlib builds the authorization
    URL with an S256 challenge from the metadata's endpoint, the person signs in on the
    page (its form), the redirect carries the code and the state, and authlib exchanges the
    code with its verifier for a token that opens exactly one session."""
    metadata = provider.metadata
    assert "S256" in metadata["code_challenge_methods_supported"]
    redirect_uri = f"{provider.url}/app"
    session = AuthlibSession(
        WEB_CLIENT_ID,
        redirect_uri=redirect_uri,
        code_challenge_method="S256",
        token_endpoint_auth_method="none",
    )
    verifier = generate_token(64)
    url, state = session.create_authorization_url(
        metadata["authorization_endpoint"], code_verifier=verifier
    )
    page = requests.get(url, timeout=10)
    assert page.status_code == 200
    assert 'name="password"' in page.text
    request = dict(parse_qsl(urlsplit(url).query))
    form = {name: request[name] for name in AUTHORIZATION_FIELDS}
    signed_in = requests.post(
        metadata["authorization_endpoint"],
        data={**form, "email": EMAIL, "password": PASSWORD},
        allow_redirects=False,
        timeout=10,
    )
    assert signed_in.status_code == 303, signed_in.text
    location = signed_in.headers["Location"]
    assert location.startswith(redirect_uri + "?")
    token = session.fetch_token(
        metadata["token_endpoint"],
        authorization_response=location,
        state=state,
        code_verifier=verifier,
    )
    assert_signs_in_once(provider, token)
    # The code is spent: authlib's second exchange is refused.
    with pytest.raises(OAuthError) as again:
        session.fetch_token(
            metadata["token_endpoint"],
            authorization_response=location,
            state=state,
            code_verifier=verifier,
        )
    assert again.value.error == "invalid_grant"
