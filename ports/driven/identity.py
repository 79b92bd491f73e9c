"""The identity provider port: who a person is, and their organizations."""

from __future__ import annotations

from typing import Protocol

import attrs


@attrs.frozen
class Identity:
    """A person as the identity provider vouches for them."""

    subject: str
    email: str
    name: str
    # The provider's grant behind the token, when the provider may later revoke what was
    # made from it (a replayed authorization code, RFC 6749 section 4.1.2): the sessions
    # made from this token, and those switched from them, carry it as their origin.
    grant: str | None = None


@attrs.frozen
class CliConfig:
    """What the command-line client needs to start a device-code sign-in."""

    issuer: str
    client_id: str
    device_authorization_endpoint: str
    token_endpoint: str
    scopes: tuple[str, ...]
    authorization_endpoint: str | None = None  # the authorization-code grant, for browsers


class IdentityProvider(Protocol):
    """Verifies sign-ins and provisions organizations for workspaces.

    Failures to reach the provider raise ``UpstreamUnavailableError``.
    """

    async def verify_access_token(self, token: str) -> Identity:
        """The identity behind an access token; ``UnauthenticatedError`` if it is not valid."""
        ...

    async def create_organization(self, name: str) -> str:
        """Provision an organization and return its id."""
        ...

    async def delete_organization(self, org_id: str) -> None:
        """Remove an organization (compensation of a failed provisioning, or deletion)."""
        ...

    def cli_config(self, base_url: str) -> CliConfig:
        """The device-code configuration, with absolute URLs under ``base_url``."""
        ...
