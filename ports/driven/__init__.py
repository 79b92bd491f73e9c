"""The driven side of the hexagon: the Protocols that adapters implement (repositories and
their unit of work, object storage, identity, billing, mail, clock, ids, secrets)."""
