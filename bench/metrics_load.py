"""Another tenant's ``GET /v1/me`` while 20 clients scrape ``/metrics`` (issue 27, finding 6).

    .venv/bin/python bench/metrics_load.py              # 20 scrapers, 300 reads each phase
    .venv/bin/python bench/metrics_load.py --scrapers 20 -n 300 --runs 200

A real ``strongroom serve`` on a scratch PostgreSQL database (the local server, as the
tests find it), with ``--runs`` runs of one workspace so that the service-wide figures have
rows to count. One client reads ``GET /v1/me`` ``-n`` times in a row, first alone, then
while ``--scrapers`` threads scrape ``/metrics``, each waiting ``--interval`` seconds
between its scrapes (0: as fast as they can); it prints both p50s,
their ratio and the scrapes answered. The set-up reuses the tests' helpers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "integration"))

import httpx2  # noqa: E402
from integration_world import postgres_url, workspace_admin  # noqa: E402

from strongroom.adapters.sql.postgres import PostgresDatabase  # noqa: E402
from support.postgres import postgres_server, scratch_database  # noqa: E402
from support.serve_process import free_port, serving  # noqa: E402
from support.world import bearer  # noqa: E402


def p50_of_me(client: httpx2.Client, headers: dict[str, str], count: int) -> float:
    """The median milliseconds of ``count`` reads of ``/v1/me`` in a row."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        assert client.get("/v1/me", headers=headers).status_code == 200
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapers", type=int, default=20)
    parser.add_argument("-n", type=int, default=300)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between scrapes")
    arguments = parser.parse_args()
    with (
        postgres_server() as server,
        scratch_database(server, prefix="strongroom_bench") as conninfo,
        tempfile.TemporaryDirectory() as folder,
    ):
        with PostgresDatabase.from_url(conninfo, min_size=0) as database:
            database.migrate()
        data_dir, log = Path(folder) / "data", Path(folder) / "serve.log"
        data_dir.mkdir()
        configuration = {
            "STRONGROOM_DATABASE_URL": postgres_url(conninfo),
            "STRONGROOM_SIGNUP": "true",
            "STRONGROOM_LOG_FORMAT": "text",
        }
        with (
            serving(data_dir, free_port(), log, configuration) as url,
            httpx2.Client(base_url=url, trust_env=False, timeout=60) as client,
        ):
            workspace, loaded = workspace_admin(client, "loaded@example.com")
            backup = client.post(
                f"/v1/workspaces/{workspace['id']}/backups",
                json={"name": "Nightly", "kind": "manual"},
                headers=bearer(loaded),
            ).json()
            for _ in range(arguments.runs):
                client.post("/v1/runs", json={"backup_id": backup["id"]}, headers=bearer(loaded))
            _, token = workspace_admin(client, "quiet@example.com")
            headers = bearer(token)
            p50_of_me(client, headers, 20)  # warm up
            alone = p50_of_me(client, headers, arguments.n)
            stop, scrapes = threading.Event(), [0] * arguments.scrapers

            def scrape(index: int) -> None:
                with httpx2.Client(base_url=url, trust_env=False, timeout=60) as own:
                    while not stop.is_set():
                        assert own.get("/metrics").status_code == 200
                        scrapes[index] += 1
                        stop.wait(arguments.interval)

            threads = [
                threading.Thread(target=scrape, args=(i,)) for i in range(arguments.scrapers)
            ]
            for thread in threads:
                thread.start()
            started = time.monotonic()
            try:
                loaded_p50 = p50_of_me(client, headers, arguments.n)
            finally:
                stop.set()
                for thread in threads:
                    thread.join()
            seconds = time.monotonic() - started
    print(f"GET /v1/me p50 alone: {alone:.2f} ms")
    print(f"GET /v1/me p50 with {arguments.scrapers} scrapers: {loaded_p50:.2f} ms")
    print(f"ratio: {loaded_p50 / alone:.2f}; scrapes answered: {sum(scrapes) / seconds:.0f}/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
