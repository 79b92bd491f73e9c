"""The built-in identity provider over HTTP: sign-up, the device authorization request, the
approval page and its form, and the token endpoint with OAuth's own error format."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote_plus, urlsplit
from uuid import UUID

import httpx2
import pytest
from starlette.testclient import TestClient

from strongroom.adapters.http.app import app_for
from strongroom.adapters.identity.builtin import CLIENT_ID, BuiltinIdentityProvider
from strongroom.adapters.identity.signup_limit import SignupLimiter
from strongroom.adapters.memory.services import ManualClock
from strongroom.adapters.webkit.context import MAX_BODY_BYTES
from strongroom.ports.driven.identity import CliConfig, Identity
from strongroom.ports.driving import Strongroom
from support.world import PASSWORD, bearer, make_client, make_facade

EMAIL = "ada@example.com"
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
FORM = "application/x-www-form-urlencoded"
JSON = {"Accept": "application/json"}
SECURITY_HEADERS = {
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


@pytest.fixture
def clock() -> ManualClock:
    """A clock the tests move by hand."""
    return ManualClock()


@pytest.fixture
def facade(clock: ManualClock) -> Strongroom:
    """A Strongroom on the manual clock, with the built-in provider."""
    return make_facade(clock=clock)


@pytest.fixture
def client(facade: Strongroom) -> Iterator[TestClient]:
    """An HTTP client over ``facade`` with one registered person, ``EMAIL``."""
    provider = facade.deps.identity
    assert isinstance(provider, BuiltinIdentityProvider)
    provider.add_account(EMAIL, PASSWORD, "Ada Lovelace")
    with make_client(facade) as test_client:
        yield test_client


# Helpers.


def start(client: TestClient) -> dict[str, Any]:
    """A device authorization for the CLI."""
    response = client.post("/idp/device/code", data={"client_id": CLIENT_ID})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def decide(
    client: TestClient,
    user_code: str,
    decision: str = "approve",
    *,
    email: str = EMAIL,
    password: str = PASSWORD,
    headers: dict[str, str] | None = None,
) -> httpx2.Response:
    """Post the approval form."""
    return client.post(
        "/idp/device",
        data={"user_code": user_code, "email": email, "password": password, "decision": decision},
        headers=headers,
    )


def poll(client: TestClient, device_code: str, **overrides: str) -> httpx2.Response:
    """One token request (``overrides`` replace or add form parameters)."""
    form = {"grant_type": GRANT_TYPE, "device_code": device_code, "client_id": CLIENT_ID}
    return client.post("/idp/token", data={**form, **overrides})


def raw_post(
    client: TestClient,
    path: str,
    body: str | bytes,
    content_type: str | None = FORM,
    **headers: str,
) -> httpx2.Response:
    """POST ``body`` verbatim with ``content_type``."""
    sent = dict(headers)
    if content_type is not None:
        sent["Content-Type"] = content_type
    return client.post(path, content=body, headers=sent)


def assert_envelope(response: httpx2.Response, status: int, code: str) -> str:
    """The API's nested error envelope with ``code``; returns the message."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code
    assert error["request_id"] == response.headers["x-request-id"]
    message: str = error["message"]
    assert message
    return message


def assert_oauth_error(response: httpx2.Response, error: str) -> str:
    """RFC 6749 section 5.2: 400 with ``{error, error_description}``, never cached."""
    assert response.status_code == 400, response.text
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error", "error_description"}
    assert body["error"] == error
    description: str = body["error_description"]
    assert description
    return description


def assert_html_page(response: httpx2.Response, status: int) -> str:
    """A self-contained HTML page with the security headers; returns its text."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "style-src 'self' 'unsafe-inline'" in policy
    assert "frame-ancestors 'none'" in policy
    text = response.text
    assert "<script" not in text.lower()
    assert "<link" not in text.lower()
    assert "http://" not in text
    assert "https://" not in text
    return text


class OtherIdentityProvider:
    """An identity provider that is not the built-in one (an external OIDC stand-in)."""

    async def verify_access_token(self, token: str) -> Identity:
        """Vouches for nobody."""
        raise NotImplementedError

    async def create_organization(self, name: str) -> str:
        """A fixed organization id."""
        return "org_external"

    async def delete_organization(self, org_id: str) -> None:
        """Nothing to remove."""

    def cli_config(self, base_url: str) -> CliConfig:
        """Endpoints elsewhere."""
        return CliConfig(
            "https://idp.example", "cli", "https://idp.example/d", "https://idp.example/t", ()
        )


# Sign-up.


class TestSignup:
    """``POST /idp/signup``."""

    def test_a_new_account_is_created(self, client: TestClient) -> None:
        """201 with the new user's id and trimmed email; the account can then approve codes."""
        response = client.post(
            "/idp/signup",
            data={"email": " linus@example.com ", "password": "12345678", "name": "Linus"},
        )
        assert response.status_code == 201, response.text
        assert response.headers["content-type"] == "application/json"
        body = response.json()
        assert set(body) == {"user_id", "email"}
        UUID(body["user_id"])
        assert body["email"] == "linus@example.com"
        authorization = start(client)
        approved = decide(
            client,
            authorization["user_code"],
            email="linus@example.com",
            password="12345678",
            headers=JSON,
        )
        assert approved.json() == {"status": "approved"}

    def test_a_taken_email_is_409_name_taken(self, client: TestClient) -> None:
        """The same email in any case again: 409 ``name_taken``."""
        response = client.post(
            "/idp/signup", data={"email": EMAIL.upper(), "password": PASSWORD, "name": "Copy"}
        )
        assert_envelope(response, 409, "name_taken")

    @pytest.mark.parametrize(
        ("form", "mentions"),
        [
            pytest.param(
                {"email": "a@example.com", "password": "1234567", "name": "A"},
                "password",
                id="password of 7",
            ),
            pytest.param(
                {"email": "no-at-sign", "password": PASSWORD, "name": "A"}, "email", id="bad email"
            ),
            pytest.param(
                {"email": "a@example.com", "password": PASSWORD, "name": " "},
                "name",
                id="blank name",
            ),
            pytest.param(
                {"email": "a@example.com", "password": PASSWORD}, "name", id="missing name"
            ),
            pytest.param(
                {"email": "a@example.com", "name": "A"}, "password", id="missing password"
            ),
            pytest.param(
                {"email": "a@example.com", "password": PASSWORD, "name": "A", "admin": "1"},
                "admin",
                id="unknown field",
            ),
        ],
    )
    def test_a_malformed_sign_up_is_400(
        self, client: TestClient, form: dict[str, str], mentions: str
    ) -> None:
        """Short password, bad email, blank or missing field, unknown field: 400
        ``invalid_request`` whose message names the culprit."""
        message = assert_envelope(client.post("/idp/signup", data=form), 400, "invalid_request")
        assert mentions in message

    def test_a_repeated_parameter_is_400(self, client: TestClient) -> None:
        """Sending ``email`` twice is refused."""
        response = raw_post(
            client,
            "/idp/signup",
            "email=a%40example.com&email=b%40example.com&password=12345678&name=A",
        )
        assert "repeated" in assert_envelope(response, 400, "invalid_request")

    @pytest.mark.parametrize(
        "content_type",
        [None, "application/json", "multipart/form-data; boundary=x", f"{FORM}; charset=latin-1"],
    )
    def test_only_url_encoded_forms_are_accepted(
        self, client: TestClient, content_type: str | None
    ) -> None:
        """Any other content type (or none, or another charset) is 400 ``invalid_request``."""
        response = raw_post(
            client, "/idp/signup", "email=a%40example.com&password=12345678&name=A", content_type
        )
        assert "Content-Type" in assert_envelope(response, 400, "invalid_request")

    def test_a_charset_utf_8_parameter_is_fine(self, client: TestClient) -> None:
        """``; charset=UTF-8`` after the form media type is accepted, and UTF-8 names too."""
        response = raw_post(
            client,
            "/idp/signup",
            "email=b%40example.com&password=12345678&name=Bj%C3%B6rk",
            f"{FORM}; charset=UTF-8",
        )
        assert response.status_code == 201, response.text

    def test_a_body_that_is_not_utf_8_is_400(self, client: TestClient) -> None:
        """Percent-escapes that do not decode as UTF-8 are refused, not mangled."""
        response = raw_post(
            client, "/idp/signup", "email=b%40example.com&password=12345678&name=%FF%FE"
        )
        assert_envelope(response, 400, "invalid_request")

    def test_sign_up_turned_off_is_404(self, facade: Strongroom, client: TestClient) -> None:
        """With sign-up disabled the endpoint answers 404 ``not_found``, whatever the body."""
        provider = facade.deps.identity
        assert isinstance(provider, BuiltinIdentityProvider)
        provider.signup_enabled = False
        response = client.post(
            "/idp/signup", data={"email": "new@example.com", "password": PASSWORD, "name": "N"}
        )
        assert_envelope(response, 404, "not_found")
        assert_envelope(raw_post(client, "/idp/signup", "{}", "application/json"), 404, "not_found")
        assert provider.account_id("new@example.com") is None

    def test_sign_ups_are_limited_per_client_address(
        self, facade: Strongroom, client: TestClient
    ) -> None:
        """Sign-ups past the limit from one address: 429 ``rate_limited`` with
        ``Retry-After`` and no account; another address is not refused (issue 27)."""
        provider = facade.deps.identity
        assert isinstance(provider, BuiltinIdentityProvider)
        provider._signups = SignupLimiter(limit=2)
        for index in range(2):
            form = {"email": f"flood{index}@example.com", "password": PASSWORD, "name": "F"}
            assert client.post("/idp/signup", data=form).status_code == 201
        form = {"email": "flood2@example.com", "password": PASSWORD, "name": "F"}
        refused = client.post("/idp/signup", data=form)
        assert_envelope(refused, 429, "rate_limited")
        assert 1 <= int(refused.headers["retry-after"]) <= 601
        assert provider.account_id("flood2@example.com") is None
        provider._signups.admit("203.0.113.9", datetime.now(UTC))  # another: not refused


# The device authorization request.


class TestDeviceCode:
    """``POST /idp/device/code``."""

    def test_a_device_authorization_is_issued(self, client: TestClient) -> None:
        """200 with the six fields of RFC 8628, absolute URLs from the request's own host,
        and no caching."""
        response = client.post("/idp/device/code", data={"client_id": CLIENT_ID})
        assert response.status_code == 200, response.text
        assert response.headers["cache-control"] == "no-store"
        body = response.json()
        assert list(body) == [
            "device_code",
            "user_code",
            "verification_uri",
            "verification_uri_complete",
            "expires_in",
            "interval",
        ]
        assert body["device_code"].startswith("bkd_")
        assert len(body["user_code"]) == 9
        assert body["user_code"][4] == "-"
        assert body["verification_uri"] == "http://testserver/idp/device"
        assert body["verification_uri_complete"] == (
            f"http://testserver/idp/device?user_code={body['user_code']}"
        )
        assert body["expires_in"] == 600
        assert body["interval"] == 5

    def test_urls_follow_the_public_url(self, facade: Strongroom) -> None:
        """With ``STRONGROOM_PUBLIC_URL`` set, the URLs are built on it (trailing slash or not)."""
        with make_client(facade, public_url="https://backups.example.com/") as client:
            body = client.post("/idp/device/code", data={"client_id": CLIENT_ID}).json()
        assert body["verification_uri"] == "https://backups.example.com/idp/device"
        assert body["verification_uri_complete"].startswith(
            "https://backups.example.com/idp/device?user_code="
        )

    def test_urls_follow_the_request_host(self, client: TestClient) -> None:
        """Without a public URL, the scheme and host the client used are taken."""
        response = client.post(
            "https://sr.internal:8443/idp/device/code", data={"client_id": CLIENT_ID}
        )
        assert response.json()["verification_uri"] == "https://sr.internal:8443/idp/device"

    def test_other_oauth_parameters_are_ignored(self, client: TestClient) -> None:
        """``scope`` (and anything else RFC 6749 lets a client add) does not get in the way."""
        response = client.post(
            "/idp/device/code", data={"client_id": CLIENT_ID, "scope": "openid profile email"}
        )
        assert response.status_code == 200, response.text

    @pytest.mark.parametrize(
        ("body", "error"),
        [
            pytest.param("", "invalid_request", id="no client_id"),
            pytest.param("client_id=", "invalid_request", id="blank client_id"),
            pytest.param("client_id=someone-else", "invalid_client", id="unknown client"),
            pytest.param(
                f"client_id={CLIENT_ID}&client_id={CLIENT_ID}", "invalid_request", id="repeated"
            ),
        ],
    )
    def test_a_bad_request_is_an_oauth_error(
        self, client: TestClient, body: str, error: str
    ) -> None:
        """Missing, blank or repeated ``client_id``: 400 ``invalid_request``; another client:
        400 ``invalid_client``, in OAuth's error format (contract 13)."""
        assert "client_id" in assert_oauth_error(raw_post(client, "/idp/device/code", body), error)

    def test_a_json_body_is_invalid_request(self, client: TestClient) -> None:
        """JSON is not a form: OAuth's 400 ``invalid_request``."""
        response = client.post("/idp/device/code", json={"client_id": CLIENT_ID})
        assert_oauth_error(response, "invalid_request")

    def test_an_oversized_body_is_invalid_request(self, client: TestClient) -> None:
        """A body over the cap: OAuth's 400 ``invalid_request`` as well."""
        body = f"client_id={CLIENT_ID}&scope=" + "a" * (1024 * 1024)
        assert_oauth_error(raw_post(client, "/idp/device/code", body), "invalid_request")


def basic(user: str, password: str = "") -> dict[str, str]:
    """HTTP Basic credentials, form-encoded as RFC 6749 section 2.3.1 says."""
    pair = f"{quote_plus(user)}:{quote_plus(password)}".encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


class TestClientIdentification:
    """The public client's id in the form or as HTTP Basic user name (contract 13)."""

    def test_basic_with_an_empty_password_starts_and_finishes_the_flow(
        self, client: TestClient
    ) -> None:
        """``client_id`` only in HTTP Basic, on both endpoints: the flow completes."""
        started = client.post(
            "/idp/device/code", data={"scope": "openid"}, headers=basic(CLIENT_ID)
        )
        assert started.status_code == 200, started.text
        authorization = started.json()
        assert decide(client, authorization["user_code"]).status_code == 200
        form = {"grant_type": GRANT_TYPE, "device_code": authorization["device_code"]}
        token = client.post("/idp/token", data=form, headers=basic(CLIENT_ID))
        assert token.status_code == 200, token.text
        assert token.json()["token_type"] == "Bearer"

    def test_basic_and_a_matching_form_field_are_accepted(self, client: TestClient) -> None:
        """Both ways at once, agreeing: accepted."""
        response = client.post(
            "/idp/device/code", data={"client_id": CLIENT_ID}, headers=basic(CLIENT_ID)
        )
        assert response.status_code == 200, response.text

    def test_basic_and_a_different_form_field_are_invalid_request(self, client: TestClient) -> None:
        """Two different ids: 400 ``invalid_request``."""
        response = client.post(
            "/idp/device/code", data={"client_id": "other"}, headers=basic(CLIENT_ID)
        )
        assert_oauth_error(response, "invalid_request")

    @pytest.mark.parametrize("path", ["/idp/device/code", "/idp/token"])
    @pytest.mark.parametrize(
        "headers",
        [
            pytest.param(basic(CLIENT_ID, "secret"), id="a secret"),
            pytest.param(basic("someone-else"), id="another client"),
            pytest.param({"Authorization": "Basic !!!"}, id="malformed"),
            pytest.param(
                {"Authorization": "Basic " + base64.b64encode(b"no-colon").decode()},
                id="no colon",
            ),
        ],
    )
    def test_a_refused_basic_client_is_401_with_a_challenge(
        self, client: TestClient, path: str, headers: dict[str, str]
    ) -> None:
        """A client refused after HTTP Basic: 401 ``invalid_client`` with
        ``WWW-Authenticate: Basic`` (RFC 6749 section 5.2)."""
        form = {"scope": "openid"}
        if path == "/idp/token":
            form = {"grant_type": GRANT_TYPE, "device_code": "bkd_x"}
        response = client.post(path, data=form, headers=headers)
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"].startswith("Basic")
        assert response.headers["cache-control"] == "no-store"
        assert response.json()["error"] == "invalid_client"


class TestServerMetadata:
    """``GET /.well-known/oauth-authorization-server`` (RFC 8414)."""

    @pytest.mark.parametrize(
        "path",
        ["/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/idp"],
    )
    def test_the_metadata_names_the_device_flow(self, client: TestClient, path: str) -> None:
        """The issuer, both endpoints, the device code grant and the client methods."""
        response = client.get(path)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["issuer"] == "http://testserver/idp"
        assert body["device_authorization_endpoint"] == "http://testserver/idp/device/code"
        assert body["token_endpoint"] == "http://testserver/idp/token"
        assert body["authorization_endpoint"] == "http://testserver/idp/authorize"
        assert body["grant_types_supported"] == [GRANT_TYPE, "authorization_code"]
        assert body["response_types_supported"] == ["code"]
        assert body["code_challenge_methods_supported"] == ["S256"]
        assert set(body["token_endpoint_auth_methods_supported"]) == {
            "none",
            "client_secret_basic",
        }
        assert "openid" in body["scopes_supported"]

    def test_the_metadata_agrees_with_the_cli_config(self, client: TestClient) -> None:
        """The same endpoints as ``GET /v1/auth/cli/config``."""
        config = client.get("/v1/auth/cli/config").json()
        body = client.get("/.well-known/oauth-authorization-server").json()
        names = ("issuer", "authorization_endpoint", "device_authorization_endpoint")
        for name in (*names, "token_endpoint"):
            assert body[name] == config[name]


# The approval page.


class TestDevicePage:
    """``GET /idp/device``."""

    def test_the_page_is_a_self_contained_form(self, client: TestClient) -> None:
        """An HTML page with the security headers, no external assets, and a form posting
        ``user_code``, ``email``, ``password`` and ``decision`` back to ``/idp/device``."""
        text = assert_html_page(client.get("/idp/device"), 200)
        assert '<form method="post" action="device"' in text
        for field in ('name="user_code"', 'name="email"', 'name="password"'):
            assert field in text
        assert 'type="password"' in text
        assert 'name="decision" value="approve"' in text
        assert 'name="decision" value="deny"' in text
        assert 'value=""' in text  # nothing prefilled

    def test_the_page_links_sign_up(self, client: TestClient) -> None:
        """A person without an account finds the way to make one (the dashboard's sign-up)."""
        text = assert_html_page(client.get("/idp/device"), 200)
        assert '<a href="/app#/signup">Create one</a>' in text

    def test_the_form_action_reaches_the_decision_endpoint(self, client: TestClient) -> None:
        """The relative action ``device`` resolves, from the page, to ``/idp/device``."""
        page = client.get("/idp/device")
        assert httpx2.URL(str(page.url)).join("device").path == "/idp/device"

    def test_the_code_is_prefilled_from_the_query(self, client: TestClient) -> None:
        """``verification_uri_complete`` opens the page with the code already filled in."""
        authorization = start(client)
        complete = urlsplit(authorization["verification_uri_complete"])
        text = assert_html_page(client.get(f"{complete.path}?{complete.query}"), 200)
        assert f'value="{authorization["user_code"]}"' in text

    @pytest.mark.parametrize(
        ("hostile", "escaped"),
        [
            (
                '"><script>alert(1)</script>',
                "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;",
            ),
            ("<script>alert(document.cookie)</script>", "&lt;script&gt;alert(document.cookie)"),
            ("' onfocus='alert(1)", "&#x27; onfocus=&#x27;alert(1)"),
            ("$title ${heading} &amp;", "$title ${heading} &amp;amp;"),
        ],
    )
    def test_a_hostile_code_is_escaped(
        self, client: TestClient, hostile: str, escaped: str
    ) -> None:
        """Markup in ``?user_code=`` comes back as inert, escaped text in the input's value
        (and template placeholders in it are not expanded)."""
        response = client.get("/idp/device", params={"user_code": hostile})
        text = assert_html_page(response, 200)
        assert f'value="{escaped}' in text
        if "<" in hostile or "'" in hostile:
            assert hostile not in text

    def test_a_hostile_request_id_is_escaped(self, client: TestClient) -> None:
        """The request id shown on the page is escaped too (clients choose it)."""
        response = client.get("/idp/device", headers={"X-Request-ID": "<script>x</script>"})
        text = assert_html_page(response, 200)
        assert "&lt;script&gt;x&lt;/script&gt;" in text

    def test_the_page_is_only_got(self, client: TestClient) -> None:
        """Other methods than GET, HEAD and POST are refused with 405."""
        assert client.put("/idp/device").status_code == 405


# The decision.


class TestDecision:
    """``POST /idp/device``: HTML by default, JSON when ``Accept`` prefers it."""

    def test_approving_answers_a_page_and_lets_the_client_in(self, client: TestClient) -> None:
        """200 HTML saying the device is approved, without the form; the client's next poll
        gets its token."""
        authorization = start(client)
        text = assert_html_page(decide(client, authorization["user_code"]), 200)
        assert "Device approved" in text
        assert "<form" in text
        assert " hidden>" in text
        token = poll(client, authorization["device_code"])
        assert token.status_code == 200, token.text

    def test_denying_answers_a_page_and_shuts_the_client_out(self, client: TestClient) -> None:
        """200 HTML saying the request is denied; the client hears ``access_denied``."""
        authorization = start(client)
        text = assert_html_page(decide(client, authorization["user_code"], "deny"), 200)
        assert "Request denied" in text
        assert_oauth_error(poll(client, authorization["device_code"]), "access_denied")

    @pytest.mark.parametrize(("decision", "status"), [("approve", "approved"), ("deny", "denied")])
    def test_json_answers_when_asked(self, client: TestClient, decision: str, status: str) -> None:
        """With ``Accept: application/json``: 200 ``{"status": ...}``."""
        authorization = start(client)
        response = decide(client, authorization["user_code"], decision, headers=JSON)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        assert response.json() == {"status": status}

    @pytest.mark.parametrize(
        ("accept", "json_wanted"),
        [
            ("application/json", True),
            ("application/json; charset=utf-8", True),
            ("text/html;q=0.5, application/json", True),
            ("application/*", True),
            ("text/html, application/json;q=0.9", False),
            ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", False),
            ("*/*", False),
            ("application/json, text/html", False),
            ("application/json;q=0, */*", False),
            ("application/json;q=abc", False),
            ("", False),
        ],
    )
    def test_the_answer_follows_accept(
        self, client: TestClient, accept: str, json_wanted: bool
    ) -> None:
        """JSON only when ``Accept`` ranks it strictly above HTML; HTML otherwise."""
        authorization = start(client)
        response = decide(client, authorization["user_code"], headers={"Accept": accept})
        assert response.status_code == 200
        if json_wanted:
            assert response.json() == {"status": "approved"}
        else:
            assert_html_page(response, 200)

    def test_a_wrong_password_redisplays_the_form(self, client: TestClient) -> None:
        """400 HTML with the error, the code and email kept, the password not echoed."""
        authorization = start(client)
        response = decide(client, authorization["user_code"], password="not my password")
        text = assert_html_page(response, 400)
        assert "Wrong email or password." in text
        assert f'value="{authorization["user_code"]}"' in text
        assert f'value="{EMAIL}"' in text
        assert "not my password" not in text
        assert " hidden>" not in text

    def test_a_wrong_password_in_json(self, client: TestClient) -> None:
        """With JSON preferred: 400 in the nested envelope, ``invalid_request``."""
        authorization = start(client)
        response = decide(client, authorization["user_code"], password="nope-nope", headers=JSON)
        assert "wrong email or password" in assert_envelope(response, 400, "invalid_request")

    @pytest.mark.parametrize("as_json", [False, True], ids=["html", "json"])
    def test_an_unknown_code_is_400(self, client: TestClient, as_json: bool) -> None:
        """A code that was never issued: 400, in either format."""
        response = decide(client, "BCDF-GHJK", headers=JSON if as_json else None)
        if as_json:
            assert "unknown or expired" in assert_envelope(response, 400, "invalid_request")
        else:
            assert "Unknown or expired code." in assert_html_page(response, 400)

    def test_an_expired_code_is_400(self, client: TestClient, clock: ManualClock) -> None:
        """Ten minutes after issue the code can no longer be approved."""
        authorization = start(client)
        clock.advance(timedelta(minutes=10))
        response = decide(client, authorization["user_code"], headers=JSON)
        assert "unknown or expired" in assert_envelope(response, 400, "invalid_request")

    def test_five_failures_kill_the_code_over_http(self, client: TestClient) -> None:
        """After five wrong passwords even the right one gets 400; the client is denied."""
        authorization = start(client)
        for _ in range(5):
            wrong = decide(client, authorization["user_code"], password="guess-guess", headers=JSON)
            assert_envelope(wrong, 400, "invalid_request")
        right = decide(client, authorization["user_code"], headers=JSON)
        assert "unknown or expired" in assert_envelope(right, 400, "invalid_request")
        assert_oauth_error(poll(client, authorization["device_code"]), "access_denied")

    def test_an_email_over_its_limit_is_429_at_that_address_only(
        self, client: TestClient, facade: Strongroom
    ) -> None:
        """Ten failures for one email from one address in 15 minutes: its next attempt
        there is 429 ``rate_limited`` with ``Retry-After`` (HTML and JSON), while another
        person still gets in, and the same person's right password from another address
        is not refused (contract 13)."""
        for _ in range(5):
            authorization = start(client)
            for _ in range(2):
                decide(client, authorization["user_code"], password="guess-guess")
        fresh = start(client)
        refused = decide(client, fresh["user_code"], headers=JSON)
        assert "too many failed attempts" in assert_envelope(refused, 429, "rate_limited")
        assert refused.headers["retry-after"] == str(15 * 60 + 1)
        html_refusal = decide(client, fresh["user_code"])
        assert "Too many failed attempts" in assert_html_page(html_refusal, 429)
        assert html_refusal.headers["retry-after"] == str(15 * 60 + 1)
        with TestClient(
            app_for(facade), client=("198.51.100.20", 40000), raise_server_exceptions=False
        ) as elsewhere:
            own = decide(elsewhere, fresh["user_code"], headers=JSON)
            assert own.json() == {"status": "approved"}
        fresh = start(client)
        signed_up = client.post(
            "/idp/signup", data={"email": "grace@example.com", "password": PASSWORD, "name": "G"}
        )
        assert signed_up.status_code == 201
        other = decide(client, fresh["user_code"], email="grace@example.com", headers=JSON)
        assert other.json() == {"status": "approved"}

    @pytest.mark.parametrize(
        ("body", "mentions"),
        [
            pytest.param(
                "user_code=BCDF-GHJK&email=a%40b.c&password=x&decision=maybe",
                "decision",
                id="bad decision",
            ),
            pytest.param(
                "user_code=BCDF-GHJK&email=a%40b.c&password=x", "decision", id="missing decision"
            ),
            pytest.param(
                "user_code=BCDF-GHJK&email=a%40b.c&password=x&decision=approve&x=1",
                "'x'",
                id="unknown field",
            ),
            pytest.param(
                "user_code=A&user_code=B&email=a%40b.c&password=x&decision=approve",
                "repeated",
                id="repeated",
            ),
        ],
    )
    def test_a_malformed_form_is_400(self, client: TestClient, body: str, mentions: str) -> None:
        """Bad or missing decision, unknown or repeated field: 400 ``invalid_request``."""
        response = raw_post(client, "/idp/device", body, **JSON)
        assert mentions in assert_envelope(response, 400, "invalid_request")
        assert_html_page(raw_post(client, "/idp/device", body), 400)

    def test_a_json_body_is_400(self, client: TestClient) -> None:
        """The decision is a form; JSON is refused (as a page, or JSON when asked)."""
        authorization = start(client)
        body = {
            "user_code": authorization["user_code"],
            "email": EMAIL,
            "password": PASSWORD,
            "decision": "approve",
        }
        assert "Content-Type" in assert_envelope(
            client.post("/idp/device", json=body, headers=JSON), 400, "invalid_request"
        )
        assert "Content-Type" in assert_html_page(client.post("/idp/device", json=body), 400)
        assert_oauth_error(poll(client, authorization["device_code"]), "authorization_pending")

    def test_a_hostile_code_in_the_form_is_escaped(self, client: TestClient) -> None:
        """The redisplayed form escapes what was typed."""
        response = decide(client, "<script>alert(1)</script>", email='"><b>x</b>')
        text = assert_html_page(response, 400)
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
        assert "&quot;&gt;&lt;b&gt;x&lt;/b&gt;" in text


# The token endpoint.


class TestToken:
    """``POST /idp/token``: OAuth's error format and no caching on every answer."""

    def test_an_approved_code_gives_a_token(self, client: TestClient) -> None:
        """200 ``{access_token, token_type, expires_in}``, never cached."""
        authorization = start(client)
        decide(client, authorization["user_code"])
        response = poll(client, authorization["device_code"])
        assert response.status_code == 200, response.text
        assert response.headers["cache-control"] == "no-store"
        body = response.json()
        assert set(body) == {"access_token", "token_type", "expires_in"}
        assert body["access_token"].startswith("bki_")
        assert body["token_type"] == "Bearer"
        assert body["expires_in"] == 600

    def test_pending_then_slow_down(self, client: TestClient, clock: ManualClock) -> None:
        """Before approval: ``authorization_pending``; sooner than the interval after the
        previous poll: ``slow_down``; after the longer interval: pending again."""
        code = start(client)["device_code"]
        assert_oauth_error(poll(client, code), "authorization_pending")
        clock.advance(timedelta(seconds=2))
        assert "10 seconds" in assert_oauth_error(poll(client, code), "slow_down")
        clock.advance(timedelta(seconds=10))
        assert_oauth_error(poll(client, code), "authorization_pending")

    def test_an_expired_code(self, client: TestClient, clock: ManualClock) -> None:
        """Ten minutes on: ``expired_token``."""
        code = start(client)["device_code"]
        clock.advance(timedelta(minutes=10))
        assert_oauth_error(poll(client, code), "expired_token")

    def test_a_used_or_unknown_code_is_invalid_grant(self, client: TestClient) -> None:
        """The second exchange of a code, and a code never issued: ``invalid_grant``."""
        authorization = start(client)
        decide(client, authorization["user_code"])
        assert poll(client, authorization["device_code"]).status_code == 200
        assert_oauth_error(poll(client, authorization["device_code"]), "invalid_grant")
        assert_oauth_error(poll(client, "bkd_unknown"), "invalid_grant")

    def test_another_grant_type_is_unsupported(self, client: TestClient) -> None:
        """``grant_type=password`` (or anything else): ``unsupported_grant_type``."""
        code = start(client)["device_code"]
        for grant_type in ("password", "client_credentials", "device_code"):
            assert_oauth_error(poll(client, code, grant_type=grant_type), "unsupported_grant_type")

    def test_an_unknown_client_is_invalid_client(self, client: TestClient) -> None:
        """A ``client_id`` that is not the CLI's: ``invalid_client``."""
        code = start(client)["device_code"]
        assert_oauth_error(poll(client, code, client_id="someone-else"), "invalid_client")

    @pytest.mark.parametrize(
        ("body", "mentions"),
        [
            pytest.param(
                f"device_code=bkd_x&client_id={CLIENT_ID}", "grant_type", id="no grant_type"
            ),
            pytest.param(
                f"grant_type={GRANT_TYPE}&client_id={CLIENT_ID}", "device_code", id="no device_code"
            ),
            pytest.param(
                f"grant_type={GRANT_TYPE}&device_code=bkd_x", "client_id", id="no client_id"
            ),
            pytest.param(
                f"grant_type={GRANT_TYPE}&device_code=&client_id={CLIENT_ID}",
                "device_code",
                id="blank counts as missing",
            ),
            pytest.param(
                f"grant_type={GRANT_TYPE}&device_code=bkd_x&device_code=bkd_y&client_id={CLIENT_ID}",
                "repeated",
                id="repeated",
            ),
            pytest.param("", "grant_type", id="empty"),
        ],
    )
    def test_a_malformed_request_is_invalid_request(
        self, client: TestClient, body: str, mentions: str
    ) -> None:
        """Missing, blank or repeated parameters: ``invalid_request`` in OAuth's format."""
        description = assert_oauth_error(raw_post(client, "/idp/token", body), "invalid_request")
        assert mentions in description

    @pytest.mark.parametrize("content_type", [None, "application/json", "text/plain"])
    def test_a_body_that_is_not_a_form_is_invalid_request(
        self, client: TestClient, content_type: str | None
    ) -> None:
        """Anything but a URL-encoded form: ``invalid_request`` in OAuth's format."""
        response = raw_post(
            client,
            "/idp/token",
            f'{{"grant_type": "{GRANT_TYPE}"}}',
            content_type,
        )
        assert "Content-Type" in assert_oauth_error(response, "invalid_request")

    def test_an_oversized_body_is_invalid_request(self, client: TestClient) -> None:
        """A body over the size cap is refused in OAuth's format too."""
        body = f"grant_type={GRANT_TYPE}&pad=" + "x" * MAX_BODY_BYTES
        assert_oauth_error(raw_post(client, "/idp/token", body), "invalid_request")

    def test_unknown_parameters_are_ignored(self, client: TestClient) -> None:
        """RFC 6749 section 3.2: unrecognised parameters do not change the answer."""
        code = start(client)["device_code"]
        assert_oauth_error(poll(client, code, scope="openid", extra="1"), "authorization_pending")


# The whole flow, and another provider.


class TestDeviceFlow:
    """What a person and the CLI do, over HTTP only."""

    def test_sign_up_approve_poll_and_open_a_session(
        self, client: TestClient, clock: ManualClock
    ) -> None:
        """Sign up, start a device flow, open the approval page from
        ``verification_uri_complete``, approve, poll for the token and exchange it for a
        session at ``POST /v1/auth/sessions``; the session then works on ``/v1``."""
        config = client.get("/v1/auth/cli/config").json()
        signed_up = client.post(
            "/idp/signup",
            data={"email": "margaret@example.com", "password": "apollo-11!", "name": "Margaret"},
        )
        assert signed_up.status_code == 201

        started = client.post(
            urlsplit(config["device_authorization_endpoint"]).path,
            data={"client_id": config["client_id"], "scope": " ".join(config["scopes"])},
        )
        authorization = started.json()
        token_path = urlsplit(config["token_endpoint"]).path
        form = {
            "grant_type": GRANT_TYPE,
            "device_code": authorization["device_code"],
            "client_id": config["client_id"],
        }
        assert_oauth_error(client.post(token_path, data=form), "authorization_pending")

        page_url = urlsplit(authorization["verification_uri_complete"])
        page = client.get(f"{page_url.path}?{page_url.query}")
        assert authorization["user_code"] in assert_html_page(page, 200)
        approved = decide(
            client,
            authorization["user_code"],
            email="margaret@example.com",
            password="apollo-11!",
        )
        assert "Device approved" in assert_html_page(approved, 200)

        clock.advance(timedelta(seconds=authorization["interval"]))
        issued = client.post(token_path, data=form)
        assert issued.status_code == 200, issued.text
        access_token = issued.json()["access_token"]

        assert client.get("/v1/me", headers=bearer(access_token)).status_code == 401
        session = client.post("/v1/auth/sessions", headers=bearer(access_token))
        assert session.status_code == 201, session.text
        assert session.json()["user"]["email"] == "margaret@example.com"
        assert session.json()["user"]["name"] == "Margaret"
        assert session.json()["workspace_id"] is None
        me = client.get("/v1/me", headers=bearer(session.json()["token"]))
        assert me.status_code == 200
        assert me.json()["user"]["email"] == "margaret@example.com"


class TestAnotherProvider:
    """With an external identity provider, the built-in pages do not exist."""

    @pytest.mark.parametrize(
        ("method", "path"),
        [
            ("POST", "/idp/signup"),
            ("POST", "/idp/device/code"),
            ("GET", "/idp/device"),
            ("POST", "/idp/device"),
            ("POST", "/idp/token"),
        ],
    )
    def test_every_route_is_404(self, method: str, path: str) -> None:
        """Each ``/idp`` route answers 404 ``not_found`` in the nested envelope."""
        facade = make_facade(identity=OtherIdentityProvider())
        with make_client(facade) as client:
            response = client.request(
                method, path, content="client_id=strongroom-cli", headers={"Content-Type": FORM}
            )
        assert_envelope(response, 404, "not_found")
