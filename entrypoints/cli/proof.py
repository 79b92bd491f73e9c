"""``proof verify FILE``: check an immutability proof offline (contract 16).

The signature is checked with the service's public key, from a PEM file (``--key``) or
fetched from the server (``--server``: ``/.well-known/strongroom-proof-key``); then every
artifact whose storage lock is shorter than its record (or whose hold the storage does not
keep) is listed. Exit 1 on a bad signature or any finding.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import click
import orjson

from strongroom.adapters.proofs.signing import ProofSignatureError, load_public_key, verify
from strongroom.adapters.wire.converter import CONVERTER
from strongroom.adapters.wire.proofs import ProofArtifact
from strongroom.domain.proofs import ProofEntry, StorageLock, findings
from strongroom.entrypoints.cli.context import JSON_FLAG, CommandError, emit_json

KEY_PATH = "/.well-known/strongroom-proof-key"
FETCH_TIMEOUT = 30


@click.group(help="immutability proofs")
def proof() -> None:
    """``proof verify``."""


def _public_key(key: Path | None, server: str | None) -> bytes:
    if key is not None:
        return key.read_bytes()
    if server is None:
        raise click.UsageError("give the service's public key: --key PEM or --server URL")
    url = server.rstrip("/") + KEY_PATH
    if not url.startswith(("https://", "http://")):
        raise click.UsageError("--server must be an http(s) URL")
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as answer:  # noqa: S310 (checked)
            return bytes(answer.read())
    except OSError as error:
        raise CommandError(f"could not fetch the key from {url}: {error}", "unreachable") from error


def entries_of(document: dict[str, Any]) -> list[ProofEntry]:
    """The proof's artifacts as the domain judges them."""
    entries = []
    for item in document.get("artifacts") or []:
        shown = CONVERTER.structure(item, ProofArtifact)
        entries.append(
            ProofEntry(
                artifact_id=shown.id,
                backup_id=shown.backup_id,
                size=shown.size,
                sha256=shown.sha256,
                locked_until=shown.locked_until,
                held=shown.held,
                storage=StorageLock(
                    version_id=shown.storage.version_id,
                    mode=shown.storage.mode,
                    retain_until=shown.storage.retain_until,
                    legal_hold=shown.storage.legal_hold,
                ),
                checked_at=shown.checked_at,
            )
        )
    return entries


@proof.command(
    "verify", help="check a proof's signature offline and list artifacts locked too briefly"
)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--key", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="PEM")
@click.option("--server", help="fetch the public key from this service")
@click.option("--json", "as_json", is_flag=True, help="print JSON (for scripts)")
@click.pass_context
def verify_(
    ctx: click.Context, file: Path, key: Path | None, server: str | None, as_json: bool
) -> None:
    """Verify FILE."""
    ctx.meta[JSON_FLAG] = as_json
    try:
        document = orjson.loads(file.read_bytes())
        if not isinstance(document, dict):
            raise ProofSignatureError("the file is not a proof document")
        verify(document, load_public_key(_public_key(key, server)))
    except (ProofSignatureError, orjson.JSONDecodeError) as error:
        raise CommandError(f"the proof is not valid: {error}", "invalid_proof") from error
    try:
        entries = entries_of(document)
    except Exception as error:  # a signed document the service would never have made
        raise CommandError(f"the proof is malformed: {error}", "invalid_proof") from error
    found = findings(entries)
    if as_json:
        emit_json(
            {
                "signature_valid": True,
                "artifacts": len(entries),
                "workspace_id": document.get("workspace_id"),
                "checked_at": document.get("checked_at"),
                "findings": [{"artifact_id": f.artifact_id, "problem": f.problem} for f in found],
            }
        )
    else:
        click.echo(
            f"signature valid: {len(entries)} artifacts of workspace "
            f"{document.get('workspace_id')}, checked at {document.get('checked_at')}"
        )
        for finding in found:
            click.echo(f"{finding.artifact_id}: {finding.problem}")
    if found:
        ctx.exit(1)
