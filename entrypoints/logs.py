"""Logging of a served Strongroom: one line of JSON per event, or readable text.

``STRONGROOM_LOG_FORMAT`` chooses: ``json``, ``text``, or ``auto`` (the default): text when
stderr is a terminal, JSON otherwise (a container's or a service manager's log). Access
events (``strongroom.access``, one per request when access logs are on) carry their fields
as JSON keys; no field ever holds a token or a secret, since none is put in one.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

# The attributes every LogRecord has; anything else was passed as ``extra`` (uvicorn's
# ``color_message`` repeats the message with terminal escapes: dropped too).
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, and the record's extras."""

    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        event.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        return json.dumps(event, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``time level logger: message key=value ...`` for people reading a terminal."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = {k: v for k, v in vars(record).items() if k not in _STANDARD}
        if extras:
            line += " " + " ".join(f"{key}={value}" for key, value in extras.items())
        return line


def configure_logging(log_format: str = "auto", level: int = logging.INFO) -> logging.Handler:
    """Send every logger's records (uvicorn's included) to stderr in ``log_format``."""
    if log_format not in ("auto", "json", "text"):
        raise ValueError("STRONGROOM_LOG_FORMAT must be auto, json or text")
    as_text = log_format == "text" or (log_format == "auto" and sys.stderr.isatty())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TextFormatter() if as_text else JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    return handler
