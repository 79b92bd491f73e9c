"""Immutability proofs: what a workspace's artifacts are promised beside what the storage
says of them, signed by the service; and the service's public proof key."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import orjson
from starlette.requests import Request
from starlette.responses import Response

from strongroom.adapters.webkit.declare import Auth, Routes
from strongroom.adapters.wire.present import render
from strongroom.adapters.wire.proofs import Proof
from strongroom.ports.driving import Strongroom
from strongroom.ports.driving.access import Grant
from strongroom.ports.driving.proofs import READ_PROOF

routes = Routes("Runs and artifacts")
public = routes.tagged("System", auth=Auth.NONE)

PEM = "application/x-pem-file"


@routes.get("/v1/workspaces/{wid}/proof", Proof, "The signed proof.", READ_PROOF)
async def get_proof(facade: Strongroom, grant: Grant, wid: UUID) -> Any:
    """Immutability proof

    For every available artifact of the workspace in the service's storage: its id,
    backup, size, sha256, `locked_until` and legal hold, and what the storage itself
    reported when asked now (object version, lock mode, retain-until, legal hold), with
    `findings` naming any artifact the storage protects less than its record says. Signed
    with the service's Ed25519 key over the canonical JSON of the document without
    `signature`; check it offline with `strongroom proof verify FILE`."""
    proof = await facade.proofs.gather(grant, wid)
    return facade.proofs.sign(orjson.loads(render(proof)))


@public.get(
    "/.well-known/strongroom-proof-key",
    {PEM: {"schema": {"type": "string"}}},
    "The service's public proof key (PEM, Ed25519).",
    operation_id="getProofKey",
)
async def get_proof_key(request: Request) -> Response:
    """Proof key

    The public key immutability proofs are signed with. No authentication."""
    facade: Strongroom = request.state.facade
    return Response(facade.proofs.public_key(), media_type=PEM)
