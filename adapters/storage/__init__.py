"""Object storage adapters: local disk and S3."""
