"""The worker agent's TOML configuration file (contract 12)."""

from __future__ import annotations

import stat
import sys
import tomllib
from pathlib import Path
from typing import Any
from uuid import UUID

import attrs

from strongroom.client.snapshots import RepositoryKey, SnapshotKeyError, check_recipients

# The example's repository key and recipient are published examples, not anyone's keys.
EXAMPLE_CONFIG = """\
# strongroom agent --config /etc/strongroom/agent.toml
server = "https://backups.example.com"   # the Strongroom API's base URL
token_file = "/etc/strongroom/worker.token"   # the worker's bkw_ token (chmod 600)
# token = "bkw_..."                      # or the token itself (not both; then chmod 600 this file)

# Optional:
# heartbeat_seconds = 15                 # how often a running backup reports progress
# wait_seconds = 30                      # long poll of POST /v1/claims (0..30)
# parallel = 4                           # parts uploaded at once
# state_dir = "/var/lib/strongroom-agent"   # resume state and spooled archives

[[backups]]
id = "6f1c2a9e-0000-4000-8000-000000000001"   # a local backup assigned to this worker
paths = ["/srv/www", "/etc/nginx"]          # directories archived together (tar + zstd)

[[backups]]
id = "6f1c2a9e-0000-4000-8000-000000000002"
paths = ["/home"]                           # a snapshot backup: one directory
# Snapshot backups (deduplicated, encrypted; `strongroom backup create` prints these
# lines): the repository key and the recipients, never the identity.
repository_key = "strongroom-repository-key-1:U1JSSwEAAQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyAhIiMkJSYnKCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4_"
recipients = ["age18knnrqwrfjnxf5v789h630why682r6c7nssk6p8j8tsclyt83ddsh2lm57"]
exclude = ["*.tmp", "/cache"]               # glob patterns (a leading / anchors at the root)
"""  # noqa: E501 - the example key is one line

_KEYS = {"server", "token", "token_file", "heartbeat_seconds", "wait_seconds", "parallel"}
_KEYS |= {"state_dir", "backups"}


_BACKUP_KEYS = {"id", "paths", "repository_key", "recipients", "exclude"}


class ConfigError(Exception):
    """The configuration file is missing, unreadable or wrong (the message says where)."""


@attrs.frozen
class SnapshotSettings:
    """A snapshot backup's lines: what a write-only worker needs (never the identity)."""

    repository_key: RepositoryKey = attrs.field(repr=False)
    recipients: tuple[str, ...]
    excludes: tuple[str, ...] = ()


@attrs.frozen
class AgentConfig:
    """A read, checked configuration."""

    server: str
    token: str = attrs.field(repr=False)
    backups: dict[UUID, tuple[Path, ...]]
    heartbeat_seconds: float = 15.0
    wait_seconds: int = 30
    parallel: int = 4
    state_dir: Path | None = None
    snapshots: dict[UUID, SnapshotSettings] = attrs.Factory(dict)


def load_config(path: Path) -> AgentConfig:
    """Read and check the configuration at ``path``; relative paths in it (``token_file``,
    ``paths``, ``state_dir``) are relative to the file's directory."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        data = tomllib.loads(path.read_text())
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from error
    if "token" in data:
        # A file that holds the token itself is a token file (``_token``).
        _refuse_readable_by_others(path, mode, str(path), "it holds `token` and it")
    return parse_config(data, path.parent, str(path))


def _refuse_readable_by_others(path: Path, mode: int, where: str, what: str) -> None:
    """The rule of the CLI's own credentials file: a secret others can read is refused,
    not used."""
    if sys.platform != "win32" and mode & 0o077:
        raise ConfigError(
            f"{where}: {what} is readable by others (mode {mode:04o}); run: chmod 600 {path}"
        )


def parse_config(data: dict[str, Any], base: Path, where: str = "config") -> AgentConfig:
    """Check a parsed configuration (see ``load_config``)."""
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown settings: {', '.join(unknown)}")
    server = data.get("server")
    if not isinstance(server, str) or not server.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: `server` must be the API's base URL (https://...)")
    token = _token(data, base, where)
    backups: dict[UUID, tuple[Path, ...]] = {}
    snapshots: dict[UUID, SnapshotSettings] = {}
    tables = data.get("backups", [])
    if not isinstance(tables, list) or not tables:
        raise ConfigError(f"{where}: at least one [[backups]] table with `id` and `paths`")
    for index, table in enumerate(tables, start=1):
        label = f"{where}: [[backups]] #{index}"
        if not isinstance(table, dict) or not {"id", "paths"} <= set(table):
            raise ConfigError(f"{label}: needs `id` and `paths`")
        extra = sorted(set(table) - _BACKUP_KEYS)
        if extra:
            raise ConfigError(f"{label}: unknown settings: {', '.join(extra)}")
        try:
            backup_id = UUID(str(table["id"]))
        except ValueError as error:
            raise ConfigError(f"{label}: `id` is not a UUID") from error
        paths = table["paths"]
        if (
            not isinstance(paths, list)
            or not paths
            or not all(isinstance(p, str) and p for p in paths)
        ):
            raise ConfigError(f"{label}: `paths` must be a non-empty list of directories")
        if backup_id in backups:
            raise ConfigError(f"{label}: backup {backup_id} appears twice")
        backups[backup_id] = tuple((base / p).absolute() for p in paths)
        settings = _snapshot(table, label)
        if settings is not None:
            if len(paths) != 1:
                raise ConfigError(f"{label}: a snapshot backup takes one directory in `paths`")
            snapshots[backup_id] = settings
    return AgentConfig(
        server=server.rstrip("/"),
        token=token,
        backups=backups,
        heartbeat_seconds=_number(data, "heartbeat_seconds", 15.0, 1, 50, where),
        wait_seconds=int(_number(data, "wait_seconds", 30, 0, 30, where)),
        parallel=int(_number(data, "parallel", 4, 1, 32, where)),
        state_dir=(base / data["state_dir"]).absolute() if "state_dir" in data else None,
        snapshots=snapshots,
    )


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _snapshot(table: dict[str, Any], label: str) -> SnapshotSettings | None:
    """The snapshot lines of a ``[[backups]]`` table (None for an archive backup)."""
    if "exclude" in table and not _strings(table["exclude"]):
        raise ConfigError(f"{label}: `exclude` must be a list of patterns")
    if "repository_key" not in table and "recipients" not in table:
        if "exclude" in table:
            raise ConfigError(f"{label}: `exclude` is for snapshot backups (repository_key)")
        return None
    try:
        key = RepositoryKey.from_text(str(table.get("repository_key", "")))
        if not _strings(table.get("recipients")):
            raise SnapshotKeyError("`recipients` must be a list of age1... keys")
        recipients = check_recipients(table["recipients"])
    except SnapshotKeyError as error:
        raise ConfigError(f"{label}: {error} (`repository_key` and `recipients`)") from error
    return SnapshotSettings(key, recipients, tuple(table.get("exclude", ())))


def _token(data: dict[str, Any], base: Path, where: str) -> str:
    if ("token" in data) == ("token_file" in data):
        raise ConfigError(f"{where}: set exactly one of `token` and `token_file`")
    if "token" in data:
        token = data["token"]
    else:
        token_path = base / str(data["token_file"])
        try:
            mode = stat.S_IMODE(token_path.stat().st_mode)
            token = token_path.read_text().strip()
        except OSError as error:
            raise ConfigError(
                f"{where}: `token_file` {token_path}: cannot read: {error.strerror}"
            ) from error
        _refuse_readable_by_others(token_path, mode, where, f"`token_file` {token_path}")
    if not isinstance(token, str) or not token.startswith("bkw_"):
        raise ConfigError(f"{where}: the token must be a worker credential (bkw_...)")
    return token


def _number(
    data: dict[str, Any], key: str, default: float, low: float, high: float, where: str
) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(f"{where}: `{key}` must be a number from {low} to {high}")
    return float(value)
