"""Presigning a snapshot's uploads one request at a time against one ``upload-urls``.

    .venv/bin/python bench/batch_presign.py            # a few seconds
    .venv/bin/python bench/batch_presign.py --count 1000

In process (the ASGI application over the in-memory facade, local-disk storage), so the
figures are the application's own time per request, without a network or a database. The
set-up reuses the tests' helpers (``tests/support``).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from strongroom.adapters.runtime.blocking import blocking  # noqa: E402
from strongroom.adapters.storage.local import LocalDiskStorage  # noqa: E402
from support.world import Api, bearer, make_client, make_facade  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=500)
    count = parser.parse_args().count
    storage = blocking(LocalDiskStorage(Path(tempfile.mkdtemp()), b"bench"))
    facade = make_facade(storage=storage)
    with make_client(facade) as client:
        token, workspace_id = Api(facade, client).workspace_admin("ada@example.com")
        headers = bearer(token)
        backup = client.post(
            f"/v1/workspaces/{workspace_id}/backups",
            json={"name": "bench", "kind": "manual"},
            headers=headers,
        ).json()["id"]
        retention = {"expire_after": "P30D", "lock_for": "PT0S"}
        client.patch(f"/v1/backups/{backup}", json={"retention": retention}, headers=headers)
        items = [
            {"name": f"pack-{n}", "size": 1, "sha256": hashlib.sha256(b"%d" % n).hexdigest()}
            for n in range(count)
        ]
        took: dict[str, float] = {}
        for label in ("one by one", "one batch"):
            run = client.post("/v1/runs", json={"backup_id": backup}, headers=headers).json()
            start = time.perf_counter()
            if label == "one by one":
                for item in items:
                    path = f"/v1/runs/{run['id']}/upload-url"
                    assert client.post(path, json=item, headers=headers).status_code == 201
            else:
                path = f"/v1/runs/{run['id']}/upload-urls"
                answer = client.post(path, json={"artifacts": items}, headers=headers)
                assert answer.status_code == 201
            took[label] = time.perf_counter() - start
            print(f"{label:>10}: {count} uploads presigned in {took[label]:.3f} s")
    print(f"ratio one by one / one batch: {took['one by one'] / took['one batch']:.1f}x")


if __name__ == "__main__":
    main()
