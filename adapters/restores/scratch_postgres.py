"""A drill of a ``postgres`` artifact: a scratch database created on the service's own
drill server (``STRONGROOM_DRILL_DATABASE_URL``), the dump restored into it with
``pg_restore``, its tables read (``pg_tables``), and the database dropped, whatever
happened. The customer's database is never connected to.

The URL's password reaches ``pg_restore`` only as ``PGPASSWORD`` in its environment.
What the tools print is not reported (only their exit code is logged).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import uuid
from typing import Any

from strongroom.adapters.restores.postgres import feed_dump
from strongroom.adapters.sources.pg_tables import read_tables
from strongroom.domain.drills import TableFacts
from strongroom.ports.driven.drills import DrillFailedError
from strongroom.ports.driven.storage import ObjectReader

logger = logging.getLogger(__name__)

SCRATCH_PREFIX = "strongroom_drill_"


def drill_postgres(artifact: ObjectReader, server_url: str) -> dict[str, TableFacts]:
    """Blocking: restore the dump into a scratch database of ``server_url``; its tables."""
    import psycopg  # noqa: PLC0415 (the ``postgres`` extra)
    from psycopg import sql  # noqa: PLC0415
    from psycopg.conninfo import conninfo_to_dict, make_conninfo  # noqa: PLC0415

    name = SCRATCH_PREFIX + uuid.uuid4().hex
    try:
        admin = psycopg.connect(server_url, autocommit=True)
    except psycopg.Error as error:
        raise DrillFailedError("the drill database server could not be reached") from error
    with admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            params: dict[str, Any] = conninfo_to_dict(server_url)
            password = params.pop("password", None)
            params["dbname"] = name
            scratch = make_conninfo(**params)
            _pg_restore(artifact, scratch, password)
            with psycopg.connect(scratch, password=password, autocommit=True) as connection:
                return read_tables(connection)
        finally:
            with contextlib.suppress(psycopg.Error):
                admin.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )


def _pg_restore(artifact: ObjectReader, conninfo: str, password: str | None) -> None:
    program = shutil.which("pg_restore")
    if program is None:
        raise DrillFailedError("pg_restore is not installed on the service")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    if password is not None:
        env["PGPASSWORD"] = password
    argv = [
        program,
        "--no-owner",
        "--no-privileges",
        "--exit-on-error",
        "--single-transaction",
        f"--dbname={conninfo}",
    ]
    with subprocess.Popen(  # noqa: S603 (argv of our own, no shell)
        argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    ) as process:
        feed_dump(artifact, process)  # a pipe it broke: its exit code says why
        assert process.stderr is not None
        said = process.stderr.read()
        code = process.wait()
    if code != 0:
        logger.info("a drill's pg_restore exited with %d: %s", code, said[-2000:])
        raise DrillFailedError(
            "the dump could not be restored: pg_restore refused it (damaged or not a dump)"
        )
