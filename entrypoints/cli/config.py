"""Where the command-line client keeps its server, session and workspace.

One JSON file, ``$XDG_CONFIG_HOME/strongroom/credentials.json`` (``~/.config/...`` when
the variable is unset, ``%APPDATA%\\strongroom\\`` on Windows), written with mode 0600 in
a 0700 directory. A file others can read is refused, as ssh refuses such a key.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

import attrs

FILE_NAME = "credentials.json"


class ConfigError(Exception):
    """The credentials file cannot be used (its mode, or its content)."""


@attrs.define
class Credentials:
    """The server signed in to, the session token and the workspace it is scoped to."""

    server: str | None = None
    token: str | None = attrs.field(default=None, repr=False)
    workspace_id: str | None = None
    email: str | None = None


def config_dir() -> Path:
    """The directory of the client's files."""
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "strongroom"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "strongroom"


def credentials_path() -> Path:
    """The credentials file."""
    return config_dir() / FILE_NAME


def load() -> Credentials:
    """The stored credentials (empty when there is no file yet)."""
    path = credentials_path()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return Credentials()
    if sys.platform != "win32" and stat.S_IMODE(mode) & 0o077:
        raise ConfigError(
            f"{path} is readable by others (mode {stat.S_IMODE(mode):04o}); run: chmod 600 {path}"
        )
    try:
        data: Any = json.loads(path.read_text())
    except ValueError as error:
        raise ConfigError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(data, dict):
        raise ConfigError(f"{path} does not hold an object")
    names = {field.name for field in attrs.fields(Credentials)}
    return Credentials(**{k: v for k, v in data.items() if k in names and isinstance(v, str)})


def save(credentials: Credentials) -> Path:
    """Write ``credentials`` atomically, mode 0600 (the directory 0700)."""
    directory = config_dir()
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / FILE_NAME
    data = {k: v for k, v in attrs.asdict(credentials).items() if v is not None}
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".credentials-")
    try:
        os.chmod(temporary, 0o600)  # mkstemp's mode already; said here for the reader
        with os.fdopen(handle, "w") as file:
            json.dump(data, file, indent=2)
            file.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
