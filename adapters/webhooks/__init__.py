"""Outbound webhooks: Standard Webhooks signatures and the sender of the outbox."""
