"""An external OpenID Connect provider behind the identity port.

Sign-in exchanges the provider's ID token (``POST /v1/auth/sessions`` with it as the
bearer): its signature is checked against the provider's JWKS (keys cached, fetched again
when a token names an unknown key, so key rotation needs no restart), and its issuer,
audience (the client id), expiry and issue time are checked. The subject maps to a user.
OIDC has no standard organization API, so organizations are identifiers minted here, as
the built-in provider does.

The JWKS client fetches over blocking HTTP (bounded by ``timeout_seconds``), so finding a
token's key runs in a worker thread through ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import jwt

from strongroom.domain.errors import UnauthenticatedError, UpstreamUnavailableError
from strongroom.ports.driven.clock import IdGenerator
from strongroom.ports.driven.identity import CliConfig, Identity

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")
NOT_VALID = "identity token is not valid"


@attrs.frozen
class OidcSettings:
    """Where the provider is and who we are to it."""

    issuer: str
    client_id: str
    jwks_url: str
    device_authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    authorization_endpoint: str | None = None
    scopes: tuple[str, ...] = ("openid", "profile", "email")
    leeway_seconds: int = 60
    jwks_lifespan_seconds: float = 300
    refetch_cooldown_seconds: float = 10
    timeout_seconds: float = 5
    require_verified_email: bool = True


class OidcIdentityProvider:
    """Verifies ID tokens of one OIDC issuer against its JWKS."""

    def __init__(self, settings: OidcSettings, ids: IdGenerator) -> None:
        self._settings = settings
        self._ids = ids
        self._keys = jwt.PyJWKClient(
            settings.jwks_url,
            cache_jwk_set=True,
            lifespan=settings.jwks_lifespan_seconds,
            timeout=settings.timeout_seconds,
            cooldown_duration=settings.refetch_cooldown_seconds,
        )

    async def verify_access_token(self, token: str) -> Identity:
        """The person an ID token of the issuer vouches for; 401 for anything else, 502
        when the JWKS cannot be fetched."""
        settings = self._settings
        try:
            key = await asyncio.to_thread(self._keys.get_signing_key_from_jwt, token)
        except jwt.PyJWKClientConnectionError as error:
            raise UpstreamUnavailableError(
                "the identity provider is unavailable; try again later"
            ) from error
        except (jwt.PyJWKClientError, jwt.InvalidTokenError) as error:
            raise UnauthenticatedError(NOT_VALID) from error
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=list(ALGORITHMS),
                audience=settings.client_id,
                issuer=settings.issuer,
                leeway=settings.leeway_seconds,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.InvalidTokenError as error:
            raise UnauthenticatedError(NOT_VALID) from error
        return self._identity(claims)

    def _identity(self, claims: dict[str, Any]) -> Identity:
        subject, email = claims.get("sub"), claims.get("email")
        if not isinstance(subject, str) or not subject or not isinstance(email, str) or not email:
            raise UnauthenticatedError("identity token has no subject or email")
        if self._settings.require_verified_email and claims.get("email_verified") is not True:
            # Invitations match emails: an unverified one must not open them.
            raise UnauthenticatedError("identity token's email is not verified")
        name = claims.get("name")
        return Identity(
            subject=subject, email=email, name=name if isinstance(name, str) and name else email
        )

    async def create_organization(self, name: str) -> str:
        """An organization identifier (OIDC defines no organization API)."""
        return f"org_{self._ids.new_id().hex}"

    async def delete_organization(self, org_id: str) -> None:
        """Nothing is stored upstream for an organization, so nothing is removed."""

    def cli_config(self, base_url: str) -> CliConfig:
        """The provider's own device-code and authorization endpoints (``base_url`` is not
        used): the dashboard signs in with the authorization-code grant and PKCE at the
        provider's authorization endpoint and exchanges the ID token it receives."""
        settings = self._settings
        issuer = settings.issuer.rstrip("/")
        return CliConfig(
            issuer=settings.issuer,
            client_id=settings.client_id,
            device_authorization_endpoint=settings.device_authorization_endpoint
            or f"{issuer}/oauth/device/code",
            token_endpoint=settings.token_endpoint or f"{issuer}/oauth/token",
            scopes=settings.scopes,
            authorization_endpoint=settings.authorization_endpoint or f"{issuer}/authorize",
        )
