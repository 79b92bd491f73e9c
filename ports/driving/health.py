"""Backups' health (contract 16): the list a workspace reads, and the service's own
evaluation, which notices a backup gone quiet whoever calls.

The evaluator (``evaluate``, run by a loop of ``serve``) reads every backup's facts,
evaluates each with ``domain.freshness`` and stores the status that changed with a
compare-and-set on the stored one: of several instances (or a restart) one moves it, and
only that one queues the announcement (``backup.late``, ``backup.recovered``) in the same
unit of work, so a spell is announced once. Mail to the workspace's admins (a late backup,
a new failure) goes at most once an hour per backup, recorded with the same kind of
compare-and-set before it is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from strongroom.domain.audit import JsonValue
from strongroom.domain.freshness import Announcement, Health, HealthStatus, announcement, evaluate
from strongroom.domain.pagination import Cursor, Page, PageRequest
from strongroom.domain.permissions import ADMIN, Permission
from strongroom.domain.principals import Caller
from strongroom.domain.timestamps import format_timestamp
from strongroom.domain.webhooks import WebhookEvent
from strongroom.ports.driven.assurance_repositories import HealthFacts
from strongroom.ports.driving.access import Access, Grant, Requirement
from strongroom.ports.driving.dependencies import Dependencies
from strongroom.ports.driving.notifications import notify

logger = logging.getLogger(__name__)

READ_HEALTH = Requirement((Permission.BACKUPS_READ,))
# At most one mail per backup in this window.
MAIL_EVERY = timedelta(hours=1)
# A failure older than this when first seen is not mailed about (the service was down).
MAIL_FAILURES_WITHIN = timedelta(hours=24)


def health_of(facts: HealthFacts, now: datetime) -> Health:
    """One backup's health from its facts."""
    return evaluate(
        facts.backup_id,
        facts.freshness,
        facts.schedule,
        facts.last_success_at,
        facts.last_failure,
        now,
    )


def health_page(entries: list[tuple[HealthFacts, Health]], page: PageRequest) -> Page[Health]:
    """A page of ``entries`` in urgency order; the cursor names the last backup shown (a
    status can change between pages: the next page starts after that backup wherever it
    stands then, or from the top when it is gone)."""
    # Late and failing first; within a status newest backup first, as every list.
    newest_first = sorted(entries, key=lambda e: (e[0].created_at, e[0].backup_id), reverse=True)
    ordered = sorted(newest_first, key=lambda e: e[1].status.urgency)
    start = 0
    if page.after is not None:
        ids = [facts.backup_id for facts, _ in ordered]
        if page.after.id in ids:
            start = ids.index(page.after.id) + 1
    shown = ordered[start : start + page.limit]
    more = start + page.limit < len(ordered)
    last = shown[-1][0] if shown and more else None
    return Page(
        [health for _, health in shown],
        None if last is None else Cursor(last.created_at, last.backup_id),
    )


@attrs.frozen
class Evaluation:
    """What one pass of the evaluator did."""

    evaluated: int
    announced: tuple[tuple[UUID, Announcement], ...]
    mailed: tuple[UUID, ...]


def _announcement_data(facts: HealthFacts, health: Health) -> dict[str, JsonValue]:
    return {
        "backup_id": str(facts.backup_id),
        "name": facts.name,
        "status": health.status.value,
        "last_success_at": None
        if health.last_success_at is None
        else format_timestamp(health.last_success_at),
        "age_seconds": health.age_seconds,
    }


class HealthBoard:
    """The health list and the service's evaluator."""

    def __init__(self, deps: Dependencies, access: Access) -> None:
        self._deps = deps
        self._access = access

    async def list_in(
        self, caller: Caller | Grant, workspace_id: UUID, page: PageRequest
    ) -> Page[Health]:
        """``GET /v1/workspaces/{wid}/health``: every backup's health, late and failing
        first."""
        await self._access.resolve(caller, READ_HEALTH, workspace_id=workspace_id)
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            found = await uow.health.facts(workspace_id)
        return health_page([(facts, health_of(facts, now)) for facts in found], page)

    async def counts(self) -> Mapping[HealthStatus, int]:
        """Backups of every workspace by their stored status (``/metrics``)."""
        async with self._deps.uow() as uow:
            return await uow.health.counts()

    async def evaluate(self) -> Evaluation:
        """One pass over every backup: store what changed, announce once, mail admins."""
        now = self._deps.clock.now()
        async with self._deps.uow() as uow:
            found = await uow.health.facts(None)
        announced: list[tuple[UUID, Announcement]] = []
        mailed: list[UUID] = []
        for facts in found:
            health = health_of(facts, now)
            said = None
            if facts.stored is not health.status:
                moved, said = await self._store(facts, health, now)
                if not moved:
                    continue
                if said is not None:
                    announced.append((facts.backup_id, said))
            subject = self._mail_subject(facts, health, said, now)
            if subject is not None and await self._mail(facts, subject, health, now):
                mailed.append(facts.backup_id)
        return Evaluation(len(found), tuple(announced), tuple(mailed))

    async def _store(
        self, facts: HealthFacts, health: Health, now: datetime
    ) -> tuple[bool, Announcement | None]:
        """Move the stored status; the announcement queued with it (only by the winner)."""
        said = announcement(facts.stored or HealthStatus.NEVER, health.status)
        async with self._deps.uow() as uow:
            moved = await uow.health.store(
                facts.workspace_id, facts.backup_id, facts.stored, health.status, now
            )
            if not moved:
                return False, None
            if said is not None:
                await notify(
                    self._deps,
                    uow,
                    facts.workspace_id,
                    WebhookEvent(said.value),
                    _announcement_data(facts, health),
                )
            await uow.commit()
        if said is not None:
            logger.info("backup %s: %s", facts.backup_id, said.value)
        return True, said

    @staticmethod
    def _mail_subject(
        facts: HealthFacts, health: Health, said: Announcement | None, now: datetime
    ) -> str | None:
        """What the admins are told, if anything: a backup gone late, or a failure newer
        than the last mail (``run.failed``)."""
        if said is Announcement.LATE:
            return f"Strongroom: backup {facts.name!r} is late"
        failure = facts.last_failure
        if (
            failure is not None
            and health.status in (HealthStatus.FAILING, HealthStatus.LATE)
            and failure.at > now - MAIL_FAILURES_WITHIN
            and (facts.mailed_at is None or failure.at > facts.mailed_at)
        ):
            return f"Strongroom: a run of backup {facts.name!r} failed"
        return None

    async def _mail(self, facts: HealthFacts, subject: str, health: Health, now: datetime) -> bool:
        """Mail the workspace's admins unless they were mailed about this backup within
        ``MAIL_EVERY``; whether this evaluator sent it."""
        async with self._deps.uow() as uow:
            if not await uow.health.mark_mailed(
                facts.workspace_id, facts.backup_id, now, now - MAIL_EVERY
            ):
                return False
            await uow.commit()
        admins = await self._admins(facts.workspace_id)
        failure = facts.last_failure
        lines = [
            f"Backup: {facts.name} ({facts.backup_id})",
            f"Status: {health.status.value}",
            "Last success: "
            + (
                "never"
                if health.last_success_at is None
                else format_timestamp(health.last_success_at)
            ),
        ]
        if failure is not None:
            lines.append(f"Last failure: {format_timestamp(failure.at)}: {failure.error or ''}")
        for address in admins:
            try:
                await self._deps.mailer.send(address, subject, "\n".join(lines) + "\n")
            except Exception:
                logger.exception("mail about backup %s could not be sent", facts.backup_id)
        return True

    async def _admins(self, workspace_id: UUID) -> list[str]:
        """The addresses of the workspace's admins."""
        addresses: list[str] = []
        async with self._deps.uow() as uow:
            page = await uow.memberships.list_members(workspace_id, PageRequest(100))
            while True:
                addresses += [m.email for m in page.items if m.role == ADMIN.slug]
                if page.next_cursor is None:
                    return addresses
                page = await uow.memberships.list_members(
                    workspace_id, PageRequest(100, page.next_cursor)
                )
