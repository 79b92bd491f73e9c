"""The repository contract of artifacts: every adapter stores, finds and refuses the same."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID, uuid4

import attrs
import pytest
from contract_records import T0, Adapter, at, backup, user, workspace

from strongroom.domain.artifacts import Artifact, ArtifactState, ArtifactStorage, Verification
from strongroom.domain.backups import Backup
from strongroom.domain.pagination import PageRequest
from strongroom.domain.runs import Run
from strongroom.ports.driven.repositories import IntegrityViolationError


def artifact(run: Run, name: str = "db.dump", created: float = 0, **changes: object) -> Artifact:
    """A pending artifact of ``run``."""
    built = Artifact(
        id=uuid4(),
        workspace_id=run.workspace_id,
        backup_id=run.backup_id,
        run_id=run.id,
        name=name,
        size=1234,
        sha256="ab" * 32,
        state=ArtifactState.PENDING,
        storage=ArtifactStorage.SERVICE,
        object_key=f"ns/{run.backup_id}/{run.id}/{uuid4()}",
        created_at=at(created),
    )
    return attrs.evolve(built, **changes)


def available(run: Run, name: str, locked: float, expires: float, **changes: object) -> Artifact:
    """An available artifact locked until ``at(locked)``, expiring at ``at(expires)``."""
    return artifact(
        run,
        name,
        state=ArtifactState.AVAILABLE,
        locked_until=at(locked),
        expires_at=at(expires),
        **changes,
    )


def world(adapter: Adapter) -> tuple[UUID, Backup, Run]:
    ada = user()
    target = workspace(ada)
    owner = backup(target.id)
    run = Run.manual(uuid4(), owner, T0)
    adapter.store(ada, target, owner, run)
    return target.id, owner, run


class TestArtifacts:
    """Artifacts: lineage, names, scoped look-ups, lists, counts, locks, expiry."""

    def test_an_artifact_comes_back_equal(self, adapter: Adapter) -> None:
        """Every field round-trips, through every look-up."""
        workspace_id, _, run = world(adapter)
        pending = artifact(run, "a", upload_id="upload-1")
        done = available(run, "b", 10, 20, size=5 * 1024**4, created_at=at(1))
        adapter.store(pending, done)
        with adapter.uow() as uow:
            for stored in (pending, done):
                assert uow.artifacts.get(workspace_id, stored.id) == stored
                assert uow.artifacts.get(workspace_id, stored.id, for_update=True) == stored
                assert uow.artifacts.find_in_run(workspace_id, run.id, stored.name) == stored
            assert uow.artifacts.list_for_run(workspace_id, run.id) == [pending, done]

    def test_look_ups_are_scoped_to_the_workspace(self, adapter: Adapter) -> None:
        """Another workspace sees nothing."""
        _, _, run = world(adapter)
        other, _, _ = world(adapter)
        stored = artifact(run)
        adapter.store(stored)
        with adapter.uow() as uow:
            assert uow.artifacts.get(other, stored.id) is None
            assert uow.artifacts.get(other, stored.id, for_update=True) is None
            assert uow.artifacts.find_in_run(other, run.id, stored.name) is None
            assert uow.artifacts.list_for_run(other, run.id) == []
            assert uow.artifacts.list(other, False, PageRequest(10, None)).items == []

    def test_lineage_and_names_are_enforced(self, adapter: Adapter) -> None:
        """A run of another backup or workspace, or a name used in the run: refused."""
        workspace_id, _, run = world(adapter)
        _, foreign_backup, foreign_run = world(adapter)
        adapter.store(artifact(run, "a"))
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.artifacts.add(artifact(run, "a"))
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.artifacts.add(artifact(foreign_run, workspace_id=workspace_id))
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.artifacts.add(artifact(run, "b", backup_id=foreign_backup.id))
        with adapter.uow() as uow, pytest.raises(IntegrityViolationError):
            uow.artifacts.update(artifact(run, "c"))

    def test_an_update_changes_state_upload_expiry_and_lock_only(self, adapter: Adapter) -> None:
        """Name, key and creation stay; size and digest change only while it was pending
        (what the service learns when its own stream ends)."""
        workspace_id, _, run = world(adapter)
        stored = artifact(run, upload_id="u")
        adapter.store(stored)
        changed = attrs.evolve(
            stored,
            state=ArtifactState.AVAILABLE,
            upload_id=None,
            expires_at=at(5),
            locked_until=at(4),
            size=1,
            sha256="b" * 64,
        )
        with adapter.uow() as uow:
            uow.artifacts.update(attrs.evolve(changed, name="other", object_key="x"))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.artifacts.get(workspace_id, stored.id) == changed
        with adapter.uow() as uow:
            uow.artifacts.update(attrs.evolve(changed, size=2, sha256="c" * 64))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.artifacts.get(workspace_id, stored.id) == changed  # available: kept

    def test_lists_split_deleted_from_the_rest_newest_first(self, adapter: Adapter) -> None:
        """Keyset pages, newest first; deleted ones only on request."""
        workspace_id, _, run = world(adapter)
        items = [artifact(run, f"a{i}", created=i) for i in range(5)]
        gone = artifact(run, "gone", created=9, state=ArtifactState.DELETED)
        adapter.store(*items, gone)
        with adapter.uow() as uow:
            first = uow.artifacts.list(workspace_id, False, PageRequest(3, None))
            assert first.items == items[::-1][:3]
            assert first.next_cursor is not None
            second = uow.artifacts.list(workspace_id, False, PageRequest(3, first.next_cursor))
            assert second.items == items[::-1][3:]
            assert uow.artifacts.list(workspace_id, True, PageRequest(3, None)).items == [gone]

    def test_counts_locks_and_bytes(self, adapter: Adapter) -> None:
        """Available ones count; locks are strict at their end; bytes by storage."""
        workspace_id, owner, run = world(adapter)
        adapter.store(
            available(run, "a", locked=10, expires=100, size=100),
            available(run, "b", locked=0, expires=100, size=20, storage=ArtifactStorage.CUSTOMER),
            artifact(run, "c", size=7),
            artifact(run, "d", size=1000, state=ArtifactState.DELETED, locked_until=at(50)),
        )
        with adapter.uow() as uow:
            artifacts = uow.artifacts
            assert artifacts.count_available(workspace_id, owner.id) == 2
            assert artifacts.count_available(workspace_id, uuid4()) == 0
            assert artifacts.any_locked(workspace_id, at(9))
            assert not artifacts.any_locked(workspace_id, at(10))
            assert artifacts.any_locked(workspace_id, at(9), backup_id=owner.id)
            assert not artifacts.any_locked(workspace_id, at(9), backup_id=uuid4())
            assert not artifacts.any_locked(workspace_id, at(9), storage=ArtifactStorage.CUSTOMER)
            assert artifacts.storage_bytes(workspace_id) == 100
            assert artifacts.storage_bytes(workspace_id, with_pending=True) == 107

    def test_expired_lists_every_workspaces_expired_available_artifacts(
        self, adapter: Adapter
    ) -> None:
        """Oldest expiry first, up to the limit; pending, deleted and unexpired stay out."""
        _, _, run = world(adapter)
        _, _, other = world(adapter)
        late = available(run, "late", 0, 30)
        early = available(other, "early", 0, 10)
        adapter.store(
            late,
            early,
            available(run, "fresh", 0, 100),
            artifact(run, "pending"),
            artifact(run, "deleted", state=ArtifactState.DELETED, expires_at=at(1)),
        )
        with adapter.uow() as uow:
            assert uow.artifacts.expired(at(30), 10) == [early, late]
            assert uow.artifacts.expired(at(30), 1) == [early]
            assert uow.artifacts.expired(at(9), 10) == []
        assert T0 + timedelta(seconds=30) == at(30)

    def test_to_verify_gives_pending_first_then_the_least_recently_verified(
        self, adapter: Adapter
    ) -> None:
        """Pending verifications of every workspace; with ``verified_before``, also the
        never or long ago verified, oldest first; pending and deleted artifacts stay out;
        an update keeps what a verification recorded."""
        _, _, run = world(adapter)
        _, _, other = world(adapter)
        waiting = available(run, "waiting", 0, 99, verification=Verification.PENDING)
        elsewhere = available(other, "elsewhere", 0, 99, verification=Verification.PENDING)
        never = available(run, "never", 0, 99, created=5)
        old = available(run, "old", 0, 99, verification=Verification.OK, verified_at=at(10))
        fresh = available(
            run, "fresh", 0, 99, verification=Verification.MISMATCH, verified_at=at(50)
        )
        adapter.store(
            waiting,
            elsewhere,
            never,
            old,
            fresh,
            artifact(run, "announced", verification=Verification.PENDING),
            artifact(run, "deleted", state=ArtifactState.DELETED),
        )
        with adapter.uow() as uow:
            pending = uow.artifacts.to_verify(10)
            assert {a.id for a in pending} == {waiting.id, elsewhere.id}
            assert uow.artifacts.to_verify(10, at(20))[2:] == [never, old]
            assert len(uow.artifacts.to_verify(3, at(60))) == 3
            assert {a.id for a in uow.artifacts.to_verify(10, at(60))[2:]} == {
                never.id,
                old.id,
                fresh.id,
            }
            checked = waiting.verified(Verification.OK, at(70))
            uow.artifacts.update(checked)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.artifacts.get(checked.workspace_id, checked.id) == checked
            assert [a.id for a in uow.artifacts.to_verify(10)] == [elsewhere.id]

    def test_artifacts_go_with_their_backup(self, adapter: Adapter) -> None:
        """Removing the backup removes its runs' artifacts."""
        workspace_id, owner, run = world(adapter)
        stored = artifact(run)
        adapter.store(stored)
        with adapter.uow() as uow:
            uow.backups.remove(workspace_id, owner.id)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.artifacts.get(workspace_id, stored.id) is None
