"""Keys of the snapshot format: recipients are checked (1 to 10 well-formed ``age1...``),
secrets never show in a repr, and the repository key survives its text form and sealing."""

from __future__ import annotations

import pytest

from strongroom.client.snapshots import (
    FormatError,
    RepositoryKey,
    SnapshotKeyError,
    check_recipients,
    generate_identity,
    load_identity,
)


def test_recipients_must_be_one_to_ten_well_formed_age_keys() -> None:
    people = [generate_identity()[0].recipient for _ in range(11)]
    assert check_recipients(people[:10]) == tuple(people[:10])
    for bad in ([], people, ["age1notakey"], ["ssh-ed25519 AAAA"], [people[0], ""]):
        with pytest.raises(SnapshotKeyError):
            check_recipients(bad)


def test_an_identity_file_is_read_like_age_keygen_writes_it() -> None:
    identity, text = generate_identity()
    assert text.startswith("# created: ")
    assert f"# public key: {identity.recipient}\n" in text
    assert load_identity(text) == identity
    assert identity.secret not in repr(identity)
    with pytest.raises(SnapshotKeyError):
        load_identity("# only a comment\n")
    with pytest.raises(SnapshotKeyError):
        load_identity("AGE-SECRET-KEY-1NOTBECH32")


def test_the_repository_key_round_trips_through_text_and_sealing() -> None:
    identity, _ = generate_identity()
    other, _ = generate_identity()
    key = RepositoryKey.generate()
    assert RepositoryKey.from_text(key.to_text()) == key
    assert key.chunk_id_key.hex() not in repr(key)
    sealed = key.seal([identity.recipient])
    assert RepositoryKey.unseal(sealed, identity) == key
    with pytest.raises(SnapshotKeyError):
        RepositoryKey.unseal(sealed, other)
    with pytest.raises(SnapshotKeyError):
        RepositoryKey.from_text("strongroom-repository-key-1:%%%")
    with pytest.raises(FormatError):
        RepositoryKey.from_bytes(b"SRRK\x02" + bytes(64))
