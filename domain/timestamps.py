"""Timestamps: the one parser of what a client sends (a body field, a query parameter, a
cursor) and the one format the API writes (bodies, and times inside messages).

RFC 3339 with a time zone (``Z`` for UTC), returned in UTC. An instant whose UTC form a
``datetime`` cannot hold (``0001-01-01T00:00:00+14:00`` is still year 0 in UTC) is
refused here, with the malformed ones, rather than overflowing later in a comparison or
in a database codec.
"""

from __future__ import annotations

from datetime import UTC, datetime

from strongroom.domain.errors import InvalidRequestError


def parse_timestamp(text: str, field: str) -> datetime:
    """``text`` as an aware UTC ``datetime``, or ``invalid_request`` naming ``field``."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as error:
        raise InvalidRequestError(f"{field} must be an RFC 3339 timestamp") from error
    if moment.tzinfo is None:
        raise InvalidRequestError(f"{field} must carry a time zone (use Z for UTC)")
    try:
        return moment.astimezone(UTC)
    except OverflowError as error:
        raise InvalidRequestError(
            f"{field} is out of range: in UTC it must fall within the years 0001 to 9999"
        ) from error


def format_timestamp(moment: datetime) -> str:
    """The API's form of an instant: RFC 3339 in UTC with a ``Z`` suffix, milliseconds."""
    instant = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    return instant.isoformat(timespec="milliseconds")[:-6] + "Z"  # "+00:00" becomes "Z"
