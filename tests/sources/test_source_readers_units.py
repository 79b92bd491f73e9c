"""The pieces of the source readers without a source: the archive format, the thread
bridge's back-pressure and stop, and ``pg_dump`` failures turned into run errors."""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
import threading
import time

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from strongroom.adapters.sources.archive import CHUNK, ArchiveWriter, ZstdSink
from strongroom.adapters.sources.postgres import UNREACHABLE, failure_message
from strongroom.adapters.sources.threaded import ConsumerGoneError, Emit, thread_stream

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
            "objects": [{"key": k, "size": len(c), "etag": f"etag-{len(c)}"} for k, c in objects],
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


class TestPgDumpFailures:
    """``pg_dump``'s standard error as a run's error."""

    def test_the_password_is_scrubbed(self) -> None:
        stderr = (
            'pg_dump: error: connection to server at "db" (10.0.0.5), port 5432 failed: '
            'FATAL:  password authentication failed for user "backup" hunter2-pw\n'
        )
        message = failure_message(stderr, ["hunter2-pw"])
        assert "hunter2-pw" not in message
        assert message.startswith("source postgres: authentication failed (")

    def test_unreachable_servers_are_one_answer(self) -> None:
        stderr = (
            'pg_dump: error: connection to server at "db" (10.0.0.5), port 5432 failed: '
            "Connection refused\n\tIs the server running on that host?\n"
        )
        assert failure_message(stderr, ["x"]) == UNREACHABLE

    def test_other_failures_name_pg_dumps_first_error(self) -> None:
        stderr = (
            "pg_dump: error: aborting because of server version mismatch\n"
            "pg_dump: detail: server version: 17.0; pg_dump version: 15.2\n"
        )
        assert failure_message(stderr, ["x"]) == (
            "source postgres: pg_dump failed (aborting because of server version mismatch)"
        )
