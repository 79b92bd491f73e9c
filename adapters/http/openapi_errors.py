"""The error responses of each operation in the OpenAPI document: the refusals its shape
implies (credential, path ids, workspace, permission, body, pagination, idempotency,
``If-Match``, billing, the object it names), then those its route declares."""

from __future__ import annotations

from strongroom.adapters.webkit.context import MAX_BODY_BYTES
from strongroom.adapters.webkit.declare import (
    HTML,
    REQUEST_ID_HEADER,
    Auth,
    Json,
    Operation,
    ref,
)
from strongroom.adapters.webkit.errors import ERROR_CODES, STATUS_BY_CODE
from strongroom.domain.pagination import MAX_LIMIT
from strongroom.domain.permissions import Permission
from strongroom.ports.driving.idempotency import MAX_KEY_LENGTH

STATUS_MEANINGS = {
    400: "Malformed request",
    401: "Missing, invalid or revoked credential",
    403: "Authenticated but not permitted",
    404: "Not found",
    409: "Conflict",
    412: "Precondition failed",
    422: "Unacceptable values",
    429: "Too many failed attempts",
    500: "Internal error",
    502: "Upstream unavailable",
}

Reasons = dict[str, list[str]]

RETRY_AFTER_HEADER: Json = {
    "description": "Seconds to wait before retrying.",
    "schema": {"type": "integer", "minimum": 1},
}


def reason(code: str, text: str) -> Reasons:
    """One code with one reason."""
    return {code: [text]}


UNAUTHENTICATED = reason(
    "unauthenticated", "no bearer credential, or an invalid, expired or revoked one"
)
NO_WORKSPACE = reason(
    "forbidden", "the credential is scoped to no workspace (`select a workspace first`)"
)
IN_WORKSPACE: Reasons = {
    "wrong_workspace": ["a person's credential is scoped to another workspace of theirs"],
    "not_found": ["no such workspace, or one the caller does not belong to (indistinguishable)"],
}
JSON_BODY = reason(
    "invalid_request",
    "`Content-Type` is not `application/json`, the body is not a JSON object, a field is "
    "unknown or missing, a value has the wrong JSON type or is out of range, or the body is "
    f"larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB",
)
OPTIONAL_BODY = reason(
    "invalid_request",
    "a body is sent that is not `{}`, or not with `Content-Type: application/json`",
)
PAGE = reason(
    "invalid_request", f"`limit` is not an integer from 1 to {MAX_LIMIT}, or `cursor` is bad"
)
IDEMPOTENT: Reasons = {
    "invalid_request": [f"`Idempotency-Key` is longer than {MAX_KEY_LENGTH} characters"],
    "idempotency_conflict": ["the `Idempotency-Key` was used with a different body"],
}
HUMAN_ONLY = reason("forbidden", "a machine credential (API key or worker) called it")
INTERNAL = reason("internal", "an unhandled failure")
CONDITIONAL: Reasons = {
    "invalid_request": ["`If-Match` is not `*` or a list of entity tags"],
    "precondition_failed": ["`If-Match` names no tag of the object as it stands"],
}
UPSTREAM = reason("upstream_unavailable", "the database or another dependency failed")
REFUSES = "the workspace's billing state ({}) refuses {}"
BILLING_BY_GATE: dict[str, Reasons] = {
    gate: reason("billing_restricted", REFUSES.format(states, what))
    for gate, states, what in (
        ("config", "`blocked`", "configuration changes"),
        ("runs", "`stopped` or `blocked`", "new runs"),
        ("uploads", "`blocked`", "uploads"),
    )
}


def permission(*slugs: Permission) -> Reasons:
    """Refusal for a missing permission."""
    names = " or ".join(f"`{slug.value}`" for slug in slugs)
    return {"forbidden": [f"the credential lacks {names} (`missing permission {slugs[0].value}`)"]}


def path_id(name: str) -> Reasons:
    """Refusal for a malformed path id (a role's ``slug`` is a slug, not a UUID)."""
    if name == "slug":
        return {"invalid_request": ["`slug` in the path is not a well-formed role slug"]}
    return {"invalid_request": [f"`{name}` in the path is not a UUID"]}


def merge(*groups: Reasons) -> Reasons:
    """The reasons of every group, per code, in order."""
    result: Reasons = {}
    for group in groups:
        for code, reasons in group.items():
            result.setdefault(code, [])
            result[code].extend(text for text in reasons if text not in result[code])
    return result


# The object a path names (by its id, or the segment before ``{id}``), for the 404 that
# every operation on it can answer.
OBJECTS = {"bid": "backup", "aid": "artifact", "run_id": "run", "api-keys": "API key"}
OBJECTS |= {"workers": "worker", "restores": "restore", "members": "member", "roles": "role"}
OBJECTS |= {"webhooks": "webhook", "did": "delivery"}


def object_of(path: str) -> str | None:
    """The object an operation's path names, if it is one ``OBJECTS`` knows."""
    parts = path.split("/")
    ids = [index for index, part in enumerate(parts) if part.startswith("{")]
    if not ids:
        return None
    name = parts[ids[-1]][1:-1]
    return OBJECTS.get(parts[ids[-1] - 1] if name in ("id", "slug") else name)


def reasons_of(operation: Operation) -> Reasons:
    """Every error an operation can answer: those its shape implies, then its own."""
    derived: list[Reasons] = [INTERNAL]
    if operation.auth != Auth.NONE:
        derived += [UNAUTHENTICATED, UPSTREAM]
    names = [part[1:-1] for part in operation.path.split("/") if part.startswith("{")]
    derived += [path_id(name) for name in names if name not in ("key", "asset")]
    if operation.permissions:
        derived += [NO_WORKSPACE, permission(*operation.permissions)]
        derived += [permission(needed) for needed in operation.also_permissions]
    if "{wid}" in operation.path:
        derived.append(IN_WORKSPACE)
    if operation.body is not None and operation.media_type == "application/json":
        derived.append(JSON_BODY if operation.body_required else OPTIONAL_BODY)
    if operation.empty_body:
        derived.append(OPTIONAL_BODY)
    if operation.paginated:
        derived.append(PAGE)
    if operation.idempotent:
        derived.append(IDEMPOTENT)
    if operation.method == "PATCH":
        derived.append(CONDITIONAL)
    if operation.person:
        derived.append(HUMAN_ONLY)
    if operation.billing:
        derived.append(BILLING_BY_GATE[operation.billing])
    noun = object_of(operation.path)
    if noun and "not_found" not in operation.errors:
        where = "the workspace" if "{wid}" in operation.path else "the caller's workspace"
        derived.append(reason("not_found", f"no such {noun} in {where}"))
    return merge(*derived, {code: [text] for code, text in operation.errors.items()})


def error_responses(operation: Operation) -> dict[str, Json]:
    """The error responses of ``operation``, by status, each code with its reasons."""
    reasons = reasons_of(operation)
    by_status: dict[int, list[str]] = {}
    for code in reasons:
        by_status.setdefault(STATUS_BY_CODE[code], []).append(code)
    responses: dict[str, Json] = {}
    for status in sorted(by_status):
        codes = by_status[status]
        lines = [f"- `{code}`: {'; '.join(reasons[code])}" for code in codes]
        examples = {
            code: {
                "summary": ERROR_CODES[code].meaning,
                "value": {
                    "error": {
                        "code": code,
                        "message": ERROR_CODES[code].example,
                        "request_id": "req_0b8f3f9e-4a51-4a8e-9c43-7c1f5b0f3f51",
                    }
                },
            }
            for code in codes
        }
        content: Json = {"application/json": {"schema": ref("Error"), "examples": examples}}
        if status in operation.html_errors:
            content = {**HTML, **content}
        headers: Json = {"X-Request-ID": REQUEST_ID_HEADER}
        if status in (429, 502):
            headers["Retry-After"] = RETRY_AFTER_HEADER
        responses[str(status)] = {
            "description": f"{STATUS_MEANINGS[status]}. Codes:\n\n" + "\n".join(lines),
            "headers": headers,
            "content": content,
        }
    return responses
