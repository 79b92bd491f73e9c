"""The ``strongroom`` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import uvicorn

from strongroom.entrypoints.http import create_app
from strongroom.entrypoints.service import describe_storage
from strongroom.entrypoints.settings import Settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="strongroom", description="Strongroom backup service")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP API")
    serve.add_argument("--host", default=None, help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port to listen on (8080)")
    serve.add_argument("--data-dir", type=Path, default=None, help="data directory")
    serve.add_argument("--database-url", default=None, help="STRONGROOM_DATABASE_URL")
    serve.add_argument("--access-log", action="store_true", help="log every request")
    return parser


def serve(arguments: argparse.Namespace) -> int:
    """Run the API under uvicorn (uvloop, httptools) until interrupted."""
    settings = Settings.from_env(
        host=arguments.host,
        port=arguments.port,
        data_dir=arguments.data_dir,
        database_url=arguments.database_url,
        access_log=arguments.access_log or None,
    )
    app = create_app(settings)
    where = f"http://{settings.host}:{settings.port}"
    print(
        f"Strongroom listening on {where} (state {describe_storage(settings)}; "
        f"data dir {settings.data_dir})",
        flush=True,
    )
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        access_log=settings.access_log,
        log_level="info",
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    arguments = _parser().parse_args(argv)
    if arguments.command == "serve":
        return serve(arguments)
    return 2


if __name__ == "__main__":
    sys.exit(main())
