"""``worker``, ``api-key``, ``restore-job`` and ``artifact show|verify`` against
``strongroom serve`` over a socket: what a person reads, what a script parses with
``--json``, and the exit codes of docs/clients.md (0 done, 1 refused, 2 usage)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from uuid import uuid4

import test_cli_client as live_server

from strongroom.client import Client, Retention
from support.client_people import admin_in_new_workspace

# The live server's fixtures and helpers, shared with test_cli_client.
live, url, config_home, person = (
    live_server.live,
    live_server.url,
    live_server.config_home,
    live_server.person,
)
as_json, strongroom, upload_run = (
    live_server.as_json,
    live_server.strongroom,
    live_server.upload_run,
)


def ready_backup(person: Client, name: str) -> str:
    """A manual backup with a retention (no longer a draft); its id."""
    workspace_id = person.get_me().workspace_id
    assert workspace_id is not None
    backup = person.create_backup(workspace_id, name, "manual")
    person.update_backup(backup.id, retention=Retention("P7D"))
    return str(backup.id)


class TestWorkers:
    """``worker list|create|show|delete``."""

    def test_create_prints_the_token_once_for_the_agent(self, person: Client, url: str) -> None:
        """Standard output holds only the token (``> token`` keeps it), standard error says
        it is shown once; the token works as the worker; list and show never show it."""
        created = strongroom("worker", "create", "rack-1")
        assert created.exit_code == 0, created.stderr
        token = created.stdout.strip()
        assert re.fullmatch(r"bkw_\S+", token)
        assert "shown only once" in created.stderr
        with Client(url, token) as agent:
            assert agent.claim_run(wait_seconds=0) is None
        (listed,) = as_json(strongroom("worker", "list", "--json"))
        assert listed["name"] == "rack-1"
        assert "token" not in listed
        table = strongroom("worker", "list")
        assert "rack-1" in table.stdout
        assert token not in table.stdout
        shown = as_json(strongroom("worker", "show", listed["id"], "--json"))
        assert shown == listed

    def test_the_agent_setup_takes_cli_commands_alone(self, person: Client, url: str) -> None:
        """docs/clients.md's setup: the token from ``worker create``, a local backup
        assigned to the worker with ``backup set``; a triggered run is the worker's to
        claim."""
        token = strongroom("worker", "create", "rack-3").stdout.strip()
        (worker,) = as_json(strongroom("worker", "list", "--json"))
        created = strongroom(
            "backup", "create", "nightly", "--kind", "local", "--format", "archive"
        )
        assert created.exit_code == 0, created.stderr
        assigned = strongroom(
            "backup",
            "set",
            "nightly",
            "--worker",
            worker["id"],
            "--expire-after",
            "P30D",
            "--lock-for",
            "P7D",
        )
        assert assigned.exit_code == 0, assigned.stderr
        run = as_json(strongroom("backup", "trigger", "nightly", "--json"))
        with Client(url, token) as agent:
            claim = agent.claim_run(wait_seconds=5)
        assert claim is not None
        assert str(claim.run.id) == run["id"]

    def test_json_create_and_delete(self, person: Client) -> None:
        """``--json`` answers the worker with its token; after ``delete --yes`` a show of
        it exits 1 with the API's ``not_found``."""
        created = as_json(strongroom("worker", "create", "rack-2", "--json"))
        assert created["name"] == "rack-2"
        assert created["token"].startswith("bkw_")
        deleted = as_json(strongroom("worker", "delete", created["id"], "--yes", "--json"))
        assert deleted == {"deleted": created["id"]}
        gone = strongroom("worker", "show", created["id"])
        assert gone.exit_code == 1
        assert "not_found" in gone.stderr

    def test_agent_once_as_json(self, person: Client, url: str, tmp_path: Path) -> None:
        """``agent --once --json``: ``{"handled": 0}`` when nothing is queued; a token the
        server refuses is the error envelope and exit 1."""
        created = as_json(strongroom("worker", "create", "rack-j", "--json"))
        config = tmp_path / "agent.toml"
        for token, exit_code in ((created["token"], 0), ("bkw_not-a-real-token", 1)):
            config.write_text(
                f'server = "{url}"\ntoken = "{token}"\nstate_dir = "{tmp_path / "state"}"\n\n'
                f'[[backups]]\nid = "{uuid4()}"\npaths = ["{tmp_path}"]\n'
            )
            config.chmod(0o600)  # it holds the token: the agent refuses it readable by others
            ran = strongroom("agent", "--once", "--config", str(config), "--json")
            assert ran.exit_code == exit_code, ran.stdout
            said = json.loads(ran.stdout)
            if exit_code == 0:
                assert said == {"handled": 0}
            else:
                assert said["error"]["code"] == "unauthenticated"

    def test_unknown_names_exit_1_and_usage_errors_2(self, person: Client) -> None:
        """A worker is named by id, name or id prefix: one that names none exits 1 (as an
        unknown backup does); a missing name is a usage error."""
        unknown = strongroom("worker", "show", "not-a-worker")
        assert unknown.exit_code == 1
        assert unknown.stderr == "strongroom: error: no worker named 'not-a-worker'\n"
        assert strongroom("worker", "create").exit_code == 2


def short_ids(table: str) -> list[str]:
    """The first column of a table as printed (its header left out)."""
    return [line.split()[0] for line in table.splitlines()[1:]]


class TestShortIds:
    """The id a table prints (its first 8 characters) is taken back by every command that
    names that object, resolved from the workspace's own list."""

    def test_worker_show_delete_and_backup_set_take_the_printed_id(self, person: Client) -> None:
        strongroom("worker", "create", "rack-a")
        strongroom("worker", "create", "rack-b")
        workers = {w["name"]: w for w in as_json(strongroom("worker", "list", "--json"))}
        printed = short_ids(strongroom("worker", "list").stdout)
        assert sorted(printed) == sorted(w["id"][:8] for w in workers.values())
        a = workers["rack-a"]
        assert as_json(strongroom("worker", "show", a["id"][:8], "--json")) == a
        assert as_json(strongroom("worker", "show", "RACK-A", "--json")) == a
        strongroom("backup", "create", "site", "--kind", "local", "--format", "archive")
        assigned = strongroom("backup", "set", "site", "--worker", a["id"][:8], "--json")
        assert as_json(assigned)["worker_id"] == a["id"]
        deleted = strongroom("worker", "delete", workers["rack-b"]["id"][:8], "--yes", "--json")
        assert as_json(deleted) == {"deleted": workers["rack-b"]["id"]}
        assert [w["name"] for w in as_json(strongroom("worker", "list", "--json"))] == ["rack-a"]

    def test_api_key_revoke_takes_the_printed_id_and_names_the_candidates(
        self, person: Client
    ) -> None:
        """Two keys of one name: the name is ambiguous (exit 1, both ids named, JSON with
        ``--json``); the printed id revokes one."""
        first = as_json(strongroom("api-key", "create", "ci", "-p", "backups:read", "--json"))
        second = as_json(strongroom("api-key", "create", "ci", "-p", "runs:read", "--json"))
        ambiguous = strongroom("api-key", "revoke", "ci", "--yes")
        assert ambiguous.exit_code == 1
        assert ambiguous.stderr.startswith("strongroom: error: 'ci' names more than one API key")
        assert first["id"] in ambiguous.stderr
        assert second["id"] in ambiguous.stderr
        as_script = strongroom("api-key", "revoke", "ci", "--yes", "--json")
        assert as_script.exit_code == 1
        assert json.loads(as_script.stdout)["error"]["code"] == "ambiguous"
        assert first["id"][:8] in short_ids(strongroom("api-key", "list").stdout)
        revoked = strongroom("api-key", "revoke", first["id"][:8], "--yes", "--json")
        assert as_json(revoked) == {"revoked": first["id"]}
        (left,) = as_json(strongroom("api-key", "list", "--json"))
        assert left["id"] == second["id"]
        unknown = strongroom("api-key", "revoke", "0000", "--yes")
        assert unknown.exit_code == 1
        assert "no API key named or with an id starting with '0000'" in unknown.stderr

    def test_prefixes_are_looked_up_in_the_callers_workspace_only(
        self, person: Client, url: str
    ) -> None:
        """Another workspace's worker is not found by its prefix (exit 1), by its whole id
        the API refuses it (exit 1)."""
        with Client(url) as anonymous:
            other = admin_in_new_workspace(anonymous, "short-ids-other@example.com")
            theirs = other.create_worker("theirs")
            other.close()
        for ref in (str(theirs.id)[:8], "theirs", str(theirs.id)):
            refused = strongroom("worker", "show", ref)
            assert refused.exit_code == 1, ref
            assert "theirs" not in refused.stdout

    def test_a_restore_is_named_by_its_whole_id(self, person: Client) -> None:
        """Restores are printed whole (no table lists them): a prefix is a usage error
        that says so."""
        refused = strongroom("restore-job", "show", "71aa")
        assert refused.exit_code == 2
        assert "give the whole id that `restore-job create` printed" in refused.stderr


class TestApiKeys:
    """``api-key list|create|revoke``."""

    def test_create_list_revoke(self, person: Client, url: str) -> None:
        """The key holds the permissions given and its token works until revoked."""
        created = as_json(strongroom("api-key", "create", "ci", "-p", "backups:read", "--json"))
        assert created["permissions"] == ["backups:read"]
        with Client(url, created["token"]) as key:
            assert key.get_me().workspace_id is not None
        (listed,) = as_json(strongroom("api-key", "list", "--json"))
        assert listed["id"] == created["id"]
        assert "token" not in listed
        revoked = strongroom("api-key", "revoke", created["id"], "--yes")
        assert revoked.exit_code == 0, revoked.stderr
        assert f"Revoked API key {created['id']}" in revoked.stdout
        assert as_json(strongroom("api-key", "list", "--json")) == []

    def test_human_create_prints_only_the_token(self, person: Client) -> None:
        created = strongroom("api-key", "create", "script", "-p", "artifacts:read")
        assert created.exit_code == 0, created.stderr
        assert re.fullmatch(r"bkk_\S+", created.stdout.strip())

    def test_refusals(self, person: Client) -> None:
        """An unknown permission is the API's refusal (exit 1); no ``-p`` is usage (2)."""
        unknown = strongroom("api-key", "create", "x", "-p", "no:such")
        assert unknown.exit_code == 1
        assert "strongroom: error:" in unknown.stderr
        assert strongroom("api-key", "create", "x").exit_code == 2
        assert strongroom("api-key", "revoke", str(uuid4()), "--yes").exit_code == 1


class TestArtifactShowVerify:
    """``artifact show|verify``."""

    def test_show_and_verify(self, person: Client) -> None:
        """``show`` answers what the list shows; ``verify`` asks for a re-read and answers
        the artifact, its verification ``pending``."""
        artifact_id = str(upload_run(person, ready_backup(person, "shown"), b"shown", "s.bin"))
        shown = as_json(strongroom("artifact", "show", artifact_id, "--json"))
        (listed,) = as_json(strongroom("artifact", "list", "--json"))
        assert shown == listed
        lines = strongroom("artifact", "show", artifact_id)
        assert "s.bin" in lines.stdout
        assert "sha256" in lines.stdout
        verified = as_json(strongroom("artifact", "verify", artifact_id, "--json"))
        assert (verified["id"], verified["verification"]) == (artifact_id, "pending")
        said = strongroom("artifact", "verify", artifact_id)
        assert said.stdout.strip() == f"artifact {artifact_id} verification pending"

    def test_an_unknown_artifact_exits_1(self, person: Client) -> None:
        for verb in ("show", "verify"):
            missing = strongroom("artifact", verb, str(uuid4()))
            assert missing.exit_code == 1
            assert "not_found" in missing.stderr


class TestRestoreJobs:
    """``restore-job create|show|wait`` (a whole restore into a bucket:
    tests/integration, on SeaweedFS)."""

    TARGET = json.dumps({"type": "s3", "endpoint": "http://127.0.0.1:9", "bucket": "back"})
    CREDENTIALS = json.dumps({"access_key_id": "id", "secret_access_key": "secret"})

    def test_a_manual_backups_artifact_is_refused(self, person: Client) -> None:
        """The service restores only cloud artifacts: the API's refusal, exit 1; with
        ``--json`` the refusal is JSON."""
        artifact_id = str(upload_run(person, ready_backup(person, "local"), b"manual", "m.bin"))
        args = ("restore-job", "create", artifact_id, "--target", self.TARGET)
        refused = strongroom(*args, "--credentials-stdin", stdin=self.CREDENTIALS)
        assert refused.exit_code == 1
        assert "strongroom: error:" in refused.stderr
        as_script = strongroom(*args, "--credentials-stdin", "--json", stdin=self.CREDENTIALS)
        assert as_script.exit_code == 1
        assert "error" in json.loads(as_script.stdout or as_script.stderr)

    def test_usage_and_unknown_ids(self, person: Client) -> None:
        """Bad target JSON is usage (2); an unknown restore exits 1 for show and wait."""
        bad = strongroom(
            "restore-job",
            "create",
            str(uuid4()),
            "--target",
            "{nope",
            "--credentials-stdin",
            stdin=self.CREDENTIALS,
        )
        assert bad.exit_code == 2
        for verb in ("show", "wait"):
            missing = strongroom("restore-job", verb, str(uuid4()))
            assert missing.exit_code == 1
            assert "not_found" in missing.stderr
