"""Assertions shared by the HTTP tests."""

from __future__ import annotations

from typing import Any

ENVELOPE_KEYS = {"code", "message", "request_id"}


def assert_error(response: Any, status: int, code: str, *fragments: str) -> dict[str, Any]:
    """The response is the contract's error envelope with this status and code, its message
    holds every fragment, and its request id is the response's; the error object."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert ENVELOPE_KEYS <= set(error) <= ENVELOPE_KEYS | {"detail"}, error
    assert error["code"] == code, error
    assert isinstance(error["message"], str)
    assert error["message"]
    for fragment in fragments:
        assert fragment in error["message"], error
    assert error["request_id"] == response.headers["x-request-id"]
    return error
