"""A minimal external OpenID Connect provider on loopback for the dashboard's browser test:
an authorization endpoint that signs its one person in at once (a real provider would show
its own page) and redirects with a code, a token endpoint that checks the PKCE verifier
(S256), the redirect URI and the client, and answers an ID token signed with a key it
publishes at its JWKS endpoint. The token endpoint answers cross-origin requests from the
dashboard's origin only."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID = "dashboard-at-the-provider"
PERSON = {"sub": "oidc-7", "email": "lin@example.com", "name": "Lin", "email_verified": True}


class FakeOidcProvider:
    """The provider, its issued codes, and what its token endpoint was asked."""

    def __init__(self, allowed_origin: str) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.codes: dict[str, dict[str, str]] = {}
        self.exchanges: list[dict[str, str]] = []
        self.allowed_origin = allowed_origin
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/jwks.json":
                    provider.send_json(self, 200, {"keys": [provider.public_jwk()]})
                elif url.path == "/authorize":
                    provider.authorize(self, query)
                else:
                    provider.send_json(self, 404, {"error": "not_found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                provider.token(self, form)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def configuration(self) -> dict[str, str]:
        """The ``STRONGROOM_OIDC_*`` variables that point a server at this provider."""
        return {
            "STRONGROOM_OIDC_ISSUER": self.url,
            "STRONGROOM_OIDC_CLIENT_ID": CLIENT_ID,
            "STRONGROOM_OIDC_JWKS_URL": f"{self.url}/jwks.json",
            "STRONGROOM_OIDC_AUTHORIZATION_ENDPOINT": f"{self.url}/authorize",
            "STRONGROOM_OIDC_TOKEN_ENDPOINT": f"{self.url}/token",
        }

    def public_jwk(self) -> dict[str, Any]:
        jwk: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {**jwk, "kid": "k1", "alg": "RS256", "use": "sig"}

    def send_json(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        body: dict[str, Any],
        cors: bool = False,
    ) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("Cache-Control", "no-store")
        if cors:
            handler.send_header("Access-Control-Allow-Origin", self.allowed_origin)
        handler.end_headers()
        handler.wfile.write(data)

    def authorize(self, handler: BaseHTTPRequestHandler, query: dict[str, str]) -> None:
        """Sign the person in at once; redirect with a code bound to the challenge."""
        assert query.get("client_id") == CLIENT_ID, query
        assert query.get("code_challenge_method") == "S256", query
        assert "openid" in query.get("scope", "").split(), query
        code = secrets.token_urlsafe(24)
        self.codes[code] = {
            "challenge": query["code_challenge"],
            "redirect_uri": query["redirect_uri"],
        }
        location = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]})
        handler.send_response(302)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    def token(self, handler: BaseHTTPRequestHandler, form: dict[str, str]) -> None:
        """The code exchange: PKCE, redirect URI and client checked; an ID token."""
        self.exchanges.append(form)
        issued = self.codes.pop(form.get("code", ""), None)
        digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
        challenge = base64.urlsafe_b64encode(digest).decode().rstrip("=")
        if (
            issued is None
            or issued["challenge"] != challenge
            or issued["redirect_uri"] != form.get("redirect_uri")
            or form.get("client_id") != CLIENT_ID
        ):
            self.send_json(handler, 400, {"error": "invalid_grant"}, cors=True)
            return
        now = int(time.time())
        claims = {**PERSON, "iss": self.url, "aud": CLIENT_ID, "iat": now, "exp": now + 300}
        id_token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "k1"})
        body = {"access_token": secrets.token_urlsafe(24), "id_token": id_token}
        self.send_json(handler, 200, {**body, "token_type": "Bearer", "expires_in": 300}, cors=True)
