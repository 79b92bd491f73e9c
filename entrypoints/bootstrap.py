"""The composition root: builds the facade from adapters, any of which a caller may replace.

Nothing here runs at import time; nothing else imports this module.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from strongroom.adapters.identity.builtin import BuiltinIdentityProvider
from strongroom.adapters.memory.services import MemoryBilling, MemoryNamespaces, OutboxMailer
from strongroom.adapters.memory.store import MemoryStore
from strongroom.adapters.memory.unit_of_work import MemoryUnitOfWork
from strongroom.adapters.proofs.signing import ProofSigner
from strongroom.adapters.restores.drills import ServiceDrillTargets
from strongroom.adapters.restores.service import ServiceRestoreTargets
from strongroom.adapters.secrets import FernetSecretBox
from strongroom.adapters.signals import InProcessRunSignals
from strongroom.adapters.storage.local import LocalDiskStorage
from strongroom.adapters.system import SecureIds, SystemClock
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
from strongroom.ports.driving import Dependencies, Strongroom
from strongroom.ports.driving.dependencies import CustomerStorage


def bootstrap(
    *,
    uow: UnitOfWorkFactory | None = None,
    clock: Clock | None = None,
    ids: IdGenerator | None = None,
    identity: IdentityProvider | None = None,
    billing: Billing | None = None,
    namespaces: StorageNamespaces | None = None,
    mailer: Mailer | None = None,
    secret_box: SecretBox | None = None,
    secret_key: str | None = None,
    signup_enabled: bool = True,
    storage: ObjectStorage | None = None,
    multipart_threshold: int = DEFAULT_MULTIPART_THRESHOLD,
    customer_storage: CustomerStorage | None = None,
    endpoint_policy: EndpointPolicy | None = None,
    restore_targets: RestoreTargets | None = None,
    signals: RunSignals | None = None,
) -> Strongroom:
    """Build a ``Strongroom`` facade. Every argument left out gets the in-memory default.

    With no identity provider given, the built-in one runs on the same unit of work; it is
    then reachable as ``facade.identity`` (the HTTP adapter mounts its ``/idp`` pages).
    With no object storage given, objects go to local disk in a temporary directory made on
    first use (and namespaces are kept in memory); a given storage also provisions the
    namespaces unless ``namespaces`` says otherwise. ``endpoint_policy`` (default: public
    addresses and the private ranges, contract 13) bounds where customer endpoints point;
    a given ``customer_storage`` must enforce it on its connections itself, as must given
    ``restore_targets`` (default: S3 buckets and PostgreSQL databases, ``pg_restore``).
    ``signals`` (default: in-process) wakes waiting claims when runs are queued; a database
    shared by several processes needs one that hears the others (PostgreSQL's LISTEN/NOTIFY).
    """
    secret_key = secret_key or secrets.token_urlsafe(32)
    uow = uow or partial(MemoryUnitOfWork, MemoryStore())
    clock = clock or SystemClock()
    ids = ids or SecureIds()
    identity = identity or BuiltinIdentityProvider(
        uow=uow, clock=clock, ids=ids, signup_enabled=signup_enabled
    )
    if storage is not None:
        namespaces = namespaces or storage
    storage = storage or LocalDiskStorage(None, secret_key.encode(), clock=clock.now)
    endpoint_policy = endpoint_policy or EndpointPolicy()
    deps = Dependencies(
        uow=uow,
        clock=clock,
        ids=ids,
        identity=identity,
        billing=billing or MemoryBilling(),
        namespaces=namespaces or MemoryNamespaces(),
        mailer=mailer or OutboxMailer(),
        secrets=secret_box or FernetSecretBox(secret_key),
        storage=storage,
        customer_storage=customer_storage or partial(_customer_s3, policy=endpoint_policy),
        restore_targets=restore_targets or ServiceRestoreTargets(endpoint_policy),
        multipart_threshold=multipart_threshold,
        endpoint_policy=endpoint_policy,
        signals=signals or InProcessRunSignals(),
    )
    facade = Strongroom(deps)
    # Restore drills and proofs (contract 16): scratch in the temporary directory, and a
    # key of this facade's own; ``open_facade`` gives the configured ones.
    facade.drills.targets = ServiceDrillTargets(Path(tempfile.gettempdir()) / "strongroom-drills")
    facade.proofs.signer = ProofSigner.generated()
    return facade


def _customer_s3(
    destination: CustomerS3Destination, credentials: Mapping[str, str], *, policy: EndpointPolicy
) -> ObjectStorage:
    """A customer's bucket through the S3 adapter (minio, the ``s3`` extra, loaded on use),
    connecting only where ``policy`` allows."""
    from strongroom.adapters.outbound.s3 import customer_bucket  # noqa: PLC0415

    return customer_bucket(destination, credentials, policy)
