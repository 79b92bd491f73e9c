"""The retention job's purges, on every adapter: expired idempotency keys and failed
sign-in records older than a cut-off go; everything at or after it stays."""

from __future__ import annotations

from contract_records import Adapter, at

from strongroom.ports.driven.repositories import IdempotencyRecord


class TestIdempotencyPurge:
    """``idempotency.purge`` deletes the keys reserved before the cut-off."""

    def test_keys_before_the_cut_off_go_and_later_ones_stay(self, adapter: Adapter) -> None:
        """Reserved at -10 s, 0 s and +10 s; a purge before 0 s removes only the first, and
        its key can then be reserved again by anyone."""
        with adapter.uow() as uow:
            for key, seconds in (("old", -10), ("edge", 0), ("new", 10)):
                record = IdempotencyRecord("s", key, f"fp-{key}", at(seconds))
                uow.idempotency.reserve(record, expired_before=at(-100))
            uow.idempotency.complete("s", "old", "{}")
            uow.commit()
        with adapter.uow() as uow:
            assert uow.idempotency.purge(at(0)) == 1
            uow.commit()
        with adapter.uow() as uow:
            assert uow.idempotency.get("s", "old") is None
            assert uow.idempotency.get("s", "edge") is not None
            assert uow.idempotency.get("s", "new") is not None
            assert uow.idempotency.purge(at(0)) == 0

    def test_a_purge_that_is_not_committed_changes_nothing(self, adapter: Adapter) -> None:
        """It belongs to its unit of work like every write."""
        with adapter.uow() as uow:
            uow.idempotency.reserve(IdempotencyRecord("s", "k", "fp", at(0)), at(-100))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.idempotency.purge(at(1)) == 1
        with adapter.uow() as uow:
            assert uow.idempotency.get("s", "k") is not None


class TestFailedLoginPurge:
    """``accounts.purge_failed_logins`` forgets the failures before the cut-off."""

    def test_failures_before_the_cut_off_are_forgotten(self, adapter: Adapter) -> None:
        """Two old failures (two addresses) go, the one at the cut-off and a later one stay."""
        with adapter.uow() as uow:
            uow.accounts.record_failed_login("ada@example.com", "10.0.0.1", at(-60))
            uow.accounts.record_failed_login("Ada@Example.com", "10.0.0.2", at(-30))
            uow.accounts.record_failed_login("ada@example.com", "10.0.0.1", at(0))
            uow.accounts.record_failed_login("ada@example.com", "10.0.0.1", at(30))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.accounts.purge_failed_logins(at(0)) == 2
            uow.commit()
        with adapter.uow() as uow:
            assert uow.accounts.recent_failed_logins("10.0.0.1", at(-3600), 10) == [at(30), at(0)]
            assert uow.accounts.recent_failed_logins("10.0.0.2", at(-3600), 10) == []
            assert uow.accounts.purge_failed_logins(at(0)) == 0

    def test_failures_recorded_after_a_purge_are_all_counted(self, adapter: Adapter) -> None:
        """Failures of one email and address at one instant, recorded after a purge, each
        count: none overwrites one recorded before it."""
        with adapter.uow() as uow:
            for seconds in (-60, -30, 0, 30):
                uow.accounts.record_failed_login("ada@example.com", "10.0.0.1", at(seconds))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.accounts.purge_failed_logins(at(0)) == 2
            uow.accounts.record_failed_login("ada@example.com", "10.0.0.1", at(30))
            uow.accounts.record_failed_login("ada@example.com", "10.0.0.1", at(30))
            uow.commit()
        with adapter.uow() as uow:
            recent = uow.accounts.recent_failed_logins("10.0.0.1", at(-3600), 10)
            assert recent == [at(30), at(30), at(30), at(0)]
