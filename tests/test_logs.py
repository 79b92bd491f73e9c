"""Structured logs: access events per request, JSON or text lines, never a token."""

from __future__ import annotations

import json
import logging

import pytest

from strongroom.entrypoints.logs import JsonFormatter, TextFormatter, configure_logging
from support.world import Api, bearer, make_client, make_facade


def _record(message: str, **extra: object) -> logging.LogRecord:
    record = logging.makeLogRecord({"name": "strongroom.access", "levelname": "INFO"})
    record.msg = message
    record.__dict__.update(extra)
    return record


class TestFormatters:
    """One event per line."""

    def test_json_lines_carry_the_extras(self) -> None:
        """Time, level, logger, message and every extra field, as one JSON object."""
        line = JsonFormatter().format(_record("GET /healthz 200", status=200, route="/healthz"))
        event = json.loads(line)
        assert event["level"] == "info"
        assert event["logger"] == "strongroom.access"
        assert event["message"] == "GET /healthz 200"
        assert (event["status"], event["route"]) == (200, "/healthz")
        assert event["time"].endswith("+00:00")

    def test_uvicorns_terminal_copy_of_the_message_is_left_out(self) -> None:
        """uvicorn's ``color_message`` (escape codes) never reaches a JSON line."""
        line = JsonFormatter().format(_record("started", color_message="\x1b[1mstarted\x1b[0m"))
        assert "color_message" not in json.loads(line)

    def test_text_lines_are_readable(self) -> None:
        """The message, then key=value for the extras."""
        line = TextFormatter().format(_record("GET /healthz 200", status=200))
        assert "INFO strongroom.access: GET /healthz 200 status=200" in line

    def test_an_unknown_format_is_refused(self) -> None:
        """Only auto, json and text."""
        with pytest.raises(ValueError, match="STRONGROOM_LOG_FORMAT"):
            configure_logging("xml")


class TestAccessEvents:
    """One event per request when access logs are on."""

    def test_a_request_is_one_event_with_its_id_principal_and_status(
        self, api: Api, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Route template, status, duration, request id and principal type; no token."""
        token, workspace_id = api.workspace_admin("ada@example.com")
        with make_client(api.facade, access_log=True) as client:
            caplog.set_level(logging.INFO, logger="strongroom.access")
            answered = client.get(f"/v1/workspaces/{workspace_id}/backups", headers=bearer(token))
            refused = client.get(f"/v1/workspaces/{workspace_id}/backups", headers=bearer("bks_x"))
        events = [r for r in caplog.records if r.name == "strongroom.access"]
        assert len(events) == 2
        first, second = (vars(event) for event in events)
        assert first["route"] == "/v1/workspaces/{wid}/backups"
        assert (first["status"], first["principal"]) == (200, "user")
        assert first["request_id"] == answered.headers["x-request-id"]
        assert first["duration_ms"] > 0
        assert (second["status"], second["principal"]) == (401, "anonymous")
        assert second["request_id"] == refused.headers["x-request-id"]
        for event in events:
            assert token not in json.dumps(vars(event), default=str)
            assert str(workspace_id) not in event.getMessage()

    def test_no_events_unless_asked(self, caplog: pytest.LogCaptureFixture) -> None:
        """Access logs are off by default."""
        with make_client(make_facade()) as client:
            caplog.set_level(logging.INFO, logger="strongroom.access")
            client.get("/healthz")
        assert [r for r in caplog.records if r.name == "strongroom.access"] == []
