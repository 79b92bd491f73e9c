"""The OIDC adapter of the identity port: ID tokens verified against a JWKS served on
loopback with keys the tests generate (issuer, audience, expiry, signature, key rotation),
and sign-in through it over HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Coroutine, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from strongroom.adapters.identity.oidc import OidcIdentityProvider, OidcSettings
from strongroom.adapters.system import SecureIds
from strongroom.domain.errors import UnauthenticatedError, UpstreamUnavailableError
from strongroom.entrypoints.service import identity_for
from strongroom.entrypoints.settings import Settings
from support.world import bearer, make_client, make_facade

ISSUER = "https://login.example.com/"
CLIENT_ID = "strongroom-test"
T = TypeVar("T")


def run(call: Coroutine[Any, Any, T]) -> T:
    """The result of one call of the async identity port, on a fresh event loop."""
    return asyncio.run(call)


class Jwks:
    """A JWKS endpoint on loopback whose keys the test changes."""

    def __init__(self) -> None:
        self.keys: dict[str, RSAPrivateKey] = {}
        self.available = True
        self.fetches = 0
        jwks = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                jwks.fetches += 1
                if not jwks.available:
                    self.send_response(503)
                    self.end_headers()
                    return
                body = json.dumps({"keys": [jwks.public(kid) for kid in jwks.keys]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks.json"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def add_key(self, kid: str) -> RSAPrivateKey:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.keys[kid] = key
        return key

    def public(self, kid: str) -> dict[str, Any]:
        jwk: dict[str, Any] = json.loads(
            jwt.algorithms.RSAAlgorithm.to_jwk(self.keys[kid].public_key())
        )
        return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}

    def token(self, kid: str, key: RSAPrivateKey | None = None, **claims: Any) -> str:
        now = int(time.time())
        payload = {
            "iss": ISSUER,
            "aud": CLIENT_ID,
            "sub": "user-42",
            "email": "Ada@Example.com",
            "email_verified": True,
            "name": "Ada Lovelace",
            "iat": now,
            "exp": now + 300,
            **claims,
        }
        payload = {name: value for name, value in payload.items() if value is not None}
        return jwt.encode(payload, key or self.keys[kid], algorithm="RS256", headers={"kid": kid})


@pytest.fixture
def jwks() -> Iterator[Jwks]:
    """A JWKS endpoint with one key, ``k1``."""
    served = Jwks()
    served.add_key("k1")
    served.thread.start()
    try:
        yield served
    finally:
        served.server.shutdown()
        served.server.server_close()


def provider(jwks: Jwks, **options: Any) -> OidcIdentityProvider:
    settings = OidcSettings(
        issuer=ISSUER, client_id=CLIENT_ID, jwks_url=jwks.url, refetch_cooldown_seconds=0, **options
    )
    return OidcIdentityProvider(settings, SecureIds())


class TestVerification:
    """``verify_access_token`` with ID tokens."""

    def test_a_valid_token_gives_the_person(self, jwks: Jwks) -> None:
        """Subject, email and name come from the claims."""
        identity = run(provider(jwks).verify_access_token(jwks.token("k1")))
        assert (identity.subject, identity.email, identity.name) == (
            "user-42",
            "Ada@Example.com",
            "Ada Lovelace",
        )

    @pytest.mark.parametrize(
        "claims",
        [
            {"iss": "https://evil.example.com/"},
            {"aud": "another-client"},
            {"exp": int(time.time()) - 3600},
            {"iat": None},
            {"sub": None},
            {"email": None},
            {"email_verified": False},
        ],
    )
    def test_wrong_claims_are_refused(self, jwks: Jwks, claims: dict[str, Any]) -> None:
        """Issuer, audience, expiry, required claims, a verified email: else 401."""
        with pytest.raises(UnauthenticatedError):
            run(provider(jwks).verify_access_token(jwks.token("k1", **claims)))

    def test_a_forged_signature_or_unknown_key_is_refused(self, jwks: Jwks) -> None:
        """A token signed by another key under a known kid, or naming an unknown kid."""
        stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        verifier = provider(jwks)
        for token in (
            jwks.token("k1", key=stranger),
            jwks.token("k9", key=stranger),
            "bks_not-a-jwt",
            jwt.encode(
                {"iss": ISSUER, "aud": CLIENT_ID, "sub": "x"},
                "a-shared-secret-of-at-least-32-bytes!",
                algorithm="HS256",
            ),  # no kid
        ):
            with pytest.raises(UnauthenticatedError):
                run(verifier.verify_access_token(token))

    def test_key_rotation_needs_no_restart(self, jwks: Jwks) -> None:
        """Keys are cached; a token under a new kid refetches the JWKS; a removed key's
        tokens stop verifying."""
        verifier = provider(jwks)
        run(verifier.verify_access_token(jwks.token("k1")))
        run(verifier.verify_access_token(jwks.token("k1")))
        assert jwks.fetches == 1
        old = jwks.keys.pop("k1")
        jwks.add_key("k2")
        assert run(verifier.verify_access_token(jwks.token("k2"))).subject == "user-42"
        assert jwks.fetches == 2
        with pytest.raises(UnauthenticatedError):
            run(verifier.verify_access_token(jwks.token("k1", key=old)))

    def test_an_unreachable_jwks_is_upstream_unavailable(self, jwks: Jwks) -> None:
        """502, not 401: the person may well be who they say."""
        jwks.available = False
        with pytest.raises(UpstreamUnavailableError):
            run(provider(jwks).verify_access_token(jwks.token("k1")))


class TestSignInOverHttp:
    """The adapter behind the facade and the HTTP API."""

    def test_an_id_token_signs_in_and_maps_to_one_user(self, jwks: Jwks) -> None:
        """``POST /v1/auth/sessions`` with the ID token: a session; again: the same user.
        The built-in provider's pages are gone (404) and the CLI gets the issuer's URLs."""
        facade = make_facade(identity=provider(jwks))
        with make_client(facade) as client:
            first = client.post("/v1/auth/sessions", headers=bearer(jwks.token("k1")))
            assert first.status_code == 201, first.text
            second = client.post("/v1/auth/sessions", headers=bearer(jwks.token("k1")))
            assert second.json()["user"] == first.json()["user"]
            assert first.json()["user"]["email"] == "Ada@Example.com"
            session = first.json()["token"]
            workspace = client.post(
                "/v1/workspaces", json={"name": "Acme"}, headers=bearer(session)
            )
            assert workspace.status_code == 201
            assert workspace.json()["idp_org_id"].startswith("org_")
            refused = client.post(
                "/v1/auth/sessions", headers=bearer(jwks.token("k1", aud="other"))
            )
            assert refused.status_code == 401
            assert client.post("/idp/device/code", data={"client_id": "x"}).status_code == 404
            config = client.get("/v1/auth/cli/config").json()
            assert config["issuer"] == ISSUER
            assert config["client_id"] == CLIENT_ID
            # The ID token is no /v1 bearer.
            assert client.get("/v1/me", headers=bearer(jwks.token("k1"))).status_code == 401

    def test_configuration_selects_the_provider(self) -> None:
        """``STRONGROOM_OIDC_ISSUER`` and ``..._CLIENT_ID`` select OIDC; one alone is an
        error; neither keeps the built-in provider."""
        assert identity_for(Settings.from_env({})) is None
        chosen = identity_for(
            Settings.from_env(
                {"STRONGROOM_OIDC_ISSUER": ISSUER, "STRONGROOM_OIDC_CLIENT_ID": CLIENT_ID}
            )
        )
        assert isinstance(chosen, OidcIdentityProvider)
        with pytest.raises(ValueError, match="together"):
            Settings.from_env({"STRONGROOM_OIDC_ISSUER": ISSUER})


class TestBrowserSignIn:
    """The dashboard signs in at the provider's authorization endpoint (authorization code
    with PKCE) and exchanges the ID token it receives, like the command-line client."""

    def test_the_config_names_the_providers_authorization_endpoint(self, jwks: Jwks) -> None:
        config = provider(jwks).cli_config("http://ignored.example")
        assert config.authorization_endpoint == f"{ISSUER.rstrip('/')}/authorize"

    def test_a_configured_authorization_endpoint_wins(self, jwks: Jwks) -> None:
        endpoint = "https://login.example.com/oauth2/v1/authorize"
        config = provider(jwks, authorization_endpoint=endpoint).cli_config("http://x.example")
        assert config.authorization_endpoint == endpoint
