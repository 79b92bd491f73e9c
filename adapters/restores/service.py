"""The restore targets the service offers, by target type (the ``RestoreTargets`` port)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from strongroom.adapters.outbound.policy import Outbound
from strongroom.adapters.resolver import Resolver
from strongroom.adapters.restores.postgres import restore_postgres
from strongroom.domain.artifacts import DEFAULT_PART_SIZE
from strongroom.domain.backups import S3Source
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.domain.restores import RestoreTarget
from strongroom.ports.driven.storage import ObjectReader


class ServiceRestoreTargets:
    """S3 buckets (through minio, the ``s3`` extra, loaded on use) and PostgreSQL databases
    (through ``pg_restore``), reached through the outbound policy. The blocking work runs
    in a worker thread."""

    def __init__(
        self,
        policy: EndpointPolicy | Outbound,
        *,
        part_size: int = DEFAULT_PART_SIZE,
        resolve: Resolver | None = None,
    ) -> None:
        self._policy = policy
        self._part_size = part_size
        self._resolve = resolve

    async def restore(
        self, artifact: ObjectReader, target: RestoreTarget, credentials: Mapping[str, str]
    ) -> None:
        """Write ``artifact`` into ``target`` (see the port)."""
        if isinstance(target, S3Source):
            from strongroom.adapters.restores.s3 import restore_s3  # noqa: PLC0415

            await asyncio.to_thread(
                restore_s3,
                artifact,
                target,
                credentials,
                self._policy,
                part_size=self._part_size,
                resolve=self._resolve,
            )
            return
        await asyncio.to_thread(
            restore_postgres, artifact, target, credentials, self._policy, resolve=self._resolve
        )
