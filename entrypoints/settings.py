"""Configuration from the environment (``STRONGROOM_*``); command-line flags of the same
name win. Nothing is read at import time."""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from strongroom.domain.artifacts import DEFAULT_MULTIPART_THRESHOLD
from strongroom.domain.endpoints import DEFAULT_ENDPOINT_NETWORKS, EndpointPolicy

ENVIRONMENTS = ("development", "production")


def _flag(value: str | None, default: bool) -> bool:
    if value is None or value == "":
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def _origins(value: str | Iterable[str]) -> tuple[str, ...]:
    """``STRONGROOM_CORS_ORIGINS``: a comma-separated list, or the origins themselves."""
    # Imported here: the client's commands import the settings without the HTTP adapter.
    from strongroom.adapters.webkit.cors import parse_origins  # noqa: PLC0415

    return parse_origins(value if isinstance(value, str) else ",".join(value))


def _proxies(value: str | Iterable[str]) -> tuple[str, ...]:
    """``STRONGROOM_TRUSTED_PROXIES``: CIDRs (or addresses) whose ``X-Forwarded-For`` is
    believed; none by default (contract 13)."""
    items = value.split(",") if isinstance(value, str) else list(value)
    networks = []
    for item in (part.strip() for part in items):
        if not item:
            continue
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError as error:
            raise ValueError(
                "STRONGROOM_TRUSTED_PROXIES must be a comma list of CIDRs or addresses"
            ) from error
    return tuple(networks)


@attrs.frozen
class Settings:
    """Everything a Strongroom process is configured with."""

    data_dir: Path = Path("strongroom-data")
    database_url: str | None = None
    host: str = "127.0.0.1"
    port: int = 8080
    secret_key: str | None = None
    environment: str = "development"
    public_url: str | None = None
    metrics_token: str | None = attrs.field(default=None, repr=False)
    s3_endpoint: str | None = None
    s3_access_key: str | None = None
    s3_secret_key: str | None = None
    s3_bucket: str | None = None
    s3_region: str = "us-east-1"
    s3_timeout: float = 10.0
    signup: bool | None = None
    access_log: bool = False
    log_format: str = "auto"
    smtp_host: str | None = None
    smtp_port: int = 587
    smtp_username: str | None = None
    smtp_password: str | None = attrs.field(default=None, repr=False)
    smtp_from: str = "strongroom@localhost"
    smtp_starttls: bool = True
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_jwks_url: str | None = None
    oidc_device_authorization_endpoint: str | None = None
    oidc_token_endpoint: str | None = None
    oidc_authorization_endpoint: str | None = None
    multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD
    retention_interval: float = 3600.0
    lease_interval: float = 10.0
    scheduler_interval: float = 5.0
    verify_pending_interval: float = 10.0
    verify_interval: float = 0.0
    # Seconds between looks for queued restores (contract 11); 0 turns the runner off.
    restore_poll: float = 2.0
    # The PostgreSQL server restore drills create their scratch databases on (contract 16).
    drill_database_url: str | None = None
    # The service's Ed25519 proof key, PEM (default: <data dir>/proof_key.pem, made once).
    proof_key: str | None = None
    # Service executors (contract 11): cloud runs at once per process (0: none in serve),
    # seconds between looks for queued ones, and the lease they claim and extend.
    executors: int = 2
    executor_poll: float = 1.0
    executor_lease: float = 60.0
    # Assurance (contract 16): seconds between health evaluations and between looks for
    # due webhook deliveries (0 turns either off), and deliveries attempted at once.
    health_interval: float = 30.0
    webhook_poll: float = 1.0
    webhook_concurrency: int = 8
    # Seconds a stopping server waits for requests in flight before cancelling them.
    shutdown_timeout: int = 30
    endpoint_networks: str = DEFAULT_ENDPOINT_NETWORKS
    cors_origins: tuple[str, ...] = attrs.field(default=(), converter=_origins)
    trusted_proxies: tuple[str, ...] = attrs.field(default=(), converter=_proxies)

    def __attrs_post_init__(self) -> None:
        EndpointPolicy.parse(self.endpoint_networks)  # ValueError names the setting
        if self.environment not in ENVIRONMENTS:
            raise ValueError(f"STRONGROOM_ENVIRONMENT must be one of {', '.join(ENVIRONMENTS)}")
        if (self.oidc_issuer is None) != (self.oidc_client_id is None):
            raise ValueError(
                "STRONGROOM_OIDC_ISSUER and STRONGROOM_OIDC_CLIENT_ID are set together"
            )
        if self.s3_timeout <= 0:
            raise ValueError("STRONGROOM_S3_TIMEOUT must be a positive number of seconds")
        if self.multipart_threshold < 1:
            raise ValueError("STRONGROOM_MULTIPART_THRESHOLD must be a positive number of bytes")
        if self.restore_poll < 0:
            raise ValueError("STRONGROOM_RESTORE_POLL must be 0 or more seconds")
        if self.executors < 0:
            raise ValueError("STRONGROOM_EXECUTORS must be 0 or more")
        if self.executor_poll <= 0:
            raise ValueError("STRONGROOM_EXECUTOR_POLL must be a positive number of seconds")
        if self.executor_lease < 2:
            raise ValueError("STRONGROOM_EXECUTOR_LEASE must be at least 2 seconds")
        if self.scheduler_interval < 0:
            raise ValueError("STRONGROOM_SCHEDULER_INTERVAL must be 0 (off) or more seconds")
        if self.health_interval < 0 or self.webhook_poll < 0:
            raise ValueError(
                "STRONGROOM_HEALTH_INTERVAL and STRONGROOM_WEBHOOK_POLL must be 0 or more seconds"
            )
        if self.webhook_concurrency < 1:
            raise ValueError("STRONGROOM_WEBHOOK_CONCURRENCY must be 1 or more")
        if self.shutdown_timeout < 0:
            raise ValueError("STRONGROOM_SHUTDOWN_TIMEOUT must be 0 or more seconds")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``env`` (default: the process environment), then ``overrides``
        (flags), ignoring overrides that are ``None``."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {
            "data_dir": Path(env.get("STRONGROOM_DATA_DIR", "strongroom-data")),
            "database_url": env.get("STRONGROOM_DATABASE_URL") or None,
            "secret_key": env.get("STRONGROOM_SECRET_KEY") or None,
            "environment": env.get("STRONGROOM_ENVIRONMENT") or "development",
            "public_url": env.get("STRONGROOM_PUBLIC_URL") or None,
            "metrics_token": env.get("STRONGROOM_METRICS_TOKEN") or None,
            "s3_endpoint": env.get("STRONGROOM_S3_ENDPOINT") or None,
            "s3_access_key": env.get("STRONGROOM_S3_ACCESS_KEY") or None,
            "s3_secret_key": env.get("STRONGROOM_S3_SECRET_KEY") or None,
            "s3_bucket": env.get("STRONGROOM_S3_BUCKET") or None,
            "s3_region": env.get("STRONGROOM_S3_REGION") or "us-east-1",
            "s3_timeout": float(env.get("STRONGROOM_S3_TIMEOUT") or 10),
            "multipart_threshold": int(
                env.get("STRONGROOM_MULTIPART_THRESHOLD") or DEFAULT_MULTIPART_THRESHOLD
            ),
            "retention_interval": float(env.get("STRONGROOM_RETENTION_INTERVAL") or 3600),
            "lease_interval": float(env.get("STRONGROOM_LEASE_INTERVAL") or 10),
            "scheduler_interval": float(env.get("STRONGROOM_SCHEDULER_INTERVAL") or 5),
            "verify_pending_interval": float(env.get("STRONGROOM_VERIFY_PENDING_INTERVAL") or 10),
            "verify_interval": float(env.get("STRONGROOM_VERIFY_INTERVAL") or 0),
            "restore_poll": float(env.get("STRONGROOM_RESTORE_POLL") or 2),
            "drill_database_url": env.get("STRONGROOM_DRILL_DATABASE_URL") or None,
            "proof_key": env.get("STRONGROOM_PROOF_KEY") or None,
            "shutdown_timeout": int(env.get("STRONGROOM_SHUTDOWN_TIMEOUT") or 30),
            "health_interval": float(env.get("STRONGROOM_HEALTH_INTERVAL") or 30),
            "webhook_poll": float(env.get("STRONGROOM_WEBHOOK_POLL") or 1),
            "webhook_concurrency": int(env.get("STRONGROOM_WEBHOOK_CONCURRENCY") or 8),
            "executors": int(env.get("STRONGROOM_EXECUTORS") or 2),
            "executor_poll": float(env.get("STRONGROOM_EXECUTOR_POLL") or 1),
            "executor_lease": float(env.get("STRONGROOM_EXECUTOR_LEASE") or 60),
            "signup": None
            if env.get("STRONGROOM_SIGNUP") is None
            else _flag(env.get("STRONGROOM_SIGNUP"), False),
            "smtp_host": env.get("STRONGROOM_SMTP_HOST") or None,
            "smtp_port": int(env.get("STRONGROOM_SMTP_PORT") or 587),
            "smtp_username": env.get("STRONGROOM_SMTP_USERNAME") or None,
            "smtp_password": env.get("STRONGROOM_SMTP_PASSWORD") or None,
            "smtp_from": env.get("STRONGROOM_SMTP_FROM") or "strongroom@localhost",
            "smtp_starttls": _flag(env.get("STRONGROOM_SMTP_STARTTLS"), True),
            "oidc_issuer": env.get("STRONGROOM_OIDC_ISSUER") or None,
            "oidc_client_id": env.get("STRONGROOM_OIDC_CLIENT_ID") or None,
            "oidc_jwks_url": env.get("STRONGROOM_OIDC_JWKS_URL") or None,
            "oidc_device_authorization_endpoint": env.get(
                "STRONGROOM_OIDC_DEVICE_AUTHORIZATION_ENDPOINT"
            )
            or None,
            "oidc_token_endpoint": env.get("STRONGROOM_OIDC_TOKEN_ENDPOINT") or None,
            "oidc_authorization_endpoint": env.get("STRONGROOM_OIDC_AUTHORIZATION_ENDPOINT")
            or None,
            "endpoint_networks": env.get("STRONGROOM_ENDPOINT_NETWORKS")
            or DEFAULT_ENDPOINT_NETWORKS,
            "log_format": env.get("STRONGROOM_LOG_FORMAT") or "auto",
            "cors_origins": env.get("STRONGROOM_CORS_ORIGINS") or "",
            "trusted_proxies": env.get("STRONGROOM_TRUSTED_PROXIES") or "",
        }
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)

    @property
    def embedded(self) -> bool:
        """Whether this is the zero-set-up default (no external database configured)."""
        return self.database_url is None or self.database_url.startswith("sqlite:")

    @property
    def proxy_options(self) -> dict[str, object]:
        """uvicorn's options for forwarded headers: believed only from trusted proxies
        (uvicorn's own default believes any loopback client)."""
        if not self.trusted_proxies:
            return {"proxy_headers": False}
        return {"proxy_headers": True, "forwarded_allow_ips": list(self.trusted_proxies)}

    @property
    def endpoint_policy(self) -> EndpointPolicy:
        """Where customer endpoints may point (``STRONGROOM_ENDPOINT_NETWORKS``)."""
        return EndpointPolicy.parse(self.endpoint_networks)

    @property
    def signup_enabled(self) -> bool:
        """Self-service sign-up: on by default when embedded, off unless configured elsewhere."""
        return self.embedded if self.signup is None else self.signup

    def resolved_secret_key(self) -> str:
        """``STRONGROOM_SECRET_KEY``, or one generated once into ``<data dir>/secret_key``."""
        if self.secret_key:
            return self.secret_key
        path = self.data_dir / "secret_key"
        if not path.exists():
            self.data_dir.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_urlsafe(48))
        return path.read_text().strip()
