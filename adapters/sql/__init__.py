"""SQL adapters: SQLite (embedded default) and PostgreSQL (production).

- ``sqlite.SqliteDatabase(path)``: ``.migrate()``, ``.uow`` (a ``UnitOfWorkFactory``),
  ``.close()``. Standard library only.
- ``postgres.PostgresDatabase.from_url(url)`` (owns a pool created closed: ``.open()`` it
  in the lifespan) or ``PostgresDatabase(pool)`` (an embedder's pool, never closed here):
  ``.migrate()``, ``.uow``, ``.close()``. Needs the ``postgres`` extra.

Shared by both: ``catalog`` (named queries of ``queries/*.sql``), ``rows`` (records to
parameters and ``*_from_row`` constructors), ``repositories``, ``unit_of_work``,
``errors`` (what a violated constraint means), ``migrate`` (the runner of
``migrations/<dialect>/NNNN_name.sql``; ``schema_<dialect>.sql`` is the canonical schema).
Nothing here imports psycopg unless ``postgres`` is imported.
"""
