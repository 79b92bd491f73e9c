"""SQL adapters: SQLite (embedded default) and PostgreSQL (production), both asynchronous.

- ``sqlite.SqliteDatabase(path)``: ``.migrate()``, ``.uow`` (a ``UnitOfWorkFactory``),
  ``await .aclose()`` or ``.close()``. Standard library only; statements run on the
  database's own threads, never on the event loop.
- ``postgres.PostgresDatabase.from_url(url)`` (owns its pools: ``await .open()`` in the
  lifespan is optional, each event loop's pool opens on first use) or
  ``PostgresDatabase(pool)`` (an embedder's ``AsyncConnectionPool``, never closed here):
  ``.migrate()``, ``.uow``, ``await .aclose()`` or ``.close()``. Needs the ``postgres``
  extra.

Shared by both: ``catalog`` (named queries of ``queries/*.sql``), ``rows`` (records to
parameters and ``*_from_row`` constructors), ``repositories``, ``unit_of_work``,
``errors`` (what a violated constraint means), ``migrate`` (the runner of
``migrations/<dialect>/NNNN_name.sql``; ``schema_<dialect>.sql`` is the canonical schema).
Nothing here imports psycopg unless ``postgres`` is imported.
"""
