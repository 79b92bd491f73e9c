"""Everything the use cases need from the outside, as driven ports."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta

import attrs

from strongroom.domain.artifacts import DEFAULT_MULTIPART_THRESHOLD
from strongroom.domain.backups import CustomerS3Destination
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.clock import Clock, IdGenerator
from strongroom.ports.driven.identity import IdentityProvider
from strongroom.ports.driven.mailer import Mailer
from strongroom.ports.driven.provisioning import Billing, StorageNamespaces
from strongroom.ports.driven.restore_targets import RestoreTargets
from strongroom.ports.driven.secrets import SecretBox
from strongroom.ports.driven.signals import RunSignals
from strongroom.ports.driven.storage import ObjectStorage
from strongroom.ports.driven.unit_of_work import UnitOfWorkFactory

CustomerStorage = Callable[[CustomerS3Destination, Mapping[str, str]], ObjectStorage]


@attrs.frozen
class Dependencies:
    """The driven ports one ``Strongroom`` facade runs on."""

    uow: UnitOfWorkFactory
    clock: Clock
    ids: IdGenerator
    identity: IdentityProvider
    billing: Billing
    namespaces: StorageNamespaces
    mailer: Mailer
    secrets: SecretBox
    storage: ObjectStorage
    # The storage of a customer's own bucket, from its destination and credentials.
    customer_storage: CustomerStorage
    # Where restores write (S3 buckets, PostgreSQL databases); honours endpoint_policy.
    restore_targets: RestoreTargets
    # Wake-ups of waiting claims when runs are queued (contract 11's long poll).
    signals: RunSignals = attrs.field(kw_only=True)
    session_ttl: timedelta = timedelta(days=7)
    multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD
    # Where customer endpoints may point (contract 13); ``customer_storage`` enforces it
    # on every connection, PATCH on literal addresses.
    endpoint_policy: EndpointPolicy = attrs.field(factory=EndpointPolicy)
