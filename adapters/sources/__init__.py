"""Readers of cloud backup sources (S3 prefixes, PostgreSQL databases)."""
