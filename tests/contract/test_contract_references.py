"""The repository contract of snapshot references (contract 14) and of the look-ups that
batches and references make: every adapter finds, records and lists the same."""

from __future__ import annotations

from uuid import uuid4

import attrs
from contract_records import T0, Adapter, at, backup, user, workspace
from test_contract_artifacts import artifact, available

from strongroom.domain.artifacts import ArtifactState
from strongroom.domain.encryption import Encryption
from strongroom.domain.pagination import PageRequest
from strongroom.domain.runs import Run

RECIPIENT = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
OTHER = "age19z6knhe43g4jxkugekvjznurg4qcf7pelrhyjmmcq5htrhdwe4mq6g28jl"


class TestReferences:
    """get_many, lock_until, add_references, references_of_backup, referrers."""

    def test_references_are_recorded_once_and_listed_by_run(self, adapter: Adapter) -> None:
        """Each (run, artifact) pair once; listed per referencing run of the backup only."""
        ada = user()
        target = workspace(ada)
        owner, other = backup(target.id), backup(target.id, name="Other")
        first, second = Run.manual(uuid4(), owner, T0), Run.manual(uuid4(), owner, at(1))
        elsewhere = Run.manual(uuid4(), other, T0)
        adapter.store(ada, target, owner, other, first, second, elsewhere)
        pack, index = available(first, "pack-1", 10, 20), available(first, "index", 10, 20)
        foreign = available(elsewhere, "pack-2", 10, 20)
        adapter.store(pack, index, foreign)
        with adapter.uow() as uow:
            uow.artifacts.add_references(target.id, second.id, [pack.id, index.id])
            uow.artifacts.add_references(target.id, second.id, [pack.id])
            uow.artifacts.add_references(target.id, second.id, [])
            uow.commit()
        with adapter.uow() as uow:
            assert uow.artifacts.references_of_backup(target.id, owner.id) == {
                second.id: frozenset({pack.id, index.id})
            }
            assert uow.artifacts.references_of_backup(target.id, other.id) == {}
            assert uow.artifacts.references_of_backup(uuid4(), owner.id) == {}

    def test_referrers_count_each_referencing_runs_available_artifacts(
        self, adapter: Adapter
    ) -> None:
        """A referencing run with available artifacts counts them; deleted ones do not."""
        ada = user()
        target = workspace(ada)
        owner = backup(target.id)
        first, second = Run.manual(uuid4(), owner, T0), Run.manual(uuid4(), owner, at(1))
        adapter.store(ada, target, owner, first, second)
        pack = available(first, "pack", 10, 20)
        index = available(second, "index", 10, 20)
        gone = artifact(second, "manifest", state=ArtifactState.DELETED)
        adapter.store(pack, index, gone)
        with adapter.uow() as uow:
            assert uow.artifacts.referrers(target.id, pack.id) == {}
            uow.artifacts.add_references(target.id, second.id, [pack.id])
            uow.commit()
        with adapter.uow() as uow:
            assert uow.artifacts.referrers(target.id, pack.id) == {second.id: 1}
            assert uow.artifacts.referrers(uuid4(), pack.id) == {}
            uow.artifacts.update(index.deleted())
            uow.commit()
        with adapter.uow() as uow:
            assert uow.artifacts.referrers(target.id, pack.id) == {second.id: 0}

    def test_get_many_finds_this_workspaces_artifacts_only(self, adapter: Adapter) -> None:
        """Unknown ids and another workspace's artifacts are absent; each found once."""
        ada = user()
        target, elsewhere = workspace(ada), workspace(ada)
        owner, foreign_backup = backup(target.id), backup(elsewhere.id)
        run, foreign_run = Run.manual(uuid4(), owner, T0), Run.manual(uuid4(), foreign_backup, T0)
        adapter.store(ada, target, elsewhere, owner, foreign_backup, run, foreign_run)
        one, two = artifact(run, "a"), available(run, "b", 10, 20)
        foreign = artifact(foreign_run, "c")
        adapter.store(one, two, foreign)
        with adapter.uow() as uow:
            found = uow.artifacts.get_many(target.id, [two.id, one.id, foreign.id, uuid4(), one.id])
            assert found == {one.id: one, two.id: two}
            assert uow.artifacts.get_many(target.id, []) == {}

    def test_lock_until_sets_the_named_artifacts_locks(self, adapter: Adapter) -> None:
        """Only the named artifacts of the workspace change."""
        ada = user()
        target = workspace(ada)
        owner = backup(target.id)
        run = Run.manual(uuid4(), owner, T0)
        adapter.store(ada, target, owner, run)
        one, two = available(run, "a", 10, 20), available(run, "b", 10, 20)
        adapter.store(one, two)
        with adapter.uow() as uow:
            uow.artifacts.lock_until(target.id, [one.id], at(15))
            uow.artifacts.lock_until(uuid4(), [two.id], at(15))
            uow.commit()
        with adapter.uow() as uow:
            assert uow.artifacts.get(target.id, one.id) == attrs.evolve(one, locked_until=at(15))
            assert uow.artifacts.get(target.id, two.id) == two


class TestBackupEncryption:
    """A snapshot backup's encryption round-trips through every adapter."""

    def test_encryption_comes_back_equal(self, adapter: Adapter) -> None:
        """Added and replaced recipients read back in their order."""
        ada = user()
        target = workspace(ada)
        sealed = attrs.evolve(backup(target.id), encryption=Encryption([RECIPIENT]))
        adapter.store(ada, target, sealed)
        replaced = attrs.evolve(sealed, encryption=Encryption([OTHER, RECIPIENT]))
        with adapter.uow() as uow:
            assert uow.backups.get(target.id, sealed.id) == sealed
            uow.backups.update(replaced)
            uow.commit()
        with adapter.uow() as uow:
            assert uow.backups.get(target.id, sealed.id) == replaced
            assert uow.backups.list(target.id, PageRequest(10)).items == [replaced]
