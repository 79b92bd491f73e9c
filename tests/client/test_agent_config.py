"""The agent's TOML configuration: the example reads, mistakes are named."""

from __future__ import annotations

import tomllib
from pathlib import Path
from uuid import UUID

import pytest

from strongroom.client.agent_config import (
    EXAMPLE_CONFIG,
    ConfigError,
    load_config,
    parse_config,
)

BACKUP = "6f1c2a9e-0000-4000-8000-000000000001"


def write(tmp_path: Path, text: str) -> Path:
    """The configuration file, mode 0600 (it may hold the token)."""
    path = tmp_path / "agent.toml"
    path.write_text(text)
    path.chmod(0o600)
    return path


class TestConfig:
    """What ``strongroom agent --config FILE`` accepts."""

    def test_the_printed_example_is_a_valid_configuration(self, tmp_path: Path) -> None:
        """The example of ``--help`` reads once its token file exists."""
        data = tomllib.loads(EXAMPLE_CONFIG)
        data["token_file"] = str(tmp_path / "worker.token")
        (tmp_path / "worker.token").write_text("bkw_example\n")
        (tmp_path / "worker.token").chmod(0o600)
        config = parse_config(data, tmp_path)
        assert config.token == "bkw_example"
        assert config.backups[UUID(BACKUP)] == (Path("/srv/www"), Path("/etc/nginx"))
        assert (config.heartbeat_seconds, config.wait_seconds, config.parallel) == (15, 30, 4)

    @pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
    def test_a_token_file_others_can_read_is_refused(self, tmp_path: Path, mode: int) -> None:
        """Like the CLI's credentials file: the agent refuses a token file with group or
        other bits, and says how to fix it."""
        (tmp_path / "worker.token").write_text("bkw_example\n")
        (tmp_path / "worker.token").chmod(mode)
        data = {**tomllib.loads(EXAMPLE_CONFIG), "token_file": "worker.token"}
        with pytest.raises(
            ConfigError, match=f"readable by others \\(mode 0{mode:o}\\).*chmod 600"
        ):
            parse_config(data, tmp_path)

    @pytest.mark.parametrize("mode", [0o644, 0o640])
    def test_a_configuration_holding_the_token_others_can_read_is_refused(
        self, tmp_path: Path, mode: int
    ) -> None:
        """A file with ``token`` itself is a token file: readable by group or others it is
        refused, and the message says how to fix it without showing the token; at 0600
        it reads (issue 27, finding 12)."""
        path = write(
            tmp_path,
            f'server = "http://127.0.0.1:1/"\ntoken = "bkw_inline_secret"\n'
            f'[[backups]]\nid = "{BACKUP}"\npaths = ["data"]\n',
        )
        path.chmod(mode)
        with pytest.raises(ConfigError, match=f"mode 0{mode:o}.*chmod 600") as refused:
            load_config(path)
        assert "bkw_inline_secret" not in str(refused.value)
        path.chmod(0o600)
        assert load_config(path).token == "bkw_inline_secret"

    def test_relative_paths_are_relative_to_the_file(self, tmp_path: Path) -> None:
        (tmp_path / "secret").write_text("bkw_x")
        (tmp_path / "secret").chmod(0o600)
        path = write(
            tmp_path,
            f'server = "http://127.0.0.1:1/"\ntoken_file = "secret"\n'
            f'[[backups]]\nid = "{BACKUP}"\npaths = ["data"]\n',
        )
        config = load_config(path)
        assert config.server == "http://127.0.0.1:1"
        assert config.backups[UUID(BACKUP)] == (tmp_path / "data",)

    def test_the_token_is_not_shown(self, tmp_path: Path) -> None:
        config = parse_config(
            {
                "server": "http://x",
                "token": "bkw_secret",
                "backups": [{"id": BACKUP, "paths": ["/"]}],
            },
            tmp_path,
        )
        assert "bkw_secret" not in repr(config)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("server = ", "not valid TOML"),
            ('server = "x"', "`server` must be"),
            ('server = "http://x"\ntoken = "bkw_a"\ntoken_file = "f"', "exactly one of"),
            ('server = "http://x"\ntoken = "sk_live_a"', "worker credential"),
            ('server = "http://x"\ntoken_file = "absent"', "cannot read"),
            ('server = "http://x"\ntoken = "bkw_a"', "at least one [[backups]]"),
            (
                'server = "http://x"\ntoken = "bkw_a"\n[[backups]]\nid = "nope"\npaths = ["/"]',
                "`id` is not a UUID",
            ),
            (
                f'server = "http://x"\ntoken = "bkw_a"\n[[backups]]\nid = "{BACKUP}"\npaths = []',
                "non-empty list",
            ),
            (
                f'server = "http://x"\ntoken = "bkw_a"\nwait_seconds = 99\n'
                f'[[backups]]\nid = "{BACKUP}"\npaths = ["/"]',
                "`wait_seconds` must be",
            ),
            ('server = "http://x"\ntoken = "bkw_a"\nsurprise = 1', "unknown settings: surprise"),
        ],
    )
    def test_mistakes_are_named(self, tmp_path: Path, text: str, message: str) -> None:
        with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
            load_config(write(tmp_path, text))

    def test_a_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="cannot read"):
            load_config(tmp_path / "absent.toml")


class TestSnapshotBackups:
    """A snapshot backup's lines: the repository key and the recipients, never the identity."""

    def config(self, **table: object) -> dict[str, object]:
        data = tomllib.loads(EXAMPLE_CONFIG)
        data.pop("token_file")
        data["token"] = "bkw_example"
        data["backups"] = [{"id": BACKUP, "paths": ["/srv"], **table}]
        return data

    def test_the_example_has_a_snapshot_backup(self, tmp_path: Path) -> None:
        data = tomllib.loads(EXAMPLE_CONFIG)
        data.pop("token_file")
        data["token"] = "bkw_example"
        config = parse_config(data, tmp_path)
        [(backup_id, settings)] = config.snapshots.items()
        assert config.backups[backup_id] == (Path("/home"),)
        assert settings.recipients[0].startswith("age1")
        assert settings.excludes == ("*.tmp", "/cache")
        assert data["backups"][1]["repository_key"] not in repr(config)

    def test_mistakes_are_named(self, tmp_path: Path) -> None:
        recipient = tomllib.loads(EXAMPLE_CONFIG)["backups"][1]["recipients"]
        key = tomllib.loads(EXAMPLE_CONFIG)["backups"][1]["repository_key"]
        cases = [
            ({"repository_key": "nope", "recipients": recipient}, "not a strongroom repository"),
            ({"repository_key": key, "recipients": ["age1nope"]}, "recipient"),
            ({"repository_key": key}, "recipients"),
            ({"exclude": ["*.tmp"]}, "`exclude` is for snapshot backups"),
            ({"repository_key": key, "recipients": recipient, "identity": "x"}, "unknown"),
        ]
        for table, message in cases:
            with pytest.raises(ConfigError, match=message):
                parse_config(self.config(**table), tmp_path)
        two = self.config(repository_key=key, recipients=recipient)
        two["backups"][0]["paths"] = ["/a", "/b"]  # type: ignore[index]
        with pytest.raises(ConfigError, match="one directory"):
            parse_config(two, tmp_path)
