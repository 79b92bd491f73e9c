"""A real terminal for tests: a tmux server on a private socket holding one shell, typed
into with ``send-keys`` and read back with ``capture-pane``, as a person sees the screen.

    with Terminal(tmp_path / "terminal", environment) as terminal:
        terminal.type("strongroom whoami")
        terminal.wait_for(r"on http://")
        done = terminal.run("strongroom backup list")   # waits for the command to end
        assert done.exit_code == 0

Everything the shell writes to the pane is also recorded raw (``pipe-pane``) in
``recording.log``, escape sequences included, so a test can see every frame a live
display drew, not only the ones its polls happened to catch. tmux (installed by
``.ci/run``) must be there: without it the test fails, never skips.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

import attrs

WIDTH, HEIGHT = 200, 50
PROMPT = "$ "
POLL = 0.05


def tmux_binary() -> str:
    """The tmux executable; a failure (never a skip) when it is missing."""
    found = shutil.which("tmux")
    assert found is not None, "tmux is not installed: apt-get install tmux (.ci/run does)"
    return found


@attrs.frozen
class Finished:
    """A command that ran to its end: its exit status and the screen when it ended."""

    exit_code: int
    screen: str


class Terminal:
    """A ``WIDTH`` x ``HEIGHT`` tmux window running ``bash`` (no rc files, prompt ``$ ``)
    with exactly ``environment`` (tmux adds ``TERM`` and ``TMUX``)."""

    def __init__(self, directory: Path, environment: Mapping[str, str]) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.recording = directory / "recording.log"
        self._tmux = tmux_binary()
        self._socket = f"strongroom-test-{secrets.token_hex(6)}"
        self._environment = dict(environment)
        self._socket_path: Path | None = None
        self._commands = 0
        self._captures = 0

    def __enter__(self) -> Self:
        self._tmux_command(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            str(WIDTH),
            "-y",
            str(HEIGHT),
            # tmux leaves PS1 out of the environment it hands the shell.
            f"env PS1='{PROMPT}' bash --norc --noprofile",
        )
        try:
            self._socket_path = Path(self._tmux_command("display", "-p", "#{socket_path}").strip())
            self._tmux_command("pipe-pane", "-o", f"cat >> '{self.recording}'")
            self.wait_for(re.escape(PROMPT.strip()))
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with contextlib.suppress(AssertionError, OSError, subprocess.SubprocessError):
            self.save("last")
        self._stop()

    def _stop(self) -> None:
        """Kill the tmux server (and with it the shell and what runs in it); remove its
        socket, which tmux leaves behind."""
        subprocess.run(
            [self._tmux, "-L", self._socket, "kill-server"], capture_output=True, check=False
        )
        if self._socket_path is not None:
            self._socket_path.unlink(missing_ok=True)

    def _tmux_command(self, *arguments: str) -> str:
        done = subprocess.run(
            [self._tmux, "-u", "-L", self._socket, *arguments],
            env=self._environment,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        assert done.returncode == 0, f"tmux {' '.join(arguments)}: {done.stderr}"
        return done.stdout

    def screen(self, *, colours: bool = False) -> str:
        """What the pane shows now (with its escape sequences when ``colours``)."""
        return self._tmux_command("capture-pane", "-p", *(["-e"] if colours else []))

    def type(self, line: str) -> None:
        """Type ``line`` and press Enter."""
        self._tmux_command("send-keys", "-l", line)
        self._tmux_command("send-keys", "Enter")

    def press(self, key: str) -> None:
        """Press ``key`` as tmux names it (``C-c`` for Ctrl-C)."""
        self._tmux_command("send-keys", key)

    def wait_for(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        """Until the screen matches ``pattern``; the match."""
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            found = re.search(pattern, shown)
            if found:
                return found
            assert time.monotonic() < deadline, f"never shown: {pattern!r}; the screen:\n{shown}"
            time.sleep(POLL)

    def start(self, command: str) -> str:
        """Type ``command`` followed by a marker that shows its exit status; the marker's
        pattern, for ``finish``."""
        self._commands += 1
        self.type(f'{command}; echo "[#{self._commands} exit $?]"')
        return rf"\[#{self._commands} exit (\d+)\]"

    def finish(self, marker: str, timeout: float = 30.0) -> Finished:
        """Until the command ``start`` gave ``marker`` for has ended."""
        found = self.wait_for(marker, timeout)
        return Finished(int(found.group(1)), self.screen())

    def run(self, command: str, timeout: float = 30.0) -> Finished:
        """Type ``command`` and wait for it to end."""
        return self.finish(self.start(command), timeout)

    def clear(self) -> None:
        """Clear the screen and the scroll-back, as ``clear`` at the prompt."""
        self.run("clear")
        self._tmux_command("clear-history")

    def save(self, name: str, screen: str | None = None) -> Path:
        """Save ``screen`` (default: the screen now, with its colours) as a numbered file
        beside the recording; its path."""
        self._captures += 1
        path = self.directory / f"{self._captures:02d}-{name}.txt"
        path.write_text(screen if screen is not None else self.screen(colours=True))
        return path
