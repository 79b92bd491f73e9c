"""Signed immutability proofs: the service's Ed25519 key, and signing and checking of
proof documents."""
