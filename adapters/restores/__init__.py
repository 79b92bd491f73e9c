"""Restore targets: the service writes cloud artifacts back into S3 buckets and PostgreSQL
databases (contract 11); ``ServiceRestoreTargets`` picks the adapter by target type."""
