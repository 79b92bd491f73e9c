"""The backup aggregate: kind rules, activation, write-once retention, pause and resume,
schedules (api-spec sections 2-3, contract sections 5 and 10)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import attrs
import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

from strategies import (
    GRAMMAR_CRONS,
    INVALID_CRONS,
    INVALID_TIMEZONES,
    StoredConfig,
    accepted_changes_for,
    backup_changes,
    backup_kinds,
    credentials_for,
    customer_destinations,
    duration_spellings,
    kind_rule_violation,
    lock_exceeding_retention_policies,
    pooled_retention_policies,
    postgres_sources,
    retention_policies,
    s3_sources,
    schedules,
    wrong_credentials,
)
from strongroom.domain.backups import (
    UNSET,
    Backup,
    BackupChanges,
    BackupKind,
    BackupState,
    CheckedChanges,
    PostgresSource,
    RetentionPolicy,
    S3Source,
    Schedule,
    UnsupportedSource,
)
from strongroom.domain.durations import Duration
from strongroom.domain.errors import (
    InvalidRequestError,
    InvalidStateError,
    LockExceedsExpiryError,
    RetentionImmutableError,
    StrongroomError,
    ValidationFailedError,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
WORKER = UUID(int=7)
S3 = S3Source(endpoint="https://s3.example.com", bucket="data")
S3_KEYS = {"access_key_id": "AKIA", "secret_access_key": "secret"}
PG = PostgresSource(host="db.example.com", port=5432, database="app")
PG_KEYS = {"username": "app", "password": "secret"}


def policy(expire_after: str, lock_for: str) -> RetentionPolicy:
    """A retention policy from two ISO 8601 texts."""
    return RetentionPolicy(Duration.parse(expire_after), Duration.parse(lock_for))


def draft(kind: BackupKind) -> Backup:
    """A new backup of ``kind``."""
    return Backup.draft(UUID(int=1), UUID(int=2), "nightly", kind, NOW)


def patch(
    backup: Backup, at: datetime = NOW, *, worker_exists: bool = True, **fields: Any
) -> Backup:
    """Check the kind rules and apply a PATCH, sealing secrets as the use case does."""
    changes = BackupChanges(**fields)
    return backup.apply(
        backup.check_kind_rules(changes, worker_exists=worker_exists),
        at,
        sealed_credentials=None if changes.credentials is UNSET else b"sealed",
        sealed_destination_credentials=None
        if changes.destination_credentials is UNSET
        else b"sealed-destination",
    )


def complete_by_contract(backup: Backup) -> bool:
    """Contract section 5: cloud needs source, credentials and retention; local needs
    worker_id and retention; manual needs retention."""
    if backup.retention is None:
        return False
    if backup.kind is BackupKind.CLOUD:
        return backup.source is not None and backup.has_credentials
    if backup.kind is BackupKind.LOCAL:
        return backup.worker_id is not None
    return True


@st.composite
def stored_backups(draw: st.DrawFn) -> Backup:
    """A backup as it can be stored: any kind, with any configuration its kind allows."""
    kind = draw(backup_kinds())
    fields: dict[str, Any] = {"paused": draw(st.booleans())}
    if kind is BackupKind.CLOUD and draw(st.booleans()):
        fields["source"] = draw(st.one_of(s3_sources(), postgres_sources()))
        fields["sealed_credentials"] = draw(st.sampled_from([None, b"sealed"]))
    if kind is BackupKind.LOCAL:
        fields["worker_id"] = draw(st.none() | st.uuids())
    if kind is not BackupKind.MANUAL:
        fields["schedule"] = draw(st.none() | schedules())
    fields["retention"] = draw(st.none() | retention_policies())
    if draw(st.booleans()):
        fields["destination"] = draw(customer_destinations())
        fields["sealed_destination_credentials"] = b"sealed-destination"
    backup = attrs.evolve(draft(kind), **fields)
    if complete_by_contract(backup):
        backup = attrs.evolve(backup, state=BackupState.ACTIVE)
    return backup.rescheduled(NOW)


@attrs.frozen
class Step:
    """One thing done to a backup in a history, and what came of it."""

    action: str
    changes: BackupChanges | None
    before: Backup
    after: Backup
    refused: StrongroomError | None


Op = tuple[str, BackupChanges | None]
History = tuple[BackupKind, bool, list[Op]]


@st.composite
def histories(draw: st.DrawFn) -> History:
    """A kind, whether ``worker_id``s name a worker, and a list of PATCHes (arbitrary and
    kind-appropriate ones, with retention drawn from a pool so that re-sends and
    conflicts are frequent), pauses and resumes."""
    kind = draw(backup_kinds())
    worker_exists = draw(st.booleans())
    retentions = pooled_retention_policies()
    patches: st.SearchStrategy[Op] = st.one_of(
        backup_changes(worker_ids=st.just(WORKER), retentions=retentions),
        accepted_changes_for(kind, worker_ids=st.just(WORKER), retentions=retentions),
    ).map(lambda changes: ("patch", changes))
    toggles: st.SearchStrategy[Op] = st.sampled_from([("pause", None), ("resume", None)])
    steps = draw(st.lists(st.one_of(patches, patches, toggles), max_size=12))
    return kind, worker_exists, steps


def play(kind: BackupKind, worker_exists: bool, steps: list[Op]) -> Iterator[Step]:
    """Run a history on a new backup, one minute apart; refused PATCHes change nothing."""
    backup = draft(kind)
    for number, (action, changes) in enumerate(steps, start=1):
        at = NOW + timedelta(minutes=number)
        refused: StrongroomError | None = None
        after = backup
        try:
            if changes is None:
                after = backup.paused_as(action == "pause", at)
            else:
                backup.check_kind_rules(changes, worker_exists=worker_exists)
                after = patch(backup, at, worker_exists=worker_exists, **_fields(changes))
        except StrongroomError as error:
            refused = error
        note(f"{action} {changes} -> {type(refused).__name__ if refused else after.state}")
        yield Step(action, changes, backup, after, refused)
        backup = after


def _fields(changes: BackupChanges) -> dict[str, Any]:
    return {name: getattr(changes, name) for name in changes.mentioned()}


class TestKindRules:
    """``check_kind_rules`` refuses exactly what the kind rules refuse (422)."""

    @given(stored_backups(), backup_changes(), st.booleans())
    def test_refuses_exactly_what_the_contract_refuses(
        self, backup: Backup, changes: BackupChanges, worker_exists: bool
    ) -> None:
        """For any stored backup and any PATCH, a refusal happens iff the contract's rules
        name a reason, and it is always ``validation_failed``."""
        reason = kind_rule_violation(StoredConfig.of(backup), changes, worker_exists=worker_exists)
        note(f"kind={backup.kind} expected refusal: {reason}")
        event(reason or "accepted")
        if reason is None:
            backup.check_kind_rules(changes, worker_exists=worker_exists)
        else:
            with pytest.raises(ValidationFailedError):
                backup.check_kind_rules(changes, worker_exists=worker_exists)

    @given(backup_kinds().flatmap(lambda k: st.tuples(st.just(k), accepted_changes_for(k))))
    def test_kind_appropriate_patches_are_accepted(
        self, case: tuple[BackupKind, BackupChanges]
    ) -> None:
        """What each kind is documented to take is never refused on a new backup."""
        kind, changes = case
        draft(kind).check_kind_rules(changes, worker_exists=True)

    @pytest.mark.parametrize(
        ("kind", "fields", "message"),
        [
            (BackupKind.CLOUD, {"worker_id": WORKER}, "worker_id is allowed only on a local"),
            (BackupKind.MANUAL, {"worker_id": WORKER}, "worker_id is allowed only on a local"),
            (BackupKind.LOCAL, {"source": S3}, "source is refused on a local backup"),
            (BackupKind.MANUAL, {"source": PG}, "source is refused on a manual backup"),
            (BackupKind.LOCAL, {"credentials": S3_KEYS}, "credentials is refused on a local"),
            (BackupKind.MANUAL, {"schedule": None}, "schedule is refused on a manual backup"),
            (BackupKind.CLOUD, {"source": UnsupportedSource("ftp")}, "source type ftp"),
            (BackupKind.CLOUD, {"source": S3, "credentials": PG_KEYS}, "credentials for an s3"),
            (BackupKind.CLOUD, {"credentials": S3_KEYS}, "credentials need a source"),
        ],
    )
    def test_each_rule_says_what_is_refused(
        self, kind: BackupKind, fields: dict[str, Any], message: str
    ) -> None:
        """Each kind rule is refused with ``validation_failed`` and a message naming it."""
        with pytest.raises(ValidationFailedError, match=message):
            draft(kind).check_kind_rules(BackupChanges(**fields), worker_exists=True)

    def test_an_unknown_worker_is_refused(self) -> None:
        """A ``worker_id`` that names no worker of the workspace is 422."""
        with pytest.raises(ValidationFailedError, match="names no worker"):
            draft(BackupKind.LOCAL).check_kind_rules(
                BackupChanges(worker_id=WORKER), worker_exists=False
            )

    def test_credentials_follow_the_stored_source(self) -> None:
        """Credentials sent alone must fit the source already stored."""
        with_source = patch(draft(BackupKind.CLOUD), source=PG)
        assert patch(with_source, credentials=PG_KEYS).has_credentials
        with pytest.raises(ValidationFailedError):
            with_source.check_kind_rules(BackupChanges(credentials=S3_KEYS), worker_exists=False)


class TestApplyTakesCheckedChanges:
    """``apply`` takes only changes the kind rules passed, for the backup it changes."""

    def test_checked_changes_come_only_from_the_kind_rules(self) -> None:
        """A ``CheckedChanges`` made by hand is refused: apply cannot skip the rules."""
        backup = draft(BackupKind.LOCAL)
        with pytest.raises(TypeError):
            CheckedChanges(backup, BackupChanges(source=S3), object())

    def test_changes_checked_against_another_state_are_refused(self) -> None:
        """Changes checked before the backup changed are not applied to the new state:
        the rules depend on what is stored (credentials follow the stored source)."""
        backup = draft(BackupKind.CLOUD)
        checked = backup.check_kind_rules(BackupChanges(source=PG), worker_exists=False)
        moved_on = patch(backup, source=S3)
        with pytest.raises(ValueError, match="another backup"):
            moved_on.apply(checked, NOW)


class TestCredentialShapes:
    """Credentials of no source type's shape are malformed (400) when the changes are built,
    before any kind rule; a known shape that does not fit the source is a kind rule (422)."""

    @given(wrong_credentials())
    def test_no_changes_hold_credentials_of_no_known_shape(self, given: dict[str, str]) -> None:
        """Missing, unknown or mixed keys: ``invalid_request`` naming ``credentials``."""
        with pytest.raises(InvalidRequestError, match="credentials"):
            BackupChanges(credentials=given)

    @given(st.one_of(wrong_credentials(), credentials_for("postgres")))
    def test_destination_credentials_take_only_the_s3_shape(self, given: dict[str, str]) -> None:
        """A customer bucket's credentials are S3 credentials; anything else is 400."""
        with pytest.raises(InvalidRequestError, match="destination_credentials"):
            BackupChanges(destination_credentials=given)

    @pytest.mark.parametrize(
        ("given", "message"),
        [
            ({"user": "secret-1", "password": "secret-2"}, "unknown field: credentials.user"),
            ({"username": "secret-1"}, "missing field: credentials.password"),
            ({"access_key_id": "secret-1"}, "missing field: credentials.secret_access_key"),
            ({}, r"expected \{access_key_id, secret_access_key\} or \{password, username\}"),
            ({"access_key_id": "secret-1", "password": "secret-2"}, "expected"),
        ],
    )
    def test_the_message_names_the_keys(self, given: dict[str, str], message: str) -> None:
        """The refusal names unknown or missing keys (never a value)."""
        with pytest.raises(InvalidRequestError, match=message) as refused:
            BackupChanges(credentials=given)
        assert all(value not in refused.value.message for value in given.values())

    @pytest.mark.parametrize("source_type", ["s3", "postgres"])
    def test_either_source_types_shape_is_well_formed(self, source_type: str) -> None:
        """Both shapes build changes; whether they fit the source is judged later."""
        keys = S3_KEYS if source_type == "s3" else PG_KEYS
        assert BackupChanges(credentials=keys).credentials == keys
        assert BackupChanges(destination_credentials=S3_KEYS).destination_credentials == S3_KEYS


class TestActivation:
    """A backup becomes ``active`` in the PATCH that completes its kind's configuration."""

    @given(histories())
    def test_active_exactly_when_the_configuration_is_complete(self, history: History) -> None:
        """After every step the state is ``active`` iff the kind's configuration is
        complete (cloud: source, credentials, retention; local: worker and retention;
        manual: retention), and an active backup never goes back to ``draft``."""
        for step in play(*history):
            assert (step.after.state is BackupState.ACTIVE) == complete_by_contract(step.after)
            if step.before.state is BackupState.ACTIVE:
                assert step.after.state is BackupState.ACTIVE

    def test_manual_needs_only_retention(self) -> None:
        """A manual backup is active as soon as it has a retention policy."""
        assert patch(draft(BackupKind.MANUAL), retention=policy("P30D", "P7D")).state is (
            BackupState.ACTIVE
        )

    def test_local_needs_a_worker_and_retention(self) -> None:
        """A local backup with retention but no worker stays a draft until a worker is set."""
        with_retention = patch(draft(BackupKind.LOCAL), retention=policy("P30D", "PT0S"))
        assert with_retention.state is BackupState.DRAFT
        assert patch(with_retention, worker_id=WORKER).state is BackupState.ACTIVE

    def test_cloud_needs_source_credentials_and_retention(self) -> None:
        """A cloud backup stays a draft without any one of the three."""
        backup = draft(BackupKind.CLOUD)
        backup = patch(backup, retention=policy("P30D", "PT0S"))
        assert backup.state is BackupState.DRAFT
        backup = patch(backup, source=S3)
        assert backup.state is BackupState.DRAFT
        backup = patch(backup, credentials=S3_KEYS)
        assert backup.state is BackupState.ACTIVE
        assert backup.has_credentials
        assert backup.sealed_credentials == b"sealed"


class TestRetention:
    """Retention is write-once, and a lock never outlasts the expiry."""

    @given(histories())
    def test_retention_is_write_once_across_many_patches(self, history: History) -> None:
        """Once set, retention never changes: an identical re-send is accepted, any other
        policy is refused with ``retention_immutable`` and changes nothing."""
        first: RetentionPolicy | None = None
        for step in play(*history):
            sent = None if step.changes is None else step.changes.retention
            if isinstance(step.refused, RetentionImmutableError):
                assert first is not None
                assert sent != first
            if step.refused is None and isinstance(sent, RetentionPolicy):
                assert first is None or sent == first
                first = first or sent
            if first is not None:
                assert step.after.retention == first
            if isinstance(sent, RetentionPolicy) and first is not None and sent == first:
                assert not isinstance(step.refused, RetentionImmutableError)

    @given(histories())
    def test_lock_never_exceeds_expiry_in_any_accepted_state(self, history: History) -> None:
        """No sequence of PATCHes leaves a backup whose lock outlasts its expiry; a policy
        that would is refused with ``lock_exceeds_expiry``."""
        for step in play(*history):
            retention = step.after.retention
            if retention is not None:
                assert retention.lock_for <= retention.expire_after
            sent = None if step.changes is None else step.changes.retention
            if isinstance(sent, RetentionPolicy) and sent.lock_for > sent.expire_after:
                assert step.refused is not None

    @given(retention_policies(), st.data())
    def test_an_identical_policy_in_another_spelling_is_accepted(
        self, retention: RetentionPolicy, data: st.DataObject
    ) -> None:
        """Durations compare as seconds, so re-sending ``P1W`` for ``P7D`` is identical."""
        backup = patch(draft(BackupKind.MANUAL), retention=retention)
        again = RetentionPolicy(
            Duration.parse(data.draw(duration_spellings(retention.expire_after))),
            Duration.parse(data.draw(duration_spellings(retention.lock_for))),
        )
        assert patch(backup, retention=again).retention == retention

    @given(retention_policies(), retention_policies())
    def test_a_different_policy_is_refused(
        self, first: RetentionPolicy, second: RetentionPolicy
    ) -> None:
        """Any policy other than the stored one is 409 ``retention_immutable``."""
        backup = patch(draft(BackupKind.LOCAL), retention=first)
        if second == first:
            assert patch(backup, retention=second) is backup
            return
        with pytest.raises(RetentionImmutableError) as refused:
            patch(backup, retention=second)
        assert refused.value.code == "retention_immutable"

    @given(lock_exceeding_retention_policies())
    def test_a_lock_longer_than_the_expiry_is_refused(self, retention: RetentionPolicy) -> None:
        """``lock_for`` > ``expire_after`` is 422 ``lock_exceeds_expiry``, first set or not."""
        with pytest.raises(LockExceedsExpiryError) as refused:
            patch(draft(BackupKind.MANUAL), retention=retention)
        assert refused.value.code == "lock_exceeds_expiry"

    @pytest.mark.parametrize(
        ("sent", "shown"),
        [
            (
                {"expire_after": "P30D", "lock_for": "PT0S"},
                {"expire_after": "P30D", "lock_for": "PT0S"},
            ),
            (
                {"expire_after": "P4W", "lock_for": "P0D"},
                {"expire_after": "P28D", "lock_for": "PT0S"},
            ),
            (
                {"expire_after": "PT90M", "lock_for": "PT90M"},
                {"expire_after": "PT1H30M", "lock_for": "PT1H30M"},
            ),
            (
                {"expire_after": "P1DT0H", "lock_for": "PT1S"},
                {"expire_after": "P1D", "lock_for": "PT1S"},
            ),
        ],
    )
    def test_canonical_forms(self, sent: dict[str, str], shown: dict[str, str]) -> None:
        """Each accepted policy comes back canonical; a lock equal to the expiry is allowed
        (moved from the HTTP tests; the wire renders these same texts)."""
        stored = patch(draft(BackupKind.MANUAL), retention=policy(**sent)).retention
        assert stored is not None
        rendered = {"expire_after": str(stored.expire_after), "lock_for": str(stored.lock_for)}
        assert rendered == shown

    def test_lock_equal_to_expiry_and_no_lock_are_accepted(self) -> None:
        """``lock_for`` may equal ``expire_after``; ``PT0S`` means no lock."""
        assert patch(draft(BackupKind.MANUAL), retention=policy("P1W", "P7D")).retention
        assert patch(draft(BackupKind.MANUAL), retention=policy("P1D", "PT0S")).retention

    def test_expiry_must_be_longer_than_zero(self) -> None:
        """``expire_after`` of zero is 400 ``invalid_request``."""
        with pytest.raises(InvalidRequestError, match="expire_after"):
            policy("PT0S", "PT0S")


class TestPauseAndSchedule:
    """Pause and resume are idempotent, keep the state, and stop scheduling."""

    @given(stored_backups(), st.booleans())
    def test_pause_and_resume_are_idempotent_and_keep_the_state(
        self, backup: Backup, paused: bool
    ) -> None:
        """Asking twice is the same as asking once, and ``state`` never changes."""
        later = NOW + timedelta(hours=1)
        once = backup.paused_as(paused, later)
        assert once.paused is paused
        assert once.state is backup.state
        assert once.paused_as(paused, later + timedelta(hours=1)) is once

    @given(histories())
    def test_next_run_only_when_active_unpaused_and_scheduled(self, history: History) -> None:
        """``next_run_at`` is set iff the backup is active, not paused and has a schedule,
        and then it lies after the backup's last change."""
        for step in play(*history):
            backup = step.after
            runs = (
                backup.state is BackupState.ACTIVE
                and not backup.paused
                and backup.schedule is not None
            )
            assert (backup.next_run_at is not None) == runs
            if backup.next_run_at is not None:
                assert backup.next_run_at > backup.updated_at

    def test_pausing_a_draft_is_allowed(self) -> None:
        """``pause`` on a draft is allowed (contract section 10) and keeps it a draft."""
        paused = draft(BackupKind.LOCAL).paused_as(True, NOW)
        assert paused.paused
        assert paused.state is BackupState.DRAFT

    def test_resume_schedules_the_next_run_again(self) -> None:
        """Pausing clears the next run; resuming computes it from the time of resuming."""
        active = patch(
            draft(BackupKind.LOCAL),
            worker_id=WORKER,
            retention=policy("P30D", "PT0S"),
            schedule=Schedule("0 3 * * *", "UTC"),
        )
        assert active.next_run_at == datetime(2026, 1, 1, 3, tzinfo=UTC)
        paused = active.paused_as(True, NOW + timedelta(hours=1))
        assert paused.next_run_at is None
        resumed = paused.paused_as(False, NOW + timedelta(hours=5))
        assert resumed.next_run_at == datetime(2026, 1, 2, 3, tzinfo=UTC)

    def test_only_active_unpaused_backups_can_run(self) -> None:
        """A new run of a draft or a paused backup is 409 ``invalid_state``."""
        with pytest.raises(InvalidStateError, match="draft"):
            draft(BackupKind.MANUAL).ensure_runnable()
        active = patch(draft(BackupKind.MANUAL), retention=policy("P1D", "PT0S"))
        active.ensure_runnable()
        with pytest.raises(InvalidStateError, match="paused"):
            active.paused_as(True, NOW).ensure_runnable()


class TestScheduleValues:
    """A schedule is a 5-field cron that fires, in an IANA time zone; anything else is 400."""

    @pytest.mark.parametrize("cron", INVALID_CRONS)
    def test_bad_crons_are_invalid_requests(self, cron: str) -> None:
        """Wrong field counts, out-of-range fields, nicknames and dates that never come
        (30 February) are refused before they are stored."""
        with pytest.raises(InvalidRequestError, match=r"schedule\.cron"):
            Schedule(cron, "UTC")

    @pytest.mark.parametrize("cron", GRAMMAR_CRONS)
    def test_the_contracts_grammar_is_accepted(self, cron: str) -> None:
        """Numbers, ``*``, ranges, steps within the field's range, lists and English month
        and weekday names (any case) make a schedule (contract 13)."""
        assert Schedule(cron, "UTC").next_after(NOW) > NOW

    @pytest.mark.parametrize(
        ("cron", "field", "token"),
        [
            ("0 0 L * *", "day-of-month", "L"),
            ("0 0 * * 1#2", "day-of-week", "#"),
            ("*/60 * * * *", "minute", "*/60"),
            ("0 0 * 13 *", "month", "13"),
        ],
    )
    def test_the_refusal_names_the_field_not_the_text(
        self, cron: str, field: str, token: str
    ) -> None:
        """The message names the cron field at fault and what it takes, never the text."""
        with pytest.raises(InvalidRequestError, match=f"the {field} field takes") as refused:
            Schedule(cron, "UTC")
        assert token not in refused.value.message

    @pytest.mark.parametrize("zone", INVALID_TIMEZONES)
    def test_bad_time_zones_are_invalid_requests(self, zone: str) -> None:
        """Unknown zones, path tricks and folders of the zone database are refused."""
        with pytest.raises(InvalidRequestError, match=r"schedule\.timezone"):
            Schedule("0 3 * * *", zone)

    @given(st.text(max_size=30), st.text(max_size=30))
    def test_any_text_is_a_schedule_or_an_invalid_request(self, cron: str, zone: str) -> None:
        """No cron or zone text fails with another error; an accepted schedule can always
        compute its next run."""
        try:
            schedule = Schedule(cron, zone)
        except InvalidRequestError:
            return
        assert schedule.next_after(NOW) > NOW

    @given(schedules(), st.datetimes(min_value=datetime(2000, 1, 1), timezones=st.just(UTC)))
    def test_the_next_run_is_strictly_later_and_in_utc(
        self, schedule: Schedule, moment: datetime
    ) -> None:
        """``next_after`` gives a UTC instant strictly after the moment."""
        following = schedule.next_after(moment)
        assert following > moment
        assert following.utcoffset() == timedelta(0)
