"""The wire: every request and response shape of the API, once, as attrs models (a
resource per module), the converters that read and write them, and their binding to the
domain.

Request models are closed (unknown fields are refused by the strict ``CONVERTER``);
response schemas stay open, and the SDK reads answers with the ``tolerant`` converter over
the same classes. The OpenAPI components are generated from these models. This package
imports only the domain, attrs, cattrs and orjson: every adapter (HTTP, SQL, memory) and
the SDK may use it. Importing it registers every view; ``render`` writes a domain object
as the API shows it.
"""

from strongroom.adapters.wire import (
    artifacts,
    audit,
    backups,
    binding,
    claims,
    errors,
    idp,
    invitations,
    machines,
    members,
    restores,
    runs,
    sessions,
    sources,
    system,
    workspaces,
)
from strongroom.adapters.wire.binding import bind
from strongroom.adapters.wire.converter import CONVERTER, SENTINELS, structure, timestamp
from strongroom.adapters.wire.errors import Error, ErrorBody, OAuthError
from strongroom.adapters.wire.idp import DEVICE_CODE_GRANT, DeviceDecision
from strongroom.adapters.wire.present import listing, present, render
from strongroom.adapters.wire.scalars import (
    MAX_PORT,
    TIMESTAMP,
    Bucket,
    Email,
    Endpoint,
    Name,
    NonEmpty,
    Port,
    RoleSlug,
    Uri,
)
from strongroom.adapters.wire.system import EmptyBody
from strongroom.adapters.wire.views import VIEWS, field_docs, meta, view_of, write_only

binding.configure()

__all__ = [
    "CONVERTER",
    "DEVICE_CODE_GRANT",
    "MAX_PORT",
    "SENTINELS",
    "TIMESTAMP",
    "VIEWS",
    "Bucket",
    "DeviceDecision",
    "Email",
    "EmptyBody",
    "Endpoint",
    "Error",
    "ErrorBody",
    "Name",
    "NonEmpty",
    "OAuthError",
    "Port",
    "RoleSlug",
    "Uri",
    "artifacts",
    "audit",
    "backups",
    "bind",
    "claims",
    "errors",
    "field_docs",
    "idp",
    "invitations",
    "listing",
    "machines",
    "members",
    "meta",
    "present",
    "render",
    "restores",
    "runs",
    "sessions",
    "sources",
    "structure",
    "system",
    "timestamp",
    "view_of",
    "workspaces",
    "write_only",
]
