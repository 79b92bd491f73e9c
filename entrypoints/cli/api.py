"""``strongroom api METHOD PATH``: any request of the API with the stored session, its JSON
answer printed (gh's ``api``). A refusal prints the API's error envelope and exits 1."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import httpx2

from strongroom.client import ApiError
from strongroom.client.calls import Call
from strongroom.entrypoints.cli.context import JSON_FLAG, Session, client_command, emit_json

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
WORKSPACE_PLACEHOLDER = "{workspace}"


def _answer(response: httpx2.Response) -> Any:
    """The answer's JSON (``null`` for an empty body)."""
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text


def _field(pair: str, typed: bool) -> tuple[str, Any]:
    """``key=value``; with ``typed`` the value read as JSON when it is JSON
    (numbers, true, false, null, arrays, objects)."""
    key, sep, value = pair.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"{pair!r} is not key=value")
    if typed:
        try:
            return key, json.loads(value)
        except ValueError:
            pass
    return key, value


def _body(input_file: str | None) -> Any:
    if input_file is None:
        return None
    try:
        raw = sys.stdin.read() if input_file == "-" else Path(input_file).read_text()
    except OSError as error:
        raise click.BadParameter(str(error), param_hint="--input") from error
    try:
        return json.loads(raw)
    except ValueError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint="--input") from error


@click.command(help="send a request to the API with your session and print the JSON answer")
@client_command
@click.argument("method", type=click.Choice(METHODS, case_sensitive=False))
@click.argument("path")
@click.option("-f", "--field", "fields", multiple=True, help="key=value, a string (repeat)")
@click.option(
    "-F", "--typed-field", "typed", multiple=True, help="key=value, the value read as JSON"
)
@click.option(
    "--input", "input_file", default=None, help="the request body: a JSON file (- for stdin)"
)
def api(
    session: Session,
    method: str,
    path: str,
    fields: tuple[str, ...],
    typed: tuple[str, ...],
    input_file: str | None,
) -> None:
    """METHOD PATH (e.g. GET /v1/me, or /v1/workspaces/{workspace}/backups: {workspace}
    is the current workspace). Fields go into the query of a GET or DELETE, or with
    --input; otherwise they make the JSON body. Exit 1 when the API refuses."""
    click.get_current_context().meta[JSON_FLAG] = True  # the answer is JSON, so is a refusal
    if "://" in path:
        raise click.BadParameter("a path of the API, not a URL (see --server)", param_hint="PATH")
    path = "/" + path.lstrip("/")
    client = session.signed_in()
    if WORKSPACE_PLACEHOLDER in path:
        path = path.replace(WORKSPACE_PLACEHOLDER, str(session.workspace_id()))
    given = dict([_field(f, False) for f in fields] + [_field(f, True) for f in typed])
    body = _body(input_file)
    method = method.upper()
    query: dict[str, str] = {}
    if body is not None or method in ("GET", "DELETE"):
        query = {k: v if isinstance(v, str) else json.dumps(v) for k, v in given.items()}
    elif given:
        body = given
    try:
        answer = client.perform(Call(method, path, _answer, query=query, json=body))
    except ApiError:
        raise  # the root command prints the envelope on standard output
    emit_json(answer)
