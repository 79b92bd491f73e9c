"""Restore drills and immutability proofs (contract 16): their scratch targets and signing
key from the settings, and the drill runner's loop."""

from __future__ import annotations

import logging

from strongroom.adapters.proofs.signing import ProofSigner
from strongroom.adapters.restores.drills import ServiceDrillTargets
from strongroom.adapters.runtime.drills import DrillRunner
from strongroom.entrypoints.settings import Settings
from strongroom.ports.driving import Strongroom

logger = logging.getLogger(__name__)


def equip_assurance(facade: Strongroom, settings: Settings) -> Strongroom:
    """Give the facade its drill targets (scratch in ``<data dir>/drills``, databases on
    ``STRONGROOM_DRILL_DATABASE_URL``) and its proof key (``STRONGROOM_PROOF_KEY``, else
    ``<data dir>/proof_key.pem``, made on first use)."""
    facade.drills.targets = ServiceDrillTargets(
        settings.data_dir / "drills", settings.drill_database_url
    )
    facade.proofs.signer = (
        ProofSigner.from_pem(settings.proof_key)
        if settings.proof_key
        else ProofSigner.in_data_dir(settings.data_dir)
    )
    return facade


async def run_drills_every(facade: Strongroom, poll: float) -> None:
    """Run queued drills, forever (cancel the task to stop): when one is asked for (a
    wake-up, from any process on PostgreSQL) and at the latest every ``poll`` seconds."""
    runner = DrillRunner(facade.drills)
    while True:
        ticket = facade.drills.wakeup()
        try:
            while await runner.run_queued():
                pass
        except Exception:
            logger.exception("the drill runner failed; it looks again next interval")
        try:
            await ticket.wait(poll)
        finally:
            ticket.close()
