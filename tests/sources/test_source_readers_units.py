"""The pieces of the source readers without a source: the archive format, the thread
bridge's back-pressure and stop, and what a failing ``pg_dump`` becomes."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import tarfile
import threading
import time
from pathlib import Path

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from strongroom.adapters.outbound.policy import Budget, Outbound, Stage
from strongroom.adapters.sources.archive import CHUNK, ArchiveWriter, ZstdSink
from strongroom.adapters.sources.postgres import PostgresSourceReader
from strongroom.adapters.sources.threaded import ConsumerGoneError, Emit, thread_stream
from strongroom.domain.backups import PostgresSource
from strongroom.domain.endpoints import EndpointPolicy
from strongroom.ports.driven.sources import SourceError

keys = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=120
)


def archive_of(objects: list[tuple[str, bytes]]) -> bytes:
    out: list[bytes] = []
    writer = ArchiveWriter(ZstdSink(out.append), "bucket", "pre/")
    for key, content in objects:
        writer.add(key, len(content), 1_700_000_000.5, f"etag-{len(content)}", io.BytesIO(content))
    writer.finish()
    return b"".join(out)


class TestArchive:
    """The tar.zst format a restore reads."""

    @given(st.lists(st.tuples(keys, st.binary(max_size=3000)), max_size=8))
    def test_every_key_and_byte_comes_back_with_the_manifest_last(
        self, objects: list[tuple[str, bytes]]
    ) -> None:
        """Any keys (unicode, empty, ending in ``/``, very long): the ``STRONGROOM.key``
        record holds the exact key, the bytes are exact, the manifest lists them in order."""
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(archive_of(objects)))
        with tarfile.open(fileobj=reader, mode="r|") as tar:
            members = []
            for member in tar:
                handle = tar.extractfile(member)
                members.append((member, handle.read() if handle else b""))
        *files, (last, manifest_bytes) = members
        assert last.name == "manifest.json"
        assert [(m.pax_headers["STRONGROOM.key"], c) for m, c in files] == objects
        assert all(m.isreg() and m.mtime == 1_700_000_000 for m, _ in files)
        manifest = json.loads(manifest_bytes)
        assert manifest == {
            "format": "strongroom-s3/1",
            "bucket": "bucket",
            "prefix": "pre/",
            "objects": [
                {
                    "key": k,
                    "size": len(c),
                    "etag": f"etag-{len(c)}",
                    "sha256": hashlib.sha256(c).hexdigest(),
                }
                for k, c in objects
            ],
            "count": len(objects),
            "bytes": sum(len(c) for _, c in objects),
        }

    def test_a_body_shorter_than_its_size_is_refused(self) -> None:
        """An object that ends early cannot be archived silently."""
        writer = ArchiveWriter(ZstdSink(lambda _chunk: None), "b", "")
        with pytest.raises(OSError, match="unexpected end of data"):
            writer.add("k", 10, 0, "e", io.BytesIO(b"short"))

    def test_compressed_bytes_are_handed_on_in_large_chunks(self) -> None:
        """Chunks of at least ``CHUNK`` bytes but the last."""
        out: list[bytes] = []
        sink = ZstdSink(out.append, level=1)
        for _ in range(40):
            sink.write(bytes(range(256)) * 4096 + str(time.perf_counter_ns()).encode() * 99)
        sink.finish()
        assert all(len(chunk) >= CHUNK for chunk in out[:-1])


class TestThreadStream:
    """A blocking producer read as an async iterator."""

    def test_chunks_arrive_in_order_and_the_error_is_raised(self) -> None:
        def produce(emit: Emit) -> None:
            for i in range(50):
                emit(str(i).encode())
            raise ValueError("source broke")

        got: list[bytes] = []

        async def consume() -> None:
            async for chunk in thread_stream(produce, "t"):
                got.append(chunk)

        with pytest.raises(ValueError, match="source broke"):
            asyncio.run(consume())
        assert got == [str(i).encode() for i in range(50)]

    def test_a_consumer_that_stops_stops_the_producer(self) -> None:
        """Back-pressure holds the producer a few chunks ahead; closing the iterator makes
        its next ``emit`` raise, and it unwinds."""
        emitted: list[int] = []
        unwound = threading.Event()

        def produce(emit: Emit) -> None:
            try:
                for i in range(10_000):
                    emit(b"x")
                    emitted.append(i)
            except ConsumerGoneError:
                unwound.set()
                raise

        async def consume() -> None:
            stream = thread_stream(produce, "t")
            async for _ in stream:
                break
            await stream.aclose()  # type: ignore[attr-defined]

        asyncio.run(consume())
        assert unwound.wait(5)
        assert len(emitted) < 20


def fake_pg_dump(tmp_path: Path, stdout: str, stderr: str) -> str:
    """A ``pg_dump`` that writes ``stdout`` and ``stderr`` and exits 1."""
    script = tmp_path / "pg_dump"
    script.write_text(f"#!/bin/sh\nprintf '{stdout}'\nprintf '{stderr}' >&2\nexit 1\n")
    script.chmod(0o755)
    return str(script)


class TestPgDumpFailures:
    """``pg_dump``'s standard error never becomes a run's error (issue 27, findings 1
    and 9): the stage's fixed message does, at the budget's floor before the first byte."""

    outbound = Outbound(EndpointPolicy(), lambda _host, _port: ["10.0.0.5"], Budget(0.1, 0.2, 0.5))
    source = PostgresSource("db.example.com", 5432, "d")
    said = 'FATAL:  password authentication failed for user "backup" hunter2-pw does not exist'

    def failure(self, program: str) -> tuple[str, float]:
        reader = PostgresSourceReader(self.outbound, pg_dump=program)

        async def consume() -> None:
            async for _ in reader.read(self.source, {"username": "u", "password": "hunter2-pw"}):
                pass

        started = time.monotonic()
        with pytest.raises(SourceError) as failed:
            asyncio.run(consume())
        return str(failed.value), time.monotonic() - started

    def test_before_the_first_byte_it_could_not_be_reached(self, tmp_path: Path) -> None:
        message, took = self.failure(fake_pg_dump(tmp_path, "", self.said))
        assert message == Stage.SOURCE.message
        assert took >= 0.45

    def test_after_the_first_byte_it_failed_while_read(self, tmp_path: Path) -> None:
        message, _ = self.failure(fake_pg_dump(tmp_path, "PGDMP", self.said))
        assert message == Stage.SOURCE_READ.message

    def test_a_disallowed_address_is_the_same_answer_without_starting_pg_dump(
        self, tmp_path: Path
    ) -> None:
        outbound = Outbound(
            EndpointPolicy(), lambda _host, _port: ["169.254.169.254"], Budget(0.1, 0.2, 0.5)
        )
        marker = tmp_path / "started"
        script = tmp_path / "pg_dump"
        script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
        script.chmod(0o755)
        reader = PostgresSourceReader(outbound, pg_dump=str(script))

        async def consume() -> None:
            async for _ in reader.read(self.source, {"username": "u", "password": "p"}):
                pass

        with pytest.raises(SourceError, match=f"^{Stage.SOURCE.message}$"):
            asyncio.run(consume())
        assert not marker.exists()
