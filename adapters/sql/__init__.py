"""SQL adapters: SQLite (embedded default) and PostgreSQL (production)."""
