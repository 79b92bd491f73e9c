"""``drill`` on a backup (contract 16): when the service drills the backup by itself, and
into what. A drill always restores into a scratch target the service owns; ``target``
names it (``{"type": "service"}``, the default and the only one offered), so a type the
service does not offer is a well-formed value the rules refuse (``backups.check_drill``).
"""

from __future__ import annotations

import attrs

from strongroom.domain.cron import Schedule


@attrs.frozen
class DrillTarget:
    """Where a drill restores: ``service``, the scratch target the service owns (a database
    it creates and drops, a directory of its data dir)."""

    type: str = "service"


SERVICE_TARGET = DrillTarget()


@attrs.frozen
class DrillPolicy:
    """Scheduled drills of a backup: one queued at each slot of ``schedule`` (the same
    grammar and time zone rules as the backup's own schedule)."""

    schedule: Schedule
    target: DrillTarget = SERVICE_TARGET
