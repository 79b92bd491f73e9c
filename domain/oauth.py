"""The built-in identity provider's public OAuth clients and its password bounds: rules
the provider applies and the wire documents."""

from __future__ import annotations

CLIENT_ID = "strongroom-cli"
WEB_CLIENT_ID = "strongroom-web"  # the dashboard: authorization code with PKCE (RFC 7636)
MIN_PASSWORD_LENGTH = 8
MAX_PASSWORD_LENGTH = 1024
