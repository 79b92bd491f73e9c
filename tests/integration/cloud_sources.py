"""Real sources for the cloud executor's tests: a SeaweedFS bucket full of objects, a
PostgreSQL database of several tables and types, and how to read what a run wrote."""

from __future__ import annotations

import io
import json
import os
import random
import secrets
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import psycopg
import zstandard
from minio import Minio

from support.seaweed import SeaweedServer

PREFIX = "data/"
BIG = 17 * 1024 * 1024  # one object over the 16 MiB part size: a multipart archive


def minio_of(seaweed: SeaweedServer) -> Minio:
    """A root client of the session's SeaweedFS."""
    return Minio(
        seaweed.endpoint.removeprefix("http://"),
        seaweed.access_key,
        seaweed.secret_key,
        secure=False,
        region="us-east-1",
    )


@attrs.frozen
class SourceBucket:
    """A bucket and what was put under ``PREFIX`` (relative key -> bytes)."""

    name: str
    objects: dict[str, bytes]


def source_bucket(seaweed: SeaweedServer, small: int = 300) -> SourceBucket:
    """``small`` small objects, an empty one, one of ``BIG`` bytes, unicode keys, a key
    ending in ``/`` under ``PREFIX``; and one object outside it."""
    client = minio_of(seaweed)
    name = "source-" + secrets.token_hex(5)
    client.make_bucket(name)
    chooser = random.Random(7)
    objects: dict[str, bytes] = {
        f"small/{i:04d}.txt": os.urandom(chooser.randint(1, 3000)) for i in range(small)
    }
    objects["empty.bin"] = b""
    objects["big/blob.bin"] = os.urandom(BIG)
    objects["données/été.txt"] = "unicode keys ✓".encode()
    objects["日本語/ファイル 1.bin"] = b"\x00\x01\x02"
    objects["folder/"] = b""
    for key, content in objects.items():
        client.put_object(name, PREFIX + key, io.BytesIO(content), len(content))
    client.put_object(name, "outside/prefix.txt", io.BytesIO(b"not backed up"), 13)
    return SourceBucket(name, objects)


def unpack(archive: bytes) -> tuple[list[tuple[tarfile.TarInfo, bytes]], dict[str, Any]]:
    """The members of a tar.zst artifact (all but the manifest, with their bytes) and its
    manifest, read as a stream."""
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(archive))
    members: list[tuple[tarfile.TarInfo, bytes]] = []
    manifest: dict[str, Any] | None = None
    with tarfile.open(fileobj=reader, mode="r|") as tar:
        for member in tar:
            handle = tar.extractfile(member)
            content = handle.read() if handle is not None else b""
            if member.name == "manifest.json":
                manifest = json.loads(content)
            else:
                assert manifest is None, "the manifest is the last member"
                members.append((member, content))
    assert manifest is not None
    return members, manifest


def fill_database(conninfo: str) -> None:
    """Several tables of several types, a few MB in all."""
    with psycopg.connect(conninfo, autocommit=True) as db:
        db.execute(
            """
            CREATE TABLE customers (
                id bigint PRIMARY KEY, name text NOT NULL, balance numeric(12, 2),
                tags text[], joined timestamptz, active boolean, ident uuid);
            CREATE TABLE events (
                id bigserial PRIMARY KEY, customer_id bigint REFERENCES customers(id),
                payload jsonb, blob bytea, happened date);
            CREATE VIEW rich AS SELECT * FROM customers WHERE balance > 5000;
            INSERT INTO customers
            SELECT g, 'customer ' || g || ' ' || repeat(md5(g::text), 4), (g * 7.31) % 10000,
                   ARRAY['t' || (g % 5), 'été'], now() - g * interval '1 hour', g % 3 = 0,
                   md5(g::text)::uuid
            FROM generate_series(1, 20000) AS g;
            INSERT INTO events (customer_id, payload, blob, happened)
            SELECT 1 + g % 20000, jsonb_build_object('n', g, 'text', md5(g::text)),
                   decode(md5(g::text) || md5((g + 1)::text), 'hex'), date '2030-01-01' + g % 365
            FROM generate_series(1, 30000) AS g;
            """
        )


def plain_dump(conninfo: str) -> list[str]:
    """``pg_dump --format=plain`` of a database without its comments and its random
    ``\\restrict`` keys: what two equal databases share."""
    out = subprocess.run(
        ["pg_dump", "--format=plain", "--no-owner", f"--dbname={conninfo}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [
        line
        for line in out.splitlines()
        if line and not line.startswith(("--", "\\restrict", "\\unrestrict"))
    ]


@contextmanager
def table_locked(conninfo: str, table: str) -> Iterator[psycopg.Connection[Any]]:
    """``table`` locked exclusively for the block: a ``pg_dump`` of its database waits."""
    with psycopg.connect(conninfo) as db:
        db.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        yield db
        db.rollback()


def pg_dump_processes(dbname: str) -> list[int]:
    """The ids of running ``pg_dump`` processes of database ``dbname``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                command = handle.read().split(b"\0")
        except OSError:
            continue
        if (
            command
            and command[0].endswith(b"pg_dump")
            and any(dbname.encode() in part for part in command)
        ):
            found.append(int(entry))
    return found
