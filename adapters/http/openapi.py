"""The OpenAPI 3.1 document of the HTTP API, built as plain Python data.

The document is written by hand from the contract (``shared/spec``), operation by
operation, and is deliberately independent of the router: ``tests/http/test_openapi.py``
compares its operations with the application's routes, so a route missing from the
document or an operation without a route fails the suite. Limits, error codes and
statuses are read from the code that enforces them, so they cannot drift.

``document_for(app)`` builds the document once per application and caches it there.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any

import attrs
from starlette.applications import Starlette

from strongroom.adapters.http.context import MAX_BODY_BYTES
from strongroom.adapters.http.errors import STATUS_BY_CODE
from strongroom.adapters.identity.builtin import (
    CLIENT_ID,
    MAX_PASSWORD_LENGTH,
    MIN_PASSWORD_LENGTH,
)
from strongroom.domain.artifacts import (
    MAX_ARTIFACT_NAME,
    MAX_ARTIFACT_SIZE,
    ArtifactState,
    ArtifactStorage,
)
from strongroom.domain.audit import Outcome
from strongroom.domain.backups import BackupKind, BackupState
from strongroom.domain.names import MAX_NAME_LENGTH
from strongroom.domain.pagination import DEFAULT_LIMIT, MAX_LIMIT
from strongroom.domain.permissions import Permission
from strongroom.domain.principals import PrincipalType
from strongroom.domain.quotas import DEFAULT_LIMITS, WORKSPACES_PER_USER, QuotaResource
from strongroom.domain.runs import RunState, RunTrigger
from strongroom.ports.driving.idempotency import MAX_KEY_LENGTH

Json = dict[str, Any]

OPENAPI_VERSION = "3.1.0"
DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
BEARER = "bearerAuth"
IDP_BEARER = "idpAccessToken"
_STATE_KEY = "openapi_document"

# --------------------------------------------------------------------------------------
# Schema helpers


def ref(name: str) -> Json:
    """A reference to a component schema."""
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Json) -> Json:
    """``schema`` or ``null``."""
    if "$ref" in schema or "oneOf" in schema:
        variants = schema.get("oneOf", [schema])
        return {"oneOf": [*variants, {"type": "null"}]}
    result = dict(schema)
    result["type"] = [schema["type"], "null"]
    return result


def obj(
    properties: Mapping[str, Json],
    *,
    required: list[str] | None = None,
    closed: bool = False,
    description: str | None = None,
) -> Json:
    """An object schema; every property is required unless ``required`` says otherwise.

    ``closed`` forbids properties not listed (every request body is closed); response
    schemas stay open so that adding a field later does not break strict clients.
    """
    schema: Json = {"type": "object"}
    if description is not None:
        schema["description"] = description
    schema["properties"] = dict(properties)
    schema["required"] = list(properties) if required is None else required
    if closed:
        schema["additionalProperties"] = False
    return schema


def described(schema: Json, description: str) -> Json:
    """``schema`` with a description (beside a ``$ref`` too, as OpenAPI 3.1 allows)."""
    return {**schema, "description": description}


def string(description: str | None = None, **keywords: Any) -> Json:
    """A string schema."""
    schema: Json = {"type": "string", **keywords}
    if description is not None:
        schema["description"] = description
    return schema


UUID_SCHEMA = string(format="uuid")
TIMESTAMP = string("RFC 3339 timestamp in UTC with a `Z` suffix.", format="date-time")
DURATION_PATTERN = (
    r"^P(?=\d|T\d)(?:\d{1,12}W)?(?:\d{1,12}D)?"
    r"(?:T(?=\d)(?:\d{1,12}H)?(?:\d{1,12}M)?(?:\d{1,12}S)?)?$"
)

# --------------------------------------------------------------------------------------
# Components: schemas


def _schemas() -> dict[str, Json]:
    kinds = [kind.value for kind in BackupKind]
    return {
        "Error": obj(
            {
                "error": obj(
                    {
                        "code": string(
                            "Stable machine-readable code; branch on it, never on `message`. "
                            "Every code and its status is listed under `x-error-codes`."
                        ),
                        "message": string("Human-readable; its wording may change."),
                        "request_id": string(
                            "Equals the response's `X-Request-ID` header (`req_<uuid>` when "
                            "generated)."
                        ),
                        "detail": string(
                            "Only when the server does not run in production: the "
                            "underlying failure of a 500 or 502."
                        ),
                    },
                    required=["code", "message", "request_id"],
                )
            },
            description="The error envelope of every failure (except `POST /idp/token`).",
        ),
        "OAuthError": obj(
            {
                "error": string(
                    "RFC 6749 / RFC 8628 error code.",
                    enum=[
                        "invalid_request",
                        "invalid_grant",
                        "unsupported_grant_type",
                        "authorization_pending",
                        "slow_down",
                        "expired_token",
                        "access_denied",
                    ],
                ),
                "error_description": string("Human-readable explanation."),
            },
            description="OAuth's own error format, used only by `POST /idp/token`.",
        ),
        "Name": string(
            f"1 to {MAX_NAME_LENGTH} characters after trimming surrounding whitespace, no "
            "control characters; stored trimmed.",
            minLength=1,
        ),
        "Duration": string(
            "ISO 8601 duration in weeks, days, hours, minutes and seconds only (`P30D`, "
            "`P4W`, `PT36H`); months and years are refused. Returned in canonical form: "
            "weeks become days and zero parts are omitted (`P7D`, `P1DT12H`, `PT0S`).",
            pattern=DURATION_PATTERN,
        ),
        "Health": obj({"status": string(const="ok")}, description="The process is running."),
        "Readiness": obj(
            {
                "status": string(enum=["ok", "unavailable"]),
                "checks": obj(
                    {
                        "database": string(enum=["ok", "unavailable"]),
                        "storage": string(enum=["ok", "unavailable"]),
                    }
                ),
            },
            description="Whether the database and object storage answer.",
        ),
        "Permission": obj(
            {
                "slug": string(enum=[permission.value for permission in Permission]),
                "description": string(),
            }
        ),
        "PermissionList": obj(
            {
                "data": {"type": "array", "items": ref("Permission")},
                "next_cursor": {"type": "null", "description": "Always null: one page."},
            },
            description="The whole permission catalog.",
        ),
        "User": obj(
            {"id": UUID_SCHEMA, "email": string(format="email"), "name": string()},
            description="A person.",
        ),
        "Principal": obj(
            {
                "type": string(
                    enum=[t.value for t in PrincipalType if t is not PrincipalType.SYSTEM]
                ),
                "id": UUID_SCHEMA,
            }
        ),
        "Me": obj(
            {
                "principal": ref("Principal"),
                "user": described(ref("User"), "Present only when the caller is a person."),
                "workspace_id": nullable(
                    string("The workspace the credential is scoped to.", format="uuid")
                ),
                "permissions": {
                    "type": "array",
                    "items": ref("PermissionSlug"),
                    "description": "Sorted; empty when no workspace is selected.",
                },
            },
            required=["principal", "workspace_id", "permissions"],
        ),
        "PermissionSlug": string(enum=[permission.value for permission in Permission]),
        "CliConfig": obj(
            {
                "issuer": string(format="uri"),
                "client_id": string(examples=[CLIENT_ID]),
                "device_authorization_endpoint": string(format="uri"),
                "token_endpoint": string(format="uri"),
                "scopes": {"type": "array", "items": string()},
            },
            description="Absolute URLs built from `STRONGROOM_PUBLIC_URL`, else from the "
            "request's own scheme and host.",
        ),
        "SessionCreate": obj(
            {},
            closed=True,
            description="Optional: no body, or `{}`.",
        ),
        "SwitchWorkspace": obj({"workspace_id": UUID_SCHEMA}, closed=True),
        "Session": obj(
            {
                "token": string(
                    "The session token (`bks_...`), the bearer for `/v1`; shown only here."
                ),
                "expires_at": TIMESTAMP,
                "user": ref("User"),
                "workspace_id": nullable(
                    string(
                        "The workspace the session is scoped to; null after sign-in.",
                        format="uuid",
                    )
                ),
            }
        ),
        "WorkspaceCreate": obj({"name": ref("Name")}, closed=True),
        "ApiKeyCreate": obj(
            {
                "name": ref("Name"),
                "permissions": {
                    "type": "array",
                    "items": ref("PermissionSlug"),
                    "description": "A subset of the caller's own permissions (more: 403); "
                    "slugs outside the catalog: 422 `validation_failed`.",
                },
                "expires_at": described(
                    TIMESTAMP, "Optional; after it the key answers 401. Must be in the future."
                ),
            },
            required=["name", "permissions"],
            closed=True,
        ),
        "ApiKey": obj(
            {
                "id": UUID_SCHEMA,
                "name": string(),
                "permissions": {"type": "array", "items": ref("PermissionSlug")},
                "created_at": TIMESTAMP,
                "expires_at": nullable(TIMESTAMP),
                "last_used_at": nullable(described(TIMESTAMP, "Recorded at most once a minute.")),
            },
            description="An API key; its token is never shown again after creation.",
        ),
        "ApiKeyWithToken": obj(
            {
                "id": UUID_SCHEMA,
                "name": string(),
                "permissions": {"type": "array", "items": ref("PermissionSlug")},
                "token": string("The key's bearer token (`bkk_...`), shown only here."),
                "created_at": TIMESTAMP,
                "expires_at": nullable(TIMESTAMP),
                "last_used_at": {"type": "null"},
            },
            description="A new API key with its token.",
        ),
        "ApiKeyList": _list_of("ApiKey"),
        "WorkerCreate": obj({"name": ref("Name")}, closed=True),
        "Worker": obj(
            {
                "id": UUID_SCHEMA,
                "name": string(),
                "created_at": TIMESTAMP,
                "last_seen_at": nullable(described(TIMESTAMP, "Recorded at most once a minute.")),
            },
            description="A worker; its token is never shown again.",
        ),
        "WorkerWithToken": obj(
            {
                "id": UUID_SCHEMA,
                "name": string(),
                "token": string(
                    "The worker's bearer token (`bkw_...`), shown only here; a rotation "
                    "ends the previous one at once."
                ),
                "created_at": TIMESTAMP,
                "last_seen_at": nullable(TIMESTAMP),
            },
            description="A worker with its new token.",
        ),
        "WorkerList": _list_of("Worker"),
        "RoleSlug": string(
            "Lowercase letter, then 1 to 39 lowercase letters, digits or hyphens.",
            pattern="^[a-z][a-z0-9-]{1,39}$",
        ),
        "Member": obj(
            {
                "user_id": UUID_SCHEMA,
                "email": string(format="email"),
                "name": string(),
                "role": ref("RoleSlug"),
                "joined_at": TIMESTAMP,
            },
            description="A member of the workspace; `user_id` is the `{id}` of its routes.",
        ),
        "MemberList": _list_of("Member"),
        "MemberUpdate": obj({"role": ref("RoleSlug")}, closed=True),
        "Role": obj(
            {
                "slug": ref("RoleSlug"),
                "name": string(),
                "permissions": {"type": "array", "items": ref("PermissionSlug")},
                "builtin": {
                    "type": "boolean",
                    "description": "Built-in roles (`admin`, `member`, `viewer`) are immutable.",
                },
            }
        ),
        "InvitationCreate": obj(
            {"email": string(format="email"), "role": ref("RoleSlug")}, closed=True
        ),
        "Invitation": obj(
            {
                "id": UUID_SCHEMA,
                "email": string(format="email"),
                "role": ref("RoleSlug"),
                "state": string(
                    "`expired` once `expires_at` has passed unused.",
                    enum=["pending", "accepted", "expired"],
                ),
                "expires_at": described(TIMESTAMP, "Seven days after creation."),
                "created_at": TIMESTAMP,
            }
        ),
        "InvitationList": _list_of("Invitation"),
        "Membership": obj(
            {
                "workspace_id": UUID_SCHEMA,
                "user_id": UUID_SCHEMA,
                "role": ref("RoleSlug"),
                "joined_at": TIMESTAMP,
            },
            description="The membership an accepted invitation made.",
        ),
        "RoleList": _list_of("Role"),
        "RoleCreate": obj(
            {
                "slug": ref("RoleSlug"),
                "name": ref("Name"),
                "permissions": {
                    "type": "array",
                    "items": ref("PermissionSlug"),
                    "description": "A subset of the caller's own permissions (more: 403).",
                },
            },
            closed=True,
        ),
        "RoleUpdate": obj(
            {
                "name": ref("Name"),
                "permissions": {"type": "array", "items": ref("PermissionSlug")},
            },
            required=[],
            closed=True,
        ),
        "WorkspaceUpdate": obj({"name": ref("Name")}, closed=True),
        "Workspace": obj(
            {
                "id": UUID_SCHEMA,
                "name": string(),
                "idp_org_id": string("The workspace's organization at the identity provider."),
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
            },
            description="A single workspace.",
        ),
        "MemberWorkspace": obj(
            {
                "id": UUID_SCHEMA,
                "name": string(),
                "idp_org_id": string(),
                "role": string("The caller's role in the workspace, e.g. `admin`."),
            },
            description="A workspace in the list of the caller's memberships.",
        ),
        "MemberWorkspaceList": _list_of("MemberWorkspace"),
        "Quota": obj(
            {
                "resource": string(enum=[resource.value for resource in QuotaResource]),
                "limit": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "The effective limit; 0 means unlimited. Defaults: "
                    + ", ".join(
                        f"`{resource.value}` {limit}" for resource, limit in DEFAULT_LIMITS.items()
                    )
                    + ".",
                },
                "usage": {"type": "integer", "minimum": 0},
            }
        ),
        "QuotaList": obj(
            {
                "data": {
                    "type": "array",
                    "items": ref("Quota"),
                    "description": "Every quota resource, defaults filled in.",
                },
                "next_cursor": {"type": "null", "description": "Always null: one page."},
            }
        ),
        "AuditEvent": obj(
            {
                "id": UUID_SCHEMA,
                "occurred_at": TIMESTAMP,
                "actor": obj(
                    {
                        "type": string(enum=[t.value for t in PrincipalType]),
                        "id": nullable(string("Null for the `system` actor.", format="uuid")),
                    }
                ),
                "action": string("`<resource>.<verb>`, e.g. `workspace.create`, `backup.update`."),
                "target": obj(
                    {
                        "type": string("The resource, e.g. `backup`."),
                        "id": nullable(string()),
                    }
                ),
                "request_id": nullable(string()),
                "outcome": string(enum=[outcome.value for outcome in Outcome]),
                "changes": nullable(
                    {
                        "type": "object",
                        "description": "`{field: {from, to}}`, never a secret.",
                        "additionalProperties": obj({"from": {}, "to": {}}),
                    }
                ),
            }
        ),
        "AuditEventList": _list_of("AuditEvent"),
        "BackupCreate": obj(
            {"name": ref("Name"), "kind": string("Immutable once set.", enum=kinds)},
            closed=True,
        ),
        "BackupUpdate": obj(
            {
                "name": ref("Name"),
                "source": described(
                    {
                        "oneOf": [ref("S3SourceInput"), ref("PostgresSourceInput")],
                        "discriminator": {
                            "propertyName": "type",
                            "mapping": {
                                "s3": "#/components/schemas/S3SourceInput",
                                "postgres": "#/components/schemas/PostgresSourceInput",
                            },
                        },
                    },
                    "Cloud backups only.",
                ),
                "credentials": described(
                    {
                        "oneOf": [ref("S3Credentials"), ref("PostgresCredentials")],
                        "writeOnly": True,
                    },
                    "Cloud backups only; the shape follows the source type. Write-only: "
                    "never returned, logged or audited; encrypted at rest.",
                ),
                "schedule": described(
                    nullable(ref("Schedule")), "Not on manual backups; null removes it."
                ),
                "worker_id": string(
                    "Local backups only: a worker of this workspace.", format="uuid"
                ),
                "retention": described(
                    ref("Retention"),
                    "Write-once: an identical policy is accepted again, another gives 409 "
                    "`retention_immutable`.",
                ),
                "destination": {
                    "oneOf": [ref("ServiceDestination"), ref("CustomerS3DestinationInput")],
                    "discriminator": {
                        "propertyName": "type",
                        "mapping": {
                            "service": "#/components/schemas/ServiceDestination",
                            "customer_s3": "#/components/schemas/CustomerS3DestinationInput",
                        },
                    },
                },
                "destination_credentials": described(
                    {**ref("S3Credentials"), "writeOnly": True},
                    "Only with a `customer_s3` destination (required when first setting "
                    "one). Write-only.",
                ),
            },
            required=[],
            closed=True,
            description="Every field is optional; `kind` cannot be changed.",
        ),
        "Backup": obj(
            {
                "id": UUID_SCHEMA,
                "workspace_id": UUID_SCHEMA,
                "name": string(),
                "kind": string(enum=kinds),
                "state": string(
                    "`active` once the kind's configuration is complete: cloud needs "
                    "`source`, `credentials` and `retention`; local needs `worker_id` and "
                    "`retention`; manual needs `retention`.",
                    enum=[state.value for state in BackupState],
                ),
                "paused": {
                    "type": "boolean",
                    "description": "A paused backup keeps its state and is not scheduled.",
                },
                "source": {"oneOf": [ref("S3Source"), ref("PostgresSource"), {"type": "null"}]},
                "has_credentials": {
                    "type": "boolean",
                    "description": "Whether source credentials are stored (never returned).",
                },
                "schedule": nullable(ref("Schedule")),
                "worker_id": nullable(UUID_SCHEMA),
                "retention": nullable(ref("Retention")),
                "destination": {
                    "oneOf": [ref("ServiceDestination"), ref("CustomerS3Destination")],
                    "discriminator": {
                        "propertyName": "type",
                        "mapping": {
                            "service": "#/components/schemas/ServiceDestination",
                            "customer_s3": "#/components/schemas/CustomerS3Destination",
                        },
                    },
                },
                "next_run_at": nullable(TIMESTAMP),
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
            },
            description="A backup. Credentials are write-only and never appear.",
        ),
        "BackupList": _list_of("Backup"),
        "UploadRequest": obj(
            {
                "name": string(
                    f"1 to {MAX_ARTIFACT_NAME} characters, no control characters; unique in "
                    "the run (asking again for the same name, size and sha256 resumes).",
                    minLength=1,
                    maxLength=MAX_ARTIFACT_NAME,
                ),
                "size": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": MAX_ARTIFACT_SIZE,
                    "description": "Exact size in bytes.",
                },
                "sha256": string("Hex digest of the bytes.", pattern="^[0-9a-fA-F]{64}$"),
            },
            closed=True,
        ),
        "SingleUpload": obj(
            {
                "artifact_id": UUID_SCHEMA,
                "method": string(const="PUT"),
                "url": string("Presigned; bound to this method and object.", format="uri"),
                "headers": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "description": "Headers to send with the PUT.",
                },
                "expires_at": TIMESTAMP,
            },
            description="Below the multipart threshold: one PUT of the whole body.",
        ),
        "MultipartUpload": obj(
            {
                "artifact_id": UUID_SCHEMA,
                "upload_id": string(),
                "part_size": {"type": "integer", "minimum": 1},
                "parts": {
                    "type": "array",
                    "items": obj(
                        {
                            "number": {"type": "integer", "minimum": 1},
                            "size": {"type": "integer", "minimum": 0},
                            "method": string(const="PUT"),
                            "url": string(format="uri"),
                        }
                    ),
                },
                "stored_parts": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "description": "Parts already stored: a resuming client skips them.",
                },
                "expires_at": TIMESTAMP,
            },
            description="From the multipart threshold up: one PUT per part; `confirm` joins them.",
        ),
        "UploadPlan": {"oneOf": [ref("SingleUpload"), ref("MultipartUpload")]},
        "Download": obj(
            {
                "method": string(const="GET"),
                "url": string("Presigned; bound to this method and object.", format="uri"),
                "expires_at": TIMESTAMP,
            }
        ),
        "Artifact": obj(
            {
                "id": UUID_SCHEMA,
                "run_id": UUID_SCHEMA,
                "backup_id": UUID_SCHEMA,
                "name": string(),
                "size": {"type": "integer", "minimum": 0},
                "sha256": string(pattern="^[0-9a-f]{64}$"),
                "state": string(enum=[state.value for state in ArtifactState]),
                "storage": string(enum=[storage.value for storage in ArtifactStorage]),
                "created_at": TIMESTAMP,
                "expires_at": described(
                    nullable(TIMESTAMP), "From the backup's retention at confirmation."
                ),
                "locked_until": described(
                    nullable(TIMESTAMP),
                    "Nobody can remove it before (enforced by the storage itself).",
                ),
            },
            description="A file of a run.",
        ),
        "ArtifactList": _list_of("Artifact"),
        "StoredResult": obj({"status": string(const="stored")}),
        "RunCreate": obj({"backup_id": described(UUID_SCHEMA, "A manual backup.")}, closed=True),
        "Run": obj(
            {
                "id": UUID_SCHEMA,
                "backup_id": UUID_SCHEMA,
                "workspace_id": UUID_SCHEMA,
                "state": string(
                    "`running` from `POST /v1/runs`, `queued` from `trigger`; `succeeded` "
                    "once `confirm` found every announced artifact.",
                    enum=[state.value for state in RunState],
                ),
                "trigger": string(
                    "`manual` (`POST /v1/runs`), `api` (`trigger`) or `schedule`.",
                    enum=[trigger.value for trigger in RunTrigger],
                ),
                "worker_id": nullable(UUID_SCHEMA),
                "created_at": TIMESTAMP,
                "started_at": nullable(TIMESTAMP),
                "finished_at": nullable(TIMESTAMP),
                "artifact_count": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "The run's `available` artifacts.",
                },
                "bytes": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Total size of the run's `available` artifacts.",
                },
                "error": nullable(string()),
            },
            description="One execution of a backup.",
        ),
        "S3Source": obj(
            {
                "type": string(const="s3"),
                "endpoint": string(format="uri"),
                "bucket": string(),
                "prefix": nullable(string()),
            }
        ),
        "PostgresSource": obj(
            {
                "type": string(const="postgres"),
                "host": string(),
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "database": string(),
            }
        ),
        "S3SourceInput": obj(
            {
                "type": string(const="s3"),
                "endpoint": string(
                    "An http(s) URL such as `https://host:port` (port 1..65535, IPv6 "
                    "literals in brackets, no user part).",
                    format="uri",
                ),
                "bucket": string(minLength=1),
                "prefix": nullable(string("Null is the same as absent.")),
            },
            required=["type", "endpoint", "bucket"],
            closed=True,
        ),
        "PostgresSourceInput": obj(
            {
                "type": string(const="postgres"),
                "host": string(minLength=1),
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "database": string(minLength=1),
            },
            closed=True,
        ),
        "S3Credentials": obj(
            {"access_key_id": string(), "secret_access_key": string()}, closed=True
        ),
        "PostgresCredentials": obj({"username": string(), "password": string()}, closed=True),
        "Schedule": obj(
            {
                "cron": string(
                    "A 5-field cron expression: numbers, `*`, ranges, steps within the "
                    "field's range, lists and English month and weekday names (`jan`, "
                    "`mon`); `L`, `?`, `W`, `#` and seconds are refused (400)."
                ),
                "timezone": string("An IANA time zone name, e.g. `Europe/Paris`."),
            },
            closed=True,
        ),
        "Retention": obj(
            {
                "expire_after": described(ref("Duration"), "Longer than zero."),
                "lock_for": described(
                    ref("Duration"),
                    "`PT0S` means no lock; longer than `expire_after` gives 422 "
                    "`lock_exceeds_expiry`.",
                ),
            },
            closed=True,
        ),
        "ServiceDestination": obj(
            {"type": string(const="service")},
            closed=True,
            description="Artifacts go to the service's storage (the default).",
        ),
        "CustomerS3Destination": obj(
            {
                "type": string(const="customer_s3"),
                "endpoint": string(format="uri"),
                "bucket": string(),
                "prefix": nullable(string()),
            },
            description="Artifacts go only to the customer's own bucket and cannot be "
            "downloaded through the service.",
        ),
        "CustomerS3DestinationInput": obj(
            {
                "type": string(const="customer_s3"),
                "endpoint": string(
                    "An http(s) URL such as `https://host:port` (port 1..65535, IPv6 "
                    "literals in brackets, no user part).",
                    format="uri",
                ),
                "bucket": string(minLength=1),
                "prefix": nullable(string("Null is the same as absent.")),
            },
            required=["type", "endpoint", "bucket"],
            closed=True,
        ),
        "SignupForm": obj(
            {
                "email": string(format="email"),
                "password": string(
                    minLength=MIN_PASSWORD_LENGTH, maxLength=MAX_PASSWORD_LENGTH, writeOnly=True
                ),
                "name": ref("Name"),
            },
            closed=True,
        ),
        "SignupResult": obj({"user_id": UUID_SCHEMA, "email": string(format="email")}),
        "DeviceCodeForm": obj({"client_id": string(const=CLIENT_ID)}, closed=True),
        "DeviceAuthorization": obj(
            {
                "device_code": string("Secret of the polling client."),
                "user_code": string(
                    "8 letters shown as `XXXX-XXXX`.",
                    pattern="^[B-DF-HJ-NP-TV-XZ]{4}-[B-DF-HJ-NP-TV-XZ]{4}$",
                ),
                "verification_uri": string(format="uri"),
                "verification_uri_complete": string(format="uri"),
                "expires_in": {"type": "integer", "description": "Seconds (600)."},
                "interval": {"type": "integer", "description": "Seconds between polls (5)."},
            },
            description="RFC 8628 section 3.2.",
        ),
        "DeviceDecisionForm": obj(
            {
                "user_code": string("Case and hyphens do not matter."),
                "email": string(format="email"),
                "password": string(writeOnly=True),
                "decision": string(enum=["approve", "deny"]),
            },
            closed=True,
        ),
        "DeviceDecision": obj(
            {"status": string(enum=["approved", "denied"])},
            description="The JSON answer (with `Accept: application/json`).",
        ),
        "TokenForm": obj(
            {
                "grant_type": string(const=DEVICE_CODE_GRANT),
                "device_code": string(),
                "client_id": string(const=CLIENT_ID),
            },
            closed=True,
        ),
        "AccessToken": obj(
            {
                "access_token": string(
                    "Accepted only by `POST /v1/auth/sessions`, never as a `/v1` bearer."
                ),
                "token_type": string(const="Bearer"),
                "expires_in": {"type": "integer", "description": "Seconds."},
            }
        ),
    }


def _list_of(item: str) -> Json:
    return obj(
        {
            "data": {"type": "array", "items": ref(item)},
            "next_cursor": nullable(
                string("Pass as `?cursor=` for the next page; null on the last page.")
            ),
        },
        description="One page, newest first.",
    )


# --------------------------------------------------------------------------------------
# Components: parameters, headers, security schemes


def _parameters() -> dict[str, Json]:
    return {
        "limit": {
            "name": "limit",
            "in": "query",
            "required": False,
            "description": f"Page size, 1 to {MAX_LIMIT}; anything else gives 400.",
            "schema": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": DEFAULT_LIMIT,
            },
        },
        "cursor": {
            "name": "cursor",
            "in": "query",
            "required": False,
            "description": "Opaque `next_cursor` of the previous page; a bad one gives 400.",
            "schema": {"type": "string"},
        },
        "Idempotency-Key": {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "A repeat with the same key and body within 24 h returns the first "
            "response unchanged; the same key with another body gives 409 "
            "`idempotency_conflict`. Scoped to the principal and the route.",
            "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
        },
        "X-Request-ID": {
            "name": "X-Request-ID",
            "in": "header",
            "required": False,
            "description": "Any value is accepted. It is echoed (in the `X-Request-ID` "
            "response header and `error.request_id`) when it is 1 to 200 characters from `!` "
            "to `~`; any other value is replaced by a generated `req_<uuid>`.",
            "schema": {"type": "string"},
        },
        "wid": _path_id("wid", "The workspace id; it must be the credential's workspace."),
        "bid": _path_id("bid", "The backup id."),
        "id": _path_id("id", "The object's id."),
        "user_id": _path_id("id", "The member's user id."),
        "slug": {
            "name": "slug",
            "in": "path",
            "required": True,
            "description": "The role's slug. Not a well-formed slug: 400.",
            "schema": ref("RoleSlug"),
        },
        "run_id": _path_id("run_id", "The run id."),
        "aid": _path_id("aid", "The artifact id."),
        "key": {
            "name": "key",
            "in": "path",
            "required": True,
            "description": "The object key (segments of letters, digits, `.`, `_`, `-`).",
            "schema": {"type": "string"},
        },
    }


def _path_id(name: str, description: str) -> Json:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": f"{description} Not a UUID: 400.",
        "schema": UUID_SCHEMA,
    }


def _param(name: str) -> Json:
    return {"$ref": f"#/components/parameters/{name}"}


REQUEST_ID_HEADER = {"$ref": "#/components/headers/X-Request-ID"}


def _security_schemes() -> dict[str, Json]:
    return {
        BEARER: {
            "type": "http",
            "scheme": "bearer",
            "description": "`Authorization: Bearer <token>`: a person's session token "
            "(`bks_...`), an API key (`bkk_...`) or a worker token (`bkw_...`).",
        },
        IDP_BEARER: {
            "type": "http",
            "scheme": "bearer",
            "description": "An access token of the identity provider (from "
            "`POST /idp/token`); accepted only by `POST /v1/auth/sessions`.",
        },
    }


# --------------------------------------------------------------------------------------
# Error codes


ERROR_MEANINGS: dict[str, tuple[str, str]] = {
    "invalid_request": ("Malformed request.", "unknown field: colour"),
    "unauthenticated": (
        "No bearer credential, or an invalid, expired or revoked one.",
        "missing, invalid, expired or revoked credential",
    ),
    "forbidden": (
        "Authenticated but not permitted: a missing permission (the message names it), no "
        "workspace selected, or a machine credential doing what only a person may.",
        "missing permission backups:write",
    ),
    "wrong_workspace": (
        "A person's credential is scoped to another workspace they belong to.",
        "this credential is scoped to another workspace; switch workspace first",
    ),
    "not_found": (
        "No such object in the caller's workspace (another workspace's objects look the same).",
        "backup not found",
    ),
    "conflict": ("The artifact is already deleted.", "artifact already deleted"),
    "quota_exceeded": (
        "A limit is reached; the message names the resource and the limit.",
        "quota exceeded: backups_per_workspace is limited to 100",
    ),
    "retention_immutable": (
        "A different retention policy after one was set.",
        "retention policy is write-once and is already set to another value",
    ),
    "name_taken": (
        "Duplicate backup name (case-insensitive), role slug or registered email.",
        "a backup named 'nightly' already exists",
    ),
    "invalid_state": (
        "The object's state forbids the action.",
        "backup is paused: resume it first",
    ),
    "billing_restricted": (
        "The workspace's billing state refuses the write; the message names the state.",
        "workspace billing state is blocked: configuration changes are refused",
    ),
    "last_admin": ("The last admin cannot be removed or demoted.", "the last admin cannot leave"),
    "idempotency_conflict": (
        "An `Idempotency-Key` reused with a different request.",
        "this Idempotency-Key was already used with a different request",
    ),
    "artifact_locked": (
        "An artifact is inside its `lock_for` window.",
        "artifact is locked until 2031-01-01T00:00:00.000Z",
    ),
    "last_artifact": ("The only artifact left for its backup.", "last artifact of the backup"),
    "not_in_our_storage": (
        "The artifact was delivered only to the customer's own bucket.",
        "artifact is only in the customer's storage",
    ),
    "artifact_missing": (
        "`confirm` found an announced artifact absent or different in storage.",
        "artifact db.dump is missing from storage",
    ),
    "validation_failed": (
        "A well-formed value the rules refuse (kind rules of a backup and the like).",
        "schedule is refused on a manual backup",
    ),
    "lock_exceeds_expiry": (
        "`lock_for` longer than `expire_after`.",
        "lock_for must not be longer than expire_after",
    ),
    "rate_limited": (
        "Too many failed attempts; retry after the `Retry-After` seconds.",
        "too many failed attempts for this email; wait and retry",
    ),
    "internal": (
        "Unhandled server failure; retry with backoff.",
        "internal error; try again later",
    ),
    "upstream_unavailable": (
        "A dependency (database, identity provider, billing, storage) failed; usually "
        "transient, retry with backoff.",
        "object storage is unavailable; try again later",
    ),
}

STATUS_MEANINGS = {
    400: "Malformed request",
    401: "Missing, invalid or revoked credential",
    403: "Authenticated but not permitted",
    404: "Not found",
    409: "Conflict",
    422: "Unacceptable values",
    429: "Too many failed attempts",
    500: "Internal error",
    502: "Upstream unavailable",
}

OAUTH_ERRORS: dict[str, str] = {
    "invalid_request": "A parameter is missing or repeated, or the body is not a URL-encoded form.",
    "unsupported_grant_type": f"`grant_type` is not `{DEVICE_CODE_GRANT}`.",
    "invalid_grant": "Unknown device code (or another client's), or one already used.",
    "authorization_pending": "The person has not decided yet; poll again after `interval`.",
    "slow_down": "Polled sooner than `interval` after the previous poll; the interval grows "
    "by 5 seconds.",
    "expired_token": "The device code expired (after 10 minutes); start again.",
    "access_denied": "The person denied the request (or too many wrong passwords).",
}

Reasons = dict[str, list[str]]

UNAUTHENTICATED: Reasons = {
    "unauthenticated": ["no bearer credential, or an invalid, expired or revoked one"]
}
NO_WORKSPACE: Reasons = {
    "forbidden": ["the credential is scoped to no workspace (`select a workspace first`)"]
}
IN_WORKSPACE: Reasons = {
    "wrong_workspace": ["a person's credential is scoped to another workspace of theirs"],
    "not_found": ["no such workspace, or one the caller does not belong to (indistinguishable)"],
}
JSON_BODY: Reasons = {
    "invalid_request": [
        "`Content-Type` is not `application/json`, the body is not a JSON object, a field "
        "is unknown or missing, a value has the wrong JSON type or is out of range, or the "
        f"body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB"
    ]
}
OPTIONAL_BODY: Reasons = {
    "invalid_request": [
        "a body is sent that is not `{}`, or not with `Content-Type: application/json`"
    ]
}
PAGE: Reasons = {
    "invalid_request": [f"`limit` is not an integer from 1 to {MAX_LIMIT}, or `cursor` is bad"]
}
IDEMPOTENT: Reasons = {
    "invalid_request": [f"`Idempotency-Key` is longer than {MAX_KEY_LENGTH} characters"],
    "idempotency_conflict": ["the `Idempotency-Key` was used with a different body"],
}
HUMAN_ONLY: Reasons = {"forbidden": ["a machine credential (API key or worker) called it"]}
INTERNAL: Reasons = {"internal": ["an unhandled failure"]}
UPSTREAM: Reasons = {"upstream_unavailable": ["the database or another dependency failed"]}
BILLING: Reasons = {
    "billing_restricted": [
        "the workspace's billing state (`blocked`) refuses configuration changes"
    ]
}


def permission(*slugs: Permission) -> Reasons:
    """Refusal for a missing permission."""
    names = " or ".join(f"`{slug.value}`" for slug in slugs)
    return {"forbidden": [f"the credential lacks {names} (`missing permission {slugs[0].value}`)"]}


def path_id(name: str) -> Reasons:
    """Refusal for a malformed path id."""
    return {"invalid_request": [f"`{name}` in the path is not a UUID"]}


def reason(code: str, text: str) -> Reasons:
    """One code with one reason."""
    return {code: [text]}


def merge(*groups: Reasons) -> Reasons:
    """The reasons of every group, per code, in order."""
    result: Reasons = {}
    for group in groups:
        for code, reasons in group.items():
            result.setdefault(code, [])
            result[code].extend(text for text in reasons if text not in result[code])
    return result


# --------------------------------------------------------------------------------------
# Operations


class Auth:
    """How an operation authenticates."""

    NONE = "none"
    BEARER = "bearer"
    IDP = "idp"


@attrs.frozen
class Body:
    """A request body: media type, schema, and whether it may be omitted."""

    schema: Json
    media_type: str = "application/json"
    required: bool = True
    description: str | None = None


@attrs.frozen
class Success:
    """The successful response."""

    status: int
    description: str
    content: Mapping[str, Json] = attrs.field(factory=dict)


@attrs.frozen
class Operation:
    """One documented operation; ``errors`` holds every error code that can apply."""

    method: str
    path: str
    operation_id: str
    tag: str
    summary: str
    description: str
    success: Success
    errors: Reasons
    auth: str = Auth.BEARER
    permissions: tuple[Permission, ...] = ()
    parameters: tuple[Json, ...] = ()
    body: Body | None = None
    extra_responses: Mapping[str, Json] = attrs.field(factory=dict)
    html_errors: tuple[int, ...] = ()


def _json(schema_name: str) -> dict[str, Json]:
    return {"application/json": {"schema": ref(schema_name)}}


HTML: dict[str, Json] = {"text/html": {"schema": {"type": "string"}}}
FORM = "application/x-www-form-urlencoded"


def _system() -> list[Operation]:
    return [
        Operation(
            "GET",
            "/healthz",
            "getHealth",
            "System",
            "Liveness",
            "200 while the process runs. No authentication.",
            Success(200, "The process is running.", _json("Health")),
            INTERNAL,
            auth=Auth.NONE,
        ),
        Operation(
            "GET",
            "/readyz",
            "getReadiness",
            "System",
            "Readiness",
            "200 when the database and object storage answer, otherwise 503 with the same "
            "shape. No authentication.",
            Success(200, "Ready.", _json("Readiness")),
            INTERNAL,
            auth=Auth.NONE,
            extra_responses={
                "503": {
                    "description": "Not ready: a check is `unavailable`.",
                    "headers": {"X-Request-ID": REQUEST_ID_HEADER},
                    "content": _json("Readiness"),
                }
            },
        ),
        Operation(
            "GET",
            "/v1/permissions",
            "listPermissions",
            "Access",
            "The permission catalog",
            "Every permission slug with its description. Any credential; no workspace and "
            "no permission needed. Always one page.",
            Success(200, "The catalog.", _json("PermissionList")),
            merge(UNAUTHENTICATED, INTERNAL, UPSTREAM),
        ),
        Operation(
            "GET",
            "/v1/me",
            "getMe",
            "Access",
            "Who am I",
            "The caller's principal, its workspace and its permissions. No permission needed.",
            Success(200, "The caller.", _json("Me")),
            merge(UNAUTHENTICATED, INTERNAL, UPSTREAM),
        ),
        Operation(
            "GET",
            "/v1/auth/cli/config",
            "getCliConfig",
            "Access",
            "Device-code sign-in configuration",
            "What the command-line client needs to sign a person in with the OAuth 2.0 "
            "device authorization grant. No authentication.",
            Success(200, "The configuration.", _json("CliConfig")),
            INTERNAL,
            auth=Auth.NONE,
        ),
        Operation(
            "POST",
            "/v1/auth/sessions",
            "createSession",
            "Access",
            "Sign in",
            "Exchange an identity provider access token (the bearer of this request, from "
            "`POST /idp/token`) for a session scoped to no workspace.",
            Success(201, "The new session; its token is shown only here.", _json("Session")),
            merge(OPTIONAL_BODY, IDEMPOTENT, UNAUTHENTICATED, INTERNAL, UPSTREAM),
            auth=Auth.IDP,
            parameters=(_param("Idempotency-Key"),),
            body=Body(ref("SessionCreate"), required=False),
        ),
        Operation(
            "POST",
            "/v1/auth/switch",
            "switchWorkspace",
            "Access",
            "Switch workspace",
            "A new session scoped to `workspace_id`; the session used for this request is "
            "revoked (a failed switch revokes nothing). A person's session only.",
            Success(201, "The new session; its token is shown only here.", _json("Session")),
            merge(
                JSON_BODY,
                IDEMPOTENT,
                UNAUTHENTICATED,
                reason("forbidden", "a machine credential called it"),
                reason("not_found", "the caller is not a member of that workspace"),
                INTERNAL,
                UPSTREAM,
            ),
            parameters=(_param("Idempotency-Key"),),
            body=Body(ref("SwitchWorkspace")),
        ),
        Operation(
            "DELETE",
            "/v1/auth/sessions/current",
            "deleteCurrentSession",
            "Access",
            "Sign out",
            "Revoke the session used for this request (and only that one).",
            Success(204, "Signed out."),
            merge(
                UNAUTHENTICATED,
                reason("forbidden", "a machine credential called it; revoke keys instead"),
                INTERNAL,
                UPSTREAM,
            ),
        ),
    ]


def _workspaces() -> list[Operation]:
    wid = _param("wid")
    read = (Permission.WORKSPACES_READ,)
    write = (Permission.WORKSPACES_WRITE,)
    scoped = merge(UNAUTHENTICATED, path_id("wid"), NO_WORKSPACE, IN_WORKSPACE)
    return [
        Operation(
            "GET",
            "/v1/workspaces",
            "listWorkspaces",
            "Workspaces",
            "List my workspaces",
            "The caller's memberships, newest workspace first. A person only; no permission check.",
            Success(200, "One page of memberships.", _json("MemberWorkspaceList")),
            merge(PAGE, UNAUTHENTICATED, HUMAN_ONLY, INTERNAL, UPSTREAM),
            parameters=(_param("limit"), _param("cursor")),
        ),
        Operation(
            "POST",
            "/v1/workspaces",
            "createWorkspace",
            "Workspaces",
            "Create a workspace",
            "Provisions an organization, a customer record and a storage namespace "
            "(all-or-nothing); the creator becomes `admin`; the workspace starts in billing "
            f"state `trial`. A person only, no permission check; at most "
            f"{WORKSPACES_PER_USER} workspaces per person.",
            Success(201, "The new workspace.", _json("Workspace")),
            merge(
                JSON_BODY,
                IDEMPOTENT,
                UNAUTHENTICATED,
                HUMAN_ONLY,
                reason(
                    "quota_exceeded",
                    f"the person already created {WORKSPACES_PER_USER} workspaces "
                    "(`workspaces_per_user`)",
                ),
                INTERNAL,
                reason(
                    "upstream_unavailable",
                    "the identity provider, billing or object storage failed; nothing is "
                    "left behind",
                ),
                UPSTREAM,
            ),
            parameters=(_param("Idempotency-Key"),),
            body=Body(ref("WorkspaceCreate")),
        ),
        Operation(
            "GET",
            "/v1/workspaces/{wid}",
            "getWorkspace",
            "Workspaces",
            "Read a workspace",
            "One workspace.",
            Success(200, "The workspace.", _json("Workspace")),
            merge(scoped, permission(*read), INTERNAL, UPSTREAM),
            permissions=read,
            parameters=(wid,),
        ),
        Operation(
            "PATCH",
            "/v1/workspaces/{wid}",
            "updateWorkspace",
            "Workspaces",
            "Rename a workspace",
            "Change the workspace's name.",
            Success(200, "The updated workspace.", _json("Workspace")),
            merge(scoped, permission(*write), JSON_BODY, BILLING, INTERNAL, UPSTREAM),
            permissions=write,
            parameters=(wid,),
            body=Body(ref("WorkspaceUpdate")),
        ),
        Operation(
            "DELETE",
            "/v1/workspaces/{wid}",
            "deleteWorkspace",
            "Workspaces",
            "Delete a workspace",
            "Removes the workspace and its records, its audit trail included; irreversible. "
            "Its sessions, API keys and workers stop working. Allowed in every billing "
            "state. Artifacts already in the customer's own buckets stay there.",
            Success(204, "Deleted."),
            merge(
                scoped,
                permission(*write),
                reason(
                    "artifact_locked",
                    "an artifact in service storage is inside its lock window",
                ),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=write,
            parameters=(wid,),
        ),
        Operation(
            "GET",
            "/v1/workspaces/{wid}/quotas",
            "listQuotas",
            "Workspaces",
            "Quotas",
            "Every quota resource's effective limit (0 means unlimited) and current usage. "
            "Always one page.",
            Success(200, "The quotas.", _json("QuotaList")),
            merge(scoped, permission(*read), INTERNAL, UPSTREAM),
            permissions=read,
            parameters=(wid,),
        ),
        Operation(
            "GET",
            "/v1/workspaces/{wid}/audit",
            "listAuditEvents",
            "Workspaces",
            "Audit trail",
            "The workspace's audit events, newest first: every mutation and every mutation "
            "refused for a missing permission (`outcome: denied`).",
            Success(200, "One page of events.", _json("AuditEventList")),
            merge(
                scoped,
                permission(Permission.AUDIT_READ),
                PAGE,
                reason(
                    "invalid_request",
                    "`actor_id` is not a UUID, or `since` is not an RFC 3339 timestamp "
                    "with a time zone",
                ),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=(Permission.AUDIT_READ,),
            parameters=(
                wid,
                _param("limit"),
                _param("cursor"),
                {
                    "name": "action",
                    "in": "query",
                    "required": False,
                    "description": "Only events of this action, e.g. `backup.update`.",
                    "schema": {"type": "string"},
                },
                {
                    "name": "actor_id",
                    "in": "query",
                    "required": False,
                    "description": "Only events of this actor.",
                    "schema": UUID_SCHEMA,
                },
                {
                    "name": "since",
                    "in": "query",
                    "required": False,
                    "description": "Only events at or after this RFC 3339 timestamp (with a "
                    "time zone; `Z` for UTC).",
                    "schema": {"type": "string", "format": "date-time"},
                },
            ),
        ),
    ]


def _backups() -> list[Operation]:
    wid, bid = _param("wid"), _param("bid")
    read = (Permission.BACKUPS_READ,)
    write = (Permission.BACKUPS_WRITE,)
    in_workspace = merge(UNAUTHENTICATED, path_id("wid"), NO_WORKSPACE, IN_WORKSPACE)
    one = merge(
        UNAUTHENTICATED,
        path_id("bid"),
        NO_WORKSPACE,
        reason("not_found", "no such backup in the caller's workspace"),
    )
    return [
        Operation(
            "POST",
            "/v1/workspaces/{wid}/backups",
            "createBackup",
            "Backups",
            "Create a backup",
            "Reserves a backup in state `draft` with a name and a kind (immutable).",
            Success(201, "The new backup.", _json("Backup")),
            merge(
                in_workspace,
                permission(*write),
                JSON_BODY,
                reason("invalid_request", "`kind` is not one of the kinds"),
                IDEMPOTENT,
                BILLING,
                reason("quota_exceeded", "`backups_per_workspace` is reached"),
                reason("name_taken", "a backup of this name (case-insensitive) exists"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=write,
            parameters=(wid, _param("Idempotency-Key")),
            body=Body(ref("BackupCreate")),
        ),
        Operation(
            "GET",
            "/v1/workspaces/{wid}/backups",
            "listBackups",
            "Backups",
            "List backups",
            "The workspace's backups, newest first.",
            Success(200, "One page of backups.", _json("BackupList")),
            merge(in_workspace, permission(*read), PAGE, INTERNAL, UPSTREAM),
            permissions=read,
            parameters=(wid, _param("limit"), _param("cursor")),
        ),
        Operation(
            "GET",
            "/v1/backups/{bid}",
            "getBackup",
            "Backups",
            "Read a backup",
            "One backup of the caller's workspace.",
            Success(200, "The backup.", _json("Backup")),
            merge(one, permission(*read), INTERNAL, UPSTREAM),
            permissions=read,
            parameters=(bid,),
        ),
        Operation(
            "PATCH",
            "/v1/backups/{bid}",
            "updateBackup",
            "Backups",
            "Change a backup",
            "Supplies configuration; the backup becomes `active` in the PATCH that completes "
            "its kind's configuration. There is no `kind` field.",
            Success(200, "The whole updated backup.", _json("Backup")),
            merge(
                one,
                permission(*write),
                JSON_BODY,
                reason(
                    "invalid_request",
                    "`kind` or another unknown field, a bad cron expression or time zone, a "
                    "duration with months or years, an `endpoint` that is not an http(s) URL, "
                    "`credentials` or `destination_credentials` of no known shape (a missing "
                    "or unknown key)",
                ),
                reason(
                    "validation_failed",
                    "a kind rule: `worker_id` on a non-local backup or naming no worker of "
                    "this workspace, `source` or `credentials` on a local or manual backup, "
                    "`schedule` on a manual backup, a source type not offered for the kind, "
                    "credentials of the other source type's shape",
                ),
                BILLING,
                reason("name_taken", "another backup has this name (case-insensitive)"),
                reason("retention_immutable", "a different retention policy is already set"),
                reason("lock_exceeds_expiry", "`lock_for` is longer than `expire_after`"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=write,
            parameters=(bid,),
            body=Body(ref("BackupUpdate")),
        ),
        Operation(
            "DELETE",
            "/v1/backups/{bid}",
            "deleteBackup",
            "Backups",
            "Delete a backup",
            "Deletes the backup; refused while any of its artifacts is locked.",
            Success(204, "Deleted."),
            merge(
                one,
                permission(*write),
                BILLING,
                reason("artifact_locked", "one of its artifacts is inside its lock window"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=write,
            parameters=(bid,),
        ),
        *(
            Operation(
                "POST",
                f"/v1/backups/{{bid}}/{action}",
                f"{action}Backup",
                "Backups",
                f"{action.capitalize()} a backup",
                description,
                Success(200, "The backup.", _json("Backup")),
                merge(one, permission(*write), OPTIONAL_BODY, BILLING, INTERNAL, UPSTREAM),
                permissions=write,
                parameters=(bid,),
                body=Body(ref("EmptyBody"), required=False),
            )
            for action, description in (
                (
                    "pause",
                    "Stop scheduling the backup; it keeps its `state`. Idempotent; allowed "
                    "on a draft.",
                ),
                ("resume", "Resume scheduling the backup. Idempotent."),
            )
        ),
    ]


def _members() -> list[Operation]:
    wid, uid, slug = _param("wid"), _param("user_id"), _param("slug")
    scoped = merge(UNAUTHENTICATED, path_id("wid"), NO_WORKSPACE, IN_WORKSPACE)
    bad_slug = reason("invalid_request", "`slug` in the path is not a well-formed role slug")
    members_read, members_write = (Permission.MEMBERS_READ,), (Permission.MEMBERS_WRITE,)
    roles_read, roles_write = (Permission.ROLES_READ,), (Permission.ROLES_WRITE,)
    no_member = reason("not_found", "no such member of the workspace")
    no_role = reason("not_found", "no such role in the workspace")
    above = reason(
        "forbidden",
        "the new role, or the member's current role, holds a permission the caller lacks",
    )
    builtin = reason("invalid_state", "the role is built-in (`admin`, `member`, `viewer`)")
    return [
        Operation(
            "GET",
            "/v1/workspaces/{wid}/members",
            "listMembers",
            "Members",
            "List members",
            "The workspace's members, newest first by joining time. Needs `members:read`.",
            Success(200, "One page of members.", _json("MemberList")),
            merge(scoped, permission(*members_read), PAGE, INTERNAL, UPSTREAM),
            permissions=members_read,
            parameters=(wid, _param("limit"), _param("cursor")),
        ),
        Operation(
            "PATCH",
            "/v1/workspaces/{wid}/members/{id}",
            "updateMember",
            "Members",
            "Change a member's role",
            "Gives the member another role (built-in or custom). Needs `members:write`; the "
            "caller must hold every permission of the new role and of the member's current "
            "one. The last admin cannot be demoted.",
            Success(200, "The member.", _json("Member")),
            merge(
                scoped,
                path_id("id"),
                permission(*members_write),
                JSON_BODY,
                reason("invalid_request", "`role` is not a well-formed role slug"),
                no_member,
                reason("validation_failed", "the role does not exist in the workspace"),
                above,
                BILLING,
                reason("last_admin", "the member is the last admin"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=members_write,
            parameters=(wid, uid),
            body=Body(ref("MemberUpdate")),
        ),
        Operation(
            "DELETE",
            "/v1/workspaces/{wid}/members/{id}",
            "deleteMember",
            "Members",
            "Remove a member",
            "Ends the membership; the person's sessions scoped to the workspace stop working. "
            "Needs `members:write`; the caller must hold every permission of the member's "
            "role. The last admin cannot be removed.",
            Success(204, "Removed."),
            merge(
                scoped,
                path_id("id"),
                permission(*members_write),
                OPTIONAL_BODY,
                no_member,
                above,
                BILLING,
                reason("last_admin", "the member is the last admin"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=members_write,
            parameters=(wid, uid),
        ),
        Operation(
            "GET",
            "/v1/workspaces/{wid}/roles",
            "listRoles",
            "Members",
            "List roles",
            "Built-in roles, then the workspace's custom roles by slug, a page at a time. "
            "Needs `roles:read`.",
            Success(200, "One page of roles.", _json("RoleList")),
            merge(scoped, permission(*roles_read), PAGE, INTERNAL, UPSTREAM),
            permissions=roles_read,
            parameters=(wid, _param("limit"), _param("cursor")),
        ),
        Operation(
            "POST",
            "/v1/workspaces/{wid}/roles",
            "createRole",
            "Members",
            "Create a custom role",
            "A named set of permissions, each of which the caller must hold. Needs `roles:write`.",
            Success(201, "The new role.", _json("Role")),
            merge(
                scoped,
                permission(*roles_write),
                reason("forbidden", "a permission of the role is not the caller's own"),
                JSON_BODY,
                reason("invalid_request", "`slug` is not a well-formed role slug; bad `name`"),
                IDEMPOTENT,
                reason("validation_failed", "a permission outside the catalog"),
                BILLING,
                reason("name_taken", "the workspace has a role with this slug (built-in too)"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=roles_write,
            parameters=(wid, _param("Idempotency-Key")),
            body=Body(ref("RoleCreate")),
        ),
        Operation(
            "GET",
            "/v1/workspaces/{wid}/roles/{slug}",
            "getRole",
            "Members",
            "Read a role",
            "One built-in or custom role. Needs `roles:read`.",
            Success(200, "The role.", _json("Role")),
            merge(scoped, bad_slug, permission(*roles_read), no_role, INTERNAL, UPSTREAM),
            permissions=roles_read,
            parameters=(wid, slug),
        ),
        Operation(
            "PATCH",
            "/v1/workspaces/{wid}/roles/{slug}",
            "updateRole",
            "Members",
            "Change a custom role",
            "Rename it or replace its permissions (each of which the caller must hold). "
            "Members holding it get the new permissions on their next request. Needs "
            "`roles:write`.",
            Success(200, "The role.", _json("Role")),
            merge(
                scoped,
                bad_slug,
                permission(*roles_write),
                reason(
                    "forbidden", "a permission of the role, old or new, is not the caller's own"
                ),
                JSON_BODY,
                no_role,
                reason("validation_failed", "a permission outside the catalog"),
                builtin,
                BILLING,
                INTERNAL,
                UPSTREAM,
            ),
            permissions=roles_write,
            parameters=(wid, slug),
            body=Body(ref("RoleUpdate")),
        ),
        Operation(
            "DELETE",
            "/v1/workspaces/{wid}/roles/{slug}",
            "deleteRole",
            "Members",
            "Delete a custom role",
            "Refused while members or pending invitations hold it. Needs `roles:write` and "
            "every permission of the role.",
            Success(204, "Deleted."),
            merge(
                scoped,
                bad_slug,
                permission(*roles_write),
                reason("forbidden", "the role holds a permission the caller lacks"),
                OPTIONAL_BODY,
                no_role,
                builtin,
                reason("invalid_state", "members or pending invitations hold the role"),
                BILLING,
                INTERNAL,
                UPSTREAM,
            ),
            permissions=roles_write,
            parameters=(wid, slug),
        ),
    ]


def _invitations() -> list[Operation]:
    wid = _param("wid")
    scoped = merge(UNAUTHENTICATED, path_id("wid"), NO_WORKSPACE, IN_WORKSPACE)
    read, write = (Permission.INVITATIONS_READ,), (Permission.INVITATIONS_WRITE,)
    return [
        Operation(
            "POST",
            "/v1/workspaces/{wid}/invitations",
            "createInvitation",
            "Members",
            "Invite a person",
            "Invites an email address with a role whose every permission the caller holds; "
            "the invitation is delivered by mail and is usable once, for seven days. "
            "Members plus pending invitations count against `members_per_workspace`. "
            "Needs `invitations:write`.",
            Success(201, "The invitation.", _json("Invitation")),
            merge(
                scoped,
                permission(*write),
                reason("forbidden", "the role holds a permission the caller lacks"),
                JSON_BODY,
                reason("invalid_request", "`email` is not an email address; bad `role` slug"),
                IDEMPOTENT,
                reason("validation_failed", "the role does not exist in the workspace"),
                BILLING,
                reason("quota_exceeded", "`members_per_workspace` is reached"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=write,
            parameters=(wid, _param("Idempotency-Key")),
            body=Body(ref("InvitationCreate")),
        ),
        Operation(
            "GET",
            "/v1/workspaces/{wid}/invitations",
            "listInvitations",
            "Members",
            "List invitations",
            "The workspace's invitations, newest first. Needs `invitations:read`.",
            Success(200, "One page of invitations.", _json("InvitationList")),
            merge(scoped, permission(*read), PAGE, INTERNAL, UPSTREAM),
            permissions=read,
            parameters=(wid, _param("limit"), _param("cursor")),
        ),
        Operation(
            "POST",
            "/v1/invitations/{id}/accept",
            "acceptInvitation",
            "Members",
            "Accept an invitation",
            "Joins the invitation's workspace with its role. A signed-in person whose email "
            "is the invited one (case-insensitively); no workspace scope needed, no "
            "permission.",
            Success(200, "The new membership.", _json("Membership")),
            merge(
                UNAUTHENTICATED,
                path_id("id"),
                HUMAN_ONLY,
                OPTIONAL_BODY,
                reason(
                    "not_found",
                    "no such invitation, or one addressed to another email",
                ),
                BILLING,
                reason("quota_exceeded", "`members_per_workspace` is reached"),
                reason(
                    "invalid_state",
                    "the invitation is expired or already used, the person is already a "
                    "member, or its role no longer exists",
                ),
                INTERNAL,
                UPSTREAM,
            ),
            parameters=(_param("id"),),
            body=Body(ref("EmptyBody"), required=False),
        ),
    ]


NEW_RUN_BILLING: Reasons = {
    "billing_restricted": [
        "the workspace's billing state (`stopped` or `blocked`) refuses new runs"
    ]
}


def _runs() -> list[Operation]:
    upload = (Permission.ARTIFACTS_UPLOAD,)
    read = (Permission.BACKUPS_READ, Permission.RUNS_READ)
    trigger = (Permission.BACKUPS_WRITE, Permission.BACKUPS_TRIGGER)
    return [
        Operation(
            "POST",
            "/v1/runs",
            "startRun",
            "Runs and artifacts",
            "Start a manual run",
            "A manual backup's client starts a run (state `running`, trigger `manual`); it then "
            "asks for upload URLs and confirms. Local and cloud backups get their runs from "
            "`trigger` or the scheduler.",
            Success(201, "The new run.", _json("Run")),
            merge(
                UNAUTHENTICATED,
                NO_WORKSPACE,
                permission(*upload),
                JSON_BODY,
                IDEMPOTENT,
                reason("not_found", "no such backup in the caller's workspace"),
                reason("validation_failed", "the backup is not manual"),
                NEW_RUN_BILLING,
                reason("invalid_state", "the backup is a draft or paused"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=upload,
            parameters=(_param("Idempotency-Key"),),
            body=Body(ref("RunCreate")),
        ),
        Operation(
            "GET",
            "/v1/runs/{run_id}",
            "getRun",
            "Runs and artifacts",
            "Read a run",
            "One run of the caller's workspace.",
            Success(200, "The run.", _json("Run")),
            merge(
                UNAUTHENTICATED,
                path_id("run_id"),
                NO_WORKSPACE,
                permission(*read),
                reason("not_found", "no such run in the caller's workspace"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=read,
            parameters=(_param("run_id"),),
        ),
        Operation(
            "POST",
            "/v1/backups/{bid}/trigger",
            "triggerBackup",
            "Backups",
            "Trigger a backup",
            "Enqueues a run of an active, unpaused local or cloud backup (state `queued`, "
            "trigger `api`); its worker or the service takes it.",
            Success(202, "The queued run.", _json("Run")),
            merge(
                UNAUTHENTICATED,
                path_id("bid"),
                NO_WORKSPACE,
                permission(*trigger),
                OPTIONAL_BODY,
                IDEMPOTENT,
                reason("not_found", "no such backup in the caller's workspace"),
                reason("validation_failed", "the backup is manual (its client starts runs)"),
                NEW_RUN_BILLING,
                reason("invalid_state", "the backup is a draft or paused"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=trigger,
            parameters=(_param("bid"), _param("Idempotency-Key")),
            body=Body(ref("EmptyBody"), required=False),
        ),
    ]


def _machines() -> list[Operation]:
    one_id = _param("id")
    scoped = merge(UNAUTHENTICATED, NO_WORKSPACE)
    key_read, key_write = (Permission.API_KEYS_READ,), (Permission.API_KEYS_WRITE,)
    worker_read, worker_write = (Permission.WORKERS_READ,), (Permission.WORKERS_WRITE,)
    key_missing = reason("not_found", "no such API key in the caller's workspace")
    worker_missing = reason("not_found", "no such worker in the caller's workspace")
    name = reason("invalid_request", f"`name` is empty or longer than {MAX_NAME_LENGTH}")
    return [
        Operation(
            "POST",
            "/v1/api-keys",
            "createApiKey",
            "API keys",
            "Create an API key",
            "A machine credential of the caller's workspace with a fixed set of permissions, "
            "each of which the caller must hold itself. Needs `api_keys:write`. The token "
            "appears only in this response.",
            Success(201, "The new key with its token.", _json("ApiKeyWithToken")),
            merge(
                scoped,
                permission(*key_write),
                reason("forbidden", "a requested permission is not the caller's own"),
                JSON_BODY,
                name,
                reason(
                    "invalid_request",
                    "`expires_at` is not an RFC 3339 timestamp with a time zone, or its UTC "
                    "instant falls outside the years 0001-9999",
                ),
                IDEMPOTENT,
                reason(
                    "validation_failed",
                    "a permission outside the catalog, or `expires_at` not in the future",
                ),
                BILLING,
                reason("quota_exceeded", "`api_keys_per_workspace` is reached"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=key_write,
            parameters=(_param("Idempotency-Key"),),
            body=Body(ref("ApiKeyCreate")),
        ),
        Operation(
            "GET",
            "/v1/api-keys",
            "listApiKeys",
            "API keys",
            "List API keys",
            "The workspace's API keys, newest first, without tokens. Needs `api_keys:read`.",
            Success(200, "One page of keys.", _json("ApiKeyList")),
            merge(scoped, permission(*key_read), PAGE, INTERNAL, UPSTREAM),
            permissions=key_read,
            parameters=(_param("limit"), _param("cursor")),
        ),
        Operation(
            "GET",
            "/v1/api-keys/{id}",
            "getApiKey",
            "API keys",
            "Read an API key",
            "One API key of the caller's workspace. Needs `api_keys:read`.",
            Success(200, "The key.", _json("ApiKey")),
            merge(scoped, path_id("id"), permission(*key_read), key_missing, INTERNAL, UPSTREAM),
            permissions=key_read,
            parameters=(one_id,),
        ),
        Operation(
            "DELETE",
            "/v1/api-keys/{id}",
            "deleteApiKey",
            "API keys",
            "Revoke an API key",
            "Deletes the key; it answers 401 from the next request on. Needs `api_keys:write`.",
            Success(204, "Revoked."),
            merge(
                scoped,
                path_id("id"),
                permission(*key_write),
                OPTIONAL_BODY,
                key_missing,
                BILLING,
                INTERNAL,
                UPSTREAM,
            ),
            permissions=key_write,
            parameters=(one_id,),
        ),
        Operation(
            "POST",
            "/v1/workers",
            "createWorker",
            "Workers",
            "Register a worker",
            "A machine executor of local backups in the caller's workspace. Its credential "
            "holds exactly `backups:read`, `runs:read`, `artifacts:upload` and "
            "`artifacts:confirm`, limited to the backups assigned to it. Needs "
            "`workers:write`. The token appears only in this response.",
            Success(201, "The new worker with its token.", _json("WorkerWithToken")),
            merge(
                scoped,
                permission(*worker_write),
                JSON_BODY,
                name,
                IDEMPOTENT,
                BILLING,
                reason("quota_exceeded", "`workers_per_workspace` is reached"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=worker_write,
            parameters=(_param("Idempotency-Key"),),
            body=Body(ref("WorkerCreate")),
        ),
        Operation(
            "GET",
            "/v1/workers",
            "listWorkers",
            "Workers",
            "List workers",
            "The workspace's workers, newest first. Needs `workers:read`.",
            Success(200, "One page of workers.", _json("WorkerList")),
            merge(scoped, permission(*worker_read), PAGE, INTERNAL, UPSTREAM),
            permissions=worker_read,
            parameters=(_param("limit"), _param("cursor")),
        ),
        Operation(
            "GET",
            "/v1/workers/{id}",
            "getWorker",
            "Workers",
            "Read a worker",
            "One worker of the caller's workspace. Needs `workers:read`.",
            Success(200, "The worker.", _json("Worker")),
            merge(
                scoped, path_id("id"), permission(*worker_read), worker_missing, INTERNAL, UPSTREAM
            ),
            permissions=worker_read,
            parameters=(one_id,),
        ),
        Operation(
            "DELETE",
            "/v1/workers/{id}",
            "deleteWorker",
            "Workers",
            "Delete a worker",
            "Deletes the worker; its credential answers 401 from the next request on. Refused "
            "while backups are assigned to it. Needs `workers:write`.",
            Success(204, "Deleted."),
            merge(
                scoped,
                path_id("id"),
                permission(*worker_write),
                OPTIONAL_BODY,
                worker_missing,
                BILLING,
                reason("invalid_state", "backups are assigned to the worker"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=worker_write,
            parameters=(one_id,),
        ),
        Operation(
            "POST",
            "/v1/workers/{id}/rotate",
            "rotateWorker",
            "Workers",
            "Rotate a worker's credential",
            "A new token for the worker; the previous one answers 401 from the next request "
            "on. Needs `workers:write`.",
            Success(200, "The worker with its new token.", _json("WorkerWithToken")),
            merge(
                scoped,
                path_id("id"),
                permission(*worker_write),
                OPTIONAL_BODY,
                worker_missing,
                BILLING,
                INTERNAL,
                UPSTREAM,
            ),
            permissions=worker_write,
            parameters=(one_id,),
            body=Body(ref("EmptyBody"), required=False),
        ),
    ]


UPLOAD_BILLING: Reasons = {
    "billing_restricted": ["the workspace's billing state (`blocked`) refuses uploads"]
}
STORAGE_UPSTREAM: Reasons = {
    "upstream_unavailable": ["the database or object storage failed; nothing was recorded"]
}


def _artifacts() -> list[Operation]:
    run = merge(
        UNAUTHENTICATED,
        path_id("run_id"),
        NO_WORKSPACE,
        reason("not_found", "no such run in the caller's workspace"),
    )
    one = merge(
        UNAUTHENTICATED,
        path_id("aid"),
        NO_WORKSPACE,
        reason("not_found", "no such artifact in the caller's workspace"),
    )
    upload, confirm = (Permission.ARTIFACTS_UPLOAD,), (Permission.ARTIFACTS_CONFIRM,)
    read, download = (Permission.ARTIFACTS_READ,), (Permission.ARTIFACTS_DOWNLOAD,)
    delete = (Permission.ARTIFACTS_DELETE,)
    tag = "Runs and artifacts"
    return [
        Operation(
            "POST",
            "/v1/runs/{run_id}/upload-url",
            "requestUpload",
            tag,
            "Presign an artifact's upload",
            "Announces an artifact of the run (state `pending`) and presigns its upload: "
            "one PUT below the multipart threshold (`STRONGROOM_MULTIPART_THRESHOLD`, "
            "64 MiB by default), otherwise one PUT per 16 MiB part. URLs live 15 minutes. "
            "Asking again for the same name, size and sha256 gives the same artifact, fresh "
            "URLs and the parts already stored.",
            Success(201, "The upload plan.", _json("UploadPlan")),
            merge(
                run,
                permission(*upload),
                JSON_BODY,
                reason("invalid_request", "`size` out of range, `sha256` not 64 hex digits"),
                UPLOAD_BILLING,
                reason("quota_exceeded", "`storage_bytes` would be passed"),
                reason(
                    "invalid_state",
                    "the run is finished, or the name is announced with another size or sha256",
                ),
                INTERNAL,
                STORAGE_UPSTREAM,
            ),
            permissions=upload,
            parameters=(_param("run_id"),),
            body=Body(ref("UploadRequest")),
        ),
        Operation(
            "POST",
            "/v1/runs/{run_id}/confirm",
            "confirmRun",
            tag,
            "Confirm a run's artifacts",
            "Checks every announced artifact in storage (present, same size, same sha256) "
            "and joins multipart uploads; all become `available` (locked and expiring per "
            "the backup's retention) and the run `succeeded`, or nothing changes.",
            Success(200, "The succeeded run.", _json("Run")),
            merge(
                run,
                permission(*confirm),
                OPTIONAL_BODY,
                UPLOAD_BILLING,
                reason("invalid_state", "the run is finished"),
                reason("artifact_missing", "an announced artifact is absent or different"),
                INTERNAL,
                STORAGE_UPSTREAM,
            ),
            permissions=confirm,
            parameters=(_param("run_id"),),
            body=Body(ref("EmptyBody"), required=False),
        ),
        Operation(
            "GET",
            "/v1/workspaces/{wid}/artifacts",
            "listArtifacts",
            tag,
            "List artifacts",
            "The workspace's artifacts, newest first; deleted ones only with "
            "`?state=deleted`. Never refused for billing.",
            Success(200, "One page of artifacts.", _json("ArtifactList")),
            merge(
                UNAUTHENTICATED,
                path_id("wid"),
                NO_WORKSPACE,
                IN_WORKSPACE,
                permission(*read),
                PAGE,
                reason("invalid_request", "`state` is not `deleted`"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=read,
            parameters=(
                _param("wid"),
                _param("limit"),
                _param("cursor"),
                {
                    "name": "state",
                    "in": "query",
                    "required": False,
                    "description": "`deleted` lists only deleted artifacts.",
                    "schema": {"type": "string", "enum": ["deleted"]},
                },
            ),
        ),
        Operation(
            "POST",
            "/v1/artifacts/{aid}/download-url",
            "requestDownload",
            tag,
            "Presign an artifact's download",
            "A presigned GET (15 minutes) of an available artifact in service storage; "
            "the bytes come from storage. Never refused for billing.",
            Success(200, "The presigned download.", _json("Download")),
            merge(
                one,
                permission(*download),
                OPTIONAL_BODY,
                reason("conflict", "the artifact is deleted"),
                reason("not_in_our_storage", "the artifact went only to a customer bucket"),
                reason("invalid_state", "the artifact is not confirmed yet"),
                INTERNAL,
                UPSTREAM,
            ),
            permissions=download,
            parameters=(_param("aid"),),
            body=Body(ref("EmptyBody"), required=False),
        ),
        Operation(
            "DELETE",
            "/v1/artifacts/{aid}",
            "deleteArtifact",
            tag,
            "Delete an artifact",
            "Removes the object; the record stays as `deleted`. Precedence: already "
            "deleted, inside its lock, last of its backup.",
            Success(204, "Deleted."),
            merge(
                one,
                permission(*delete),
                BILLING,
                reason("conflict", "already deleted"),
                reason("artifact_locked", "inside its lock window (storage refuses too)"),
                reason("last_artifact", "the only available artifact of its backup"),
                INTERNAL,
                STORAGE_UPSTREAM,
            ),
            permissions=delete,
            parameters=(_param("aid"),),
        ),
    ]


def _storage() -> list[Operation]:
    refused = merge(
        reason(
            "invalid_request",
            "a malformed key, or a body of another size or sha256 than signed",
        ),
        reason("forbidden", "a signature that does not match, or an expired URL"),
        reason("not_found", "no such object or upload"),
        INTERNAL,
    )
    query = {
        "name": "signature",
        "in": "query",
        "required": True,
        "description": "With `expires`, `size`, `sha256`, `upload_id`, `part`: as presigned.",
        "schema": {"type": "string"},
    }
    return [
        Operation(
            "PUT",
            "/storage/{key}",
            "putObject",
            "Storage",
            "Upload to a presigned URL",
            "Local-disk storage only: the body is streamed to disk and checked against the "
            "signed size (and sha256); a locked object is never overwritten.",
            Success(200, "Stored.", _json("StoredResult")),
            merge(refused, reason("forbidden", "the object is locked")),
            auth=Auth.NONE,
            parameters=(_param("key"), query),
            body=Body({"type": "string", "format": "binary"}, "application/octet-stream"),
        ),
        Operation(
            "GET",
            "/storage/{key}",
            "getObject",
            "Storage",
            "Download from a presigned URL",
            "Local-disk storage only: the object's bytes, streamed.",
            Success(
                200,
                "The bytes.",
                {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
            ),
            refused,
            auth=Auth.NONE,
            parameters=(_param("key"), query),
        ),
    ]


def _idp() -> list[Operation]:
    nested = "Errors use the envelope of `/v1`."
    other_provider = reason(
        "not_found", "another identity provider is configured (every `/idp` route is 404)"
    )
    ignored = (
        "Unrecognised OAuth parameters (such as `scope`) are ignored, as RFC 6749 section 3.1 "
        "requires; the form schema lists the parameters this endpoint reads."
    )
    return [
        Operation(
            "POST",
            "/idp/signup",
            "idpSignup",
            "Identity provider",
            "Sign up",
            "Register a local account with the built-in identity provider. Enabled by "
            f"default in the embedded setup, otherwise 404. {nested}",
            Success(201, "The new account.", _json("SignupResult")),
            merge(
                reason(
                    "invalid_request",
                    "the body is not a URL-encoded form, a field is missing, unknown or "
                    "repeated, the email is not an email address, the password is not "
                    f"{MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters, or the "
                    "name is invalid",
                ),
                reason("not_found", "sign-up is off"),
                other_provider,
                reason("name_taken", "an account with this email exists"),
                INTERNAL,
                UPSTREAM,
            ),
            auth=Auth.NONE,
            body=Body(ref("SignupForm"), FORM),
        ),
        Operation(
            "POST",
            "/idp/device/code",
            "idpDeviceCode",
            "Identity provider",
            "Start a device authorization",
            "RFC 8628 section 3.1: issue a device code and a user code. The codes live 10 "
            f"minutes; poll `POST /idp/token` every `interval` seconds. {ignored} {nested}",
            Success(200, "The device authorization.", _json("DeviceAuthorization")),
            merge(
                reason(
                    "invalid_request",
                    "the body is not a URL-encoded form, or `client_id` is missing, blank, "
                    f"repeated or not `{CLIENT_ID}`",
                ),
                other_provider,
                INTERNAL,
                UPSTREAM,
            ),
            auth=Auth.NONE,
            body=Body(ref("DeviceCodeForm"), FORM),
        ),
        Operation(
            "GET",
            "/idp/device",
            "idpDevicePage",
            "Identity provider",
            "Device approval page",
            "An HTML page where a person signs in and approves or denies a user code; its "
            "form posts to `POST /idp/device`.",
            Success(200, "The page.", HTML),
            merge(other_provider, INTERNAL),
            auth=Auth.NONE,
            parameters=(
                {
                    "name": "user_code",
                    "in": "query",
                    "required": False,
                    "description": "Pre-fills the code (from `verification_uri_complete`).",
                    "schema": {"type": "string"},
                },
            ),
        ),
        Operation(
            "POST",
            "/idp/device",
            "idpDeviceDecision",
            "Identity provider",
            "Approve or deny a user code",
            "Signs the person in and records the decision. Answers an HTML page, or JSON "
            "when `Accept` prefers `application/json`. Failed attempts are limited per user "
            "code (5, then the code is dead: 400), per email and client address (10 per 15 "
            "minutes) and per client address (100 per 15 minutes): 429 with `Retry-After`.",
            Success(
                200,
                "The decision is recorded.",
                {**HTML, "application/json": {"schema": ref("DeviceDecision")}},
            ),
            merge(
                reason(
                    "invalid_request",
                    "wrong email or password, unknown or expired user code, a `decision` "
                    "other than `approve` or `deny`, or a body that is not a URL-encoded "
                    "form of exactly these fields",
                ),
                reason(
                    "rate_limited",
                    "too many failed attempts for this email from this address, or from "
                    "this address (`Retry-After` says when to try again)",
                ),
                other_provider,
                INTERNAL,
                UPSTREAM,
            ),
            auth=Auth.NONE,
            body=Body(ref("DeviceDecisionForm"), FORM),
            html_errors=(400, 429, 502),
        ),
        Operation(
            "POST",
            "/idp/token",
            "idpToken",
            "Identity provider",
            "Poll for an access token",
            "RFC 8628 section 3.4. Refusals use OAuth's own error format (status 400); a "
            f"failure of the server itself uses the envelope of `/v1`. {ignored} Replies "
            "carry `Cache-Control: no-store`.",
            Success(200, "The person approved: an access token.", _json("AccessToken")),
            merge(other_provider, INTERNAL, UPSTREAM),
            auth=Auth.NONE,
            body=Body(ref("TokenForm"), FORM),
            extra_responses={
                "400": {
                    "description": "OAuth error:\n\n"
                    + "\n".join(f"- `{code}`: {text}" for code, text in OAUTH_ERRORS.items()),
                    "headers": {"X-Request-ID": REQUEST_ID_HEADER},
                    "content": {
                        "application/json": {
                            "schema": ref("OAuthError"),
                            "examples": {
                                code: {
                                    "summary": text,
                                    "value": {"error": code, "error_description": text},
                                }
                                for code, text in OAUTH_ERRORS.items()
                            },
                        }
                    },
                }
            },
        ),
    ]


def _docs() -> list[Operation]:
    return [
        Operation(
            "GET",
            "/openapi.json",
            "getOpenApiDocument",
            "Documentation",
            "This OpenAPI document",
            "The OpenAPI 3.1 description of every operation. No authentication.",
            Success(
                200,
                "The document.",
                {"application/json": {"schema": {"type": "object"}}},
            ),
            INTERNAL,
            auth=Auth.NONE,
        ),
        Operation(
            "GET",
            "/docs",
            "getDocsPage",
            "Documentation",
            "API reference page",
            "This document as a self-contained HTML page. No authentication.",
            Success(200, "The page.", HTML),
            INTERNAL,
            auth=Auth.NONE,
        ),
    ]


def operations() -> list[Operation]:
    """Every operation of the API, in the order the reference shows them."""
    return [
        *_system(),
        *_workspaces(),
        *_members(),
        *_invitations(),
        *_backups(),
        *_machines(),
        *_runs(),
        *_artifacts(),
        *_storage(),
        *_idp(),
        *_docs(),
    ]


# --------------------------------------------------------------------------------------
# Assembly


def _error_responses(operation: Operation) -> dict[str, Json]:
    by_status: dict[int, list[str]] = {}
    for code in operation.errors:
        by_status.setdefault(STATUS_BY_CODE[code], []).append(code)
    responses: dict[str, Json] = {}
    for status in sorted(by_status):
        codes = by_status[status]
        lines = [f"- `{code}`: {'; '.join(operation.errors[code])}" for code in codes]
        examples = {
            code: {
                "summary": ERROR_MEANINGS[code][0],
                "value": {
                    "error": {
                        "code": code,
                        "message": ERROR_MEANINGS[code][1],
                        "request_id": "req_0b8f3f9e-4a51-4a8e-9c43-7c1f5b0f3f51",
                    }
                },
            }
            for code in codes
        }
        content: dict[str, Json] = {
            "application/json": {"schema": ref("Error"), "examples": examples}
        }
        if status in operation.html_errors:
            content = {**HTML, **content}
        responses[str(status)] = {
            "description": f"{STATUS_MEANINGS[status]}. Codes:\n\n" + "\n".join(lines),
            "headers": {"X-Request-ID": REQUEST_ID_HEADER},
            "content": content,
        }
    return responses


def _operation_object(operation: Operation) -> Json:
    slugs = [slug.value for slug in operation.permissions]
    if slugs:
        needs = "Requires permission " + " or ".join(f"`{slug}`" for slug in slugs) + "."
    elif operation.auth == Auth.NONE:
        needs = "No authentication."
    else:
        needs = "No permission needed."
    success: Json = {
        "description": operation.success.description,
        "headers": {"X-Request-ID": REQUEST_ID_HEADER},
    }
    if operation.success.content:
        success["content"] = dict(operation.success.content)
    responses: dict[str, Json] = {str(operation.success.status): success}
    responses.update(operation.extra_responses)
    responses.update(_error_responses(operation))
    result: Json = {
        "operationId": operation.operation_id,
        "tags": [operation.tag],
        "summary": operation.summary,
        "description": f"{operation.description}\n\n{needs}",
        "x-permissions": slugs,
        "security": {
            Auth.NONE: [],
            Auth.BEARER: [{BEARER: []}],
            Auth.IDP: [{IDP_BEARER: []}],
        }[operation.auth],
        "parameters": [*operation.parameters, _param("X-Request-ID")],
    }
    if operation.body is not None:
        body: Json = {
            "required": operation.body.required,
            "content": {operation.body.media_type: {"schema": operation.body.schema}},
        }
        if operation.body.description is not None:
            body["description"] = operation.body.description
        result["requestBody"] = body
    result["responses"] = dict(sorted(responses.items()))
    return result


INTRODUCTION = """\
The REST interface of Strongroom, a multi-tenant backup service. Everything under `/v1` \
needs `Authorization: Bearer <token>` except `GET /v1/auth/cli/config`.

- Bodies are JSON (`Content-Type: application/json`); unknown fields are refused with 400 \
`invalid_request`. Action bodies (`pause`, `resume`, sessions) are optional: none, or `{}`.
- Success: 201 for a POST that creates (it returns the resource), 200 for reads, PATCH and \
actions, 204 with no body for DELETE.
- Lists take `?limit=` (1 to 200, default 50) and `?cursor=`, return \
`{"data": [...], "next_cursor": string | null}`, newest first.
- Identifiers are UUIDs; timestamps are RFC 3339 in UTC with a `Z` suffix.
- Every response carries `X-Request-ID`; every failure is `{"error": {code, message, \
request_id}}` (codes under `x-error-codes`). A method a path does not allow: 405 \
`invalid_request`.
- Checks run in this order, the first failing wins: credential (401), malformed path id \
(400), no workspace selected (403), `{wid}` match (403 `wrong_workspace` / 404), missing \
permission (403), malformed body (400), object (404), kind rules (422), billing (409), \
quota (409), other 409/422.
"""


def build_document(server_url: str | None = None) -> Json:
    """The OpenAPI 3.1 document; ``server_url`` is the public base URL when configured."""
    paths: dict[str, Json] = {}
    for operation in operations():
        paths.setdefault(operation.path, {})[operation.method.lower()] = _operation_object(
            operation
        )
    document: Json = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Strongroom API",
            "version": _version(),
            "description": INTRODUCTION,
            "license": {"name": "Apache 2.0", "identifier": "Apache-2.0"},
        },
    }
    if server_url:
        document["servers"] = [{"url": server_url.rstrip("/")}]
    schemas = _schemas()
    schemas["EmptyBody"] = obj({}, closed=True, description="No body, or `{}`.")
    document.update(
        {
            "tags": [
                {"name": "System", "description": "Health and readiness (outside `/v1`)."},
                {"name": "Access", "description": "Signing in, workspaces scopes, who am I."},
                {"name": "Workspaces", "description": "Tenants, their quotas and audit trail."},
                {"name": "Members", "description": "Members and roles of a workspace."},
                {"name": "Backups", "description": "Backup configurations."},
                {
                    "name": "API keys",
                    "description": "Machine credentials of a workspace with fixed permissions.",
                },
                {"name": "Workers", "description": "Machine executors of local backups."},
                {
                    "name": "Runs and artifacts",
                    "description": "Runs of backups; artifact bytes move through presigned "
                    "URLs, never through the API.",
                },
                {
                    "name": "Identity provider",
                    "description": "The built-in identity provider (outside `/v1`): local "
                    "accounts and the OAuth 2.0 device authorization grant (RFC 8628).",
                },
                {
                    "name": "Storage",
                    "description": "The local-disk storage's presigned URLs (outside `/v1`).",
                },
                {"name": "Documentation", "description": "This reference."},
            ],
            "security": [{BEARER: []}],
            "paths": paths,
            "components": {
                "schemas": dict(sorted(schemas.items())),
                "parameters": _parameters(),
                "headers": {
                    "X-Request-ID": {
                        "description": "The request id: the client's own, echoed, or a "
                        "generated `req_<uuid>`; error bodies repeat it.",
                        "schema": {"type": "string"},
                    }
                },
                "securitySchemes": _security_schemes(),
            },
            "x-error-codes": [
                {"code": code, "status": status, "description": ERROR_MEANINGS[code][0]}
                for code, status in STATUS_BY_CODE.items()
            ],
        }
    )
    return document


def _version() -> str:
    try:
        return metadata.version("strongroom")
    except metadata.PackageNotFoundError:  # pragma: no cover - always installed
        return "0+unknown"


def document_for(app: Starlette) -> Json:
    """The document of ``app``, built on first use and cached in its state."""
    document: Json | None = getattr(app.state, _STATE_KEY, None)
    if document is None:
        document = build_document(getattr(app.state, "public_url", None))
        setattr(app.state, _STATE_KEY, document)
    return document
