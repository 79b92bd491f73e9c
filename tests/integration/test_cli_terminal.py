"""The command-line client tried in a real terminal (issue 10): a tmux pane running bash,
typed into and read back as a person would, against ``strongroom serve`` as a process.

One session: ``strongroom login`` prints a code and a URL; a person opens the URL in a
browser (headless Chromium through selenium), types the code, signs in and approves; the
pane then says who is signed in (and, with no workspace yet, how to create one) and the
credentials file is private. The person creates a workspace and a manual backup, lists
backups with ``--json`` (parsed here), types a cloud backup's credentials at the prompt
(never shown), then pushes a 40 MiB file: the pane is read many times while it uploads
and must show rich's progress bar part-way (a partial bar with bytes done of the total),
then the finished bar and the confirmed run. A second push is stopped with Ctrl-C
half-way: the bar stays whole and the message is on its own line; the same command again
resumes and sends only the missing parts. ``run list --json`` and ``artifact list
--json`` agree with what the pane said.

The server sits behind a link that carries uploads at 12 MiB/s (tests/support/slow_link.py),
as a real uplink would, so the upload takes seconds and the bar can be seen moving.

Pane captures (with their colours), the raw recording of everything drawn in the pane,
the browser's screenshots and a rendering of the terminal mid-push go to the test's tmp
directory, and are copied to ``$STRONGROOM_TERMINAL_CAPTURES`` when it is set. tmux,
chromium and chromedriver are installed by ``.ci/run``; without them the test fails.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from rich.console import Console
from rich.text import Text
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from support.serve_process import free_port, serving
from support.slow_link import SlowLink
from support.terminal import WIDTH, Terminal

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CAPTURES_COPY = "STRONGROOM_TERMINAL_CAPTURES"
MIB = 1024 * 1024
FILE_SIZE = 40 * MIB
UPLINK = 12 * MIB  # bytes a second: the 40 MiB push takes about 3.5 s
EMAIL = "lin@example.com"
PASSWORD = "correct horse battery staple"
SECRET = "typed-secret-0f9e"
# One of rich's bar lines: name, bar, bytes done/total, speed, time left.
BAR = re.compile(
    r"^big\.bin (?P<bar>[━╸╺ ]{10,}) (?P<done>\d+(?:\.\d+)?)/(?P<total>\d+(?:\.\d+)?) MB",
    re.MULTILINE,
)
# A whole bar line of ``again.bin``, ending with its time left (nothing written after it).
WHOLE_BAR = re.compile(
    r"^again\.bin [━╸╺ ]{10,} [\d.]+/41\.9 MB (?:[\d.]+ [kMG]?B/s|\?) (?:\d+:\d\d:\d\d|-:--:--)$",
    re.MULTILINE,
)


@pytest.fixture
def captures(tmp_path: Path) -> Iterator[Path]:
    """Where pane captures and screenshots go; copied to ``$STRONGROOM_TERMINAL_CAPTURES``
    afterwards when it is set (also when the test failed: that is when they help)."""
    folder = tmp_path / "captures"
    folder.mkdir()
    yield folder
    copy = os.environ.get(CAPTURES_COPY)
    if copy:
        shutil.copytree(folder, Path(copy), dirs_exist_ok=True)


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    """Headless Chromium (installed by ``.ci/run`` when missing)."""
    assert CHROMIUM.exists(), "chromium is not installed: apt-get install chromium (.ci/run does)"
    assert CHROMEDRIVER.exists(), (
        "chromedriver is not installed: apt-get install chromium-driver (.ci/run does)"
    )
    options = Options()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=900,800",
        "--no-proxy-server",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """``strongroom serve`` (SQLite and local disk, sign-up on, parts from 1 MiB) behind
    the slow uplink; the URL a person is given."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    configuration = {
        "STRONGROOM_SIGNUP": "true",
        "STRONGROOM_MULTIPART_THRESHOLD": str(MIB),
        "STRONGROOM_LOG_FORMAT": "text",
    }
    port = free_port()
    with (
        serving(data_dir, port, tmp_path / "serve.log", configuration),
        SlowLink(("127.0.0.1", port), upload_rate=UPLINK) as link,
    ):
        yield link.url


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The person's home directory (the terminal's working directory too)."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def terminal(home: Path, captures: Path) -> Iterator[Terminal]:
    """A tmux pane running bash in ``home``, with this environment's ``strongroom`` first
    on PATH and nothing of the test's own environment; ``BROWSER`` names a script that
    records any URL it is asked to open."""
    opener = home / "open-url"
    opener.write_text(f'#!/bin/sh\necho "$1" >> "{home}/opened-urls"\n')
    opener.chmod(0o755)
    environment = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "BROWSER": str(opener),
    }
    with Terminal(captures / "terminal", environment) as shell:
        shell.run(f"cd '{home}'")
        yield shell


def sign_up(url: str) -> None:
    """The person's account at the built-in provider (sign-up is a form post; the
    provider has no sign-up page)."""
    with httpx2.Client(trust_env=False) as http:
        answer = http.post(
            f"{url}/idp/signup", data={"email": EMAIL, "password": PASSWORD, "name": "Lin"}
        )
    assert answer.status_code == 201, answer.text


def approve_in_browser(browser: WebDriver, page: str, user_code: str, captures: Path) -> None:
    """Open the verification page, type the code, sign in, approve: as a person would."""
    browser.get(page)
    WebDriverWait(browser, 20).until(ec.presence_of_element_located((By.ID, "user_code")))
    browser.find_element(By.ID, "user_code").send_keys(user_code)
    browser.find_element(By.ID, "email").send_keys(EMAIL)
    browser.find_element(By.ID, "password").send_keys(PASSWORD)
    browser.save_screenshot(str(captures / "browser-1-approve.png"))
    browser.find_element(By.CSS_SELECTOR, 'button[value="approve"]').click()
    WebDriverWait(browser, 20).until(
        ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "approved")
    )
    browser.save_screenshot(str(captures / "browser-2-approved.png"))


def render(browser: WebDriver, screen: str, path: Path) -> None:
    """A picture of the terminal: the pane's text and colours drawn by Chromium."""
    console = Console(record=True, width=WIDTH, file=io.StringIO())
    console.print(Text.from_ansi(screen.rstrip("\n")))
    page = path.with_suffix(".html")
    page.write_text(console.export_html(inline_styles=True))
    browser.set_window_size(1700, 700)
    browser.get(page.as_uri())
    browser.save_screenshot(str(path))


def read_json(path: Path) -> Any:
    """A ``--json`` command's output redirected to ``path``."""
    return json.loads(path.read_text())


def frames_while(shell: Terminal, marker: str, timeout: float) -> tuple[list[str], str]:
    """Every distinct screen seen while the command behind ``marker`` runs, and its exit
    status's screen; fails if it runs past ``timeout``."""
    frames: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        shown = shell.screen(colours=True)
        if not frames or frames[-1] != shown:
            frames.append(shown)
        if re.search(marker, shell.screen()):
            return frames, shown
        assert time.monotonic() < deadline, f"still running after {timeout} s:\n{shown}"
        time.sleep(0.05)


def plain(screen: str) -> str:
    """A captured screen without its escape sequences."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)


def recorded(shell: Terminal) -> str:
    """Everything drawn in the pane so far, each redraw on a line of its own."""
    raw = shell.recording.read_bytes().decode(errors="replace")
    return re.sub(r"\x1b\[2K|\r", "\n", raw)


def test_a_person_signs_in_and_pushes_from_a_real_terminal(
    server: str,
    terminal: Terminal,
    browser: WebDriver,
    home: Path,
    captures: Path,
) -> None:
    """Login through the device flow approved in Chromium, a manual backup listed with
    ``--json``, credentials typed unseen, a push whose progress bar is seen moving in the
    pane, a push stopped with Ctrl-C and resumed, the runs confirmed."""
    sign_up(server)

    # Login: the code and the URL appear in the pane; the browser approves.
    login = terminal.start(f"strongroom login --server {server}")
    asked = terminal.wait_for(
        r"open (?P<page>http://\S+/idp/device) and enter the code (?P<code>[A-Z]{4}-[A-Z]{4})"
    )
    terminal.wait_for(r"Waiting for approval\.\.\.")
    terminal.save("login-waiting")
    approve_in_browser(browser, asked["page"], asked["code"], captures)
    signed_in = terminal.finish(login, timeout=30)
    terminal.save("login-done")
    assert signed_in.exit_code == 0, signed_in.screen
    assert f"Signed in to {server} as {EMAIL}; you have no workspace yet" in signed_in.screen
    assert "strongroom workspace create NAME --use" in signed_in.screen
    # No display: the command must not have tried a browser (a text one would take over
    # the terminal); the person opened the URL themselves.
    assert not (home / "opened-urls").exists()
    credentials = home / ".config" / "strongroom" / "credentials.json"
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(credentials.parent.stat().st_mode) == 0o700
    assert read_json(credentials)["server"] == server

    # A workspace, a manual backup (pushes need a retention), listed as JSON.
    for command in (
        "strongroom workspace create Acme --use",
        "strongroom backup create files --kind manual",
        "strongroom backup set files --expire-after P30D",
    ):
        done = terminal.run(command)
        assert done.exit_code == 0, done.screen
    listed = terminal.run("strongroom backup list --json > backups.json")
    assert listed.exit_code == 0, listed.screen
    backups = read_json(home / "backups.json")
    assert [(b["name"], b["kind"], b["state"]) for b in backups] == [("files", "manual", "active")]
    assert backups[0]["retention"]["expire_after"] == "P30D"

    # Credentials typed at the terminal are asked for and not shown, then never on screen.
    assert terminal.run("strongroom backup create bucket --kind cloud").exit_code == 0
    source = '{"type": "s3", "endpoint": "https://s3.example.com", "bucket": "photos"}'
    asking = terminal.start(f"strongroom backup set bucket --source '{source}' --credentials-stdin")
    terminal.wait_for(r"Credentials \(JSON, not shown\):")
    terminal.type(f'{{"access_key_id": "AKIATERMINAL", "secret_access_key": "{SECRET}"}}')
    configured = terminal.finish(asking)
    terminal.save("credentials-typed")
    assert configured.exit_code == 0, configured.screen
    assert re.search(r"^has_credentials +yes$", plain(configured.screen), re.MULTILINE)
    assert SECRET not in configured.screen
    assert "AKIATERMINAL" not in configured.screen

    # The push: its bar is watched while the bytes go up the slow link.
    content = os.urandom(FILE_SIZE)
    (home / "big.bin").write_bytes(content)
    terminal.clear()
    frames, last = frames_while(terminal, terminal.start("strongroom push files big.bin"), 60)
    bars = [(frame, BAR.search(plain(frame))) for frame in frames]
    partial = [
        (frame, found)
        for frame, found in bars
        if found and 0 < float(found["done"]) < float(found["total"])
    ]
    for number, (frame, _) in enumerate(partial[:3]):
        terminal.save(f"push-progress-{number}", frame)
    terminal.save("push-done", last)
    assert len(partial) >= 2, f"{len(frames)} screens seen, bars in: {[b[1] for b in bars]}"
    done_values = [float(found["done"]) for _, found in partial]
    assert done_values == sorted(done_values), "the bar went backwards"
    assert "━" in partial[0][1]["bar"]  # the bar is drawn, not only the numbers
    render(browser, partial[len(partial) // 2][0], captures / "terminal-push.png")

    # Every frame drawn, from the raw recording: the bar moved forward in many steps.
    drawn = [float(found["done"]) for found in BAR.finditer(plain(recorded(terminal)))]
    moving = sorted({done for done in drawn if 0 < done < 41.9})
    assert len(moving) >= 5, drawn
    assert drawn == sorted(drawn), "the bar went backwards"

    finished = plain(last)
    assert re.search(r"\[#\d+ exit 0\]", finished), finished
    ended = BAR.search(finished)
    assert ended, finished
    assert ended["done"] == ended["total"] == "41.9", finished
    # One bar line, drawn in place: no frame left behind above it.
    assert len(BAR.findall(finished)) == 1, finished
    confirmed = re.search(r"run (\S+) confirmed: succeeded", finished)
    assert confirmed, finished
    digest = hashlib.sha256(content).hexdigest()
    assert f"big.bin  {FILE_SIZE} bytes  sha256 {digest}" in finished

    # Ctrl-C half-way through another push, one part at a time: the bar stops whole, the
    # way on is said on a line of its own, and the same command again sends only the
    # parts storage lacks. The bar counts bytes handed to the socket (up to ~5 MB ahead
    # of the server), so at 24 MB the first 16 MiB part is surely stored.
    again = os.urandom(FILE_SIZE)
    (home / "again.bin").write_bytes(again)
    terminal.clear()
    push_again = "strongroom push files again.bin --parallel 1"
    interrupted_marker = terminal.start(push_again)
    terminal.wait_for(r"again\.bin .* (2[4-9]|3[0-9])\.\d/41\.9 MB", timeout=30)
    terminal.press("C-c")
    interrupted = terminal.finish(interrupted_marker)
    terminal.save("push-interrupted", interrupted.screen)
    shown = plain(interrupted.screen)
    assert interrupted.exit_code == 130, shown
    assert re.search(
        r"^interrupted: run the same command again to resume the upload$", shown, re.MULTILINE
    ), shown
    assert len(WHOLE_BAR.findall(shown)) == 1, shown
    resumed = terminal.run(push_again, timeout=60)
    terminal.save("push-resumed", resumed.screen)
    shown = plain(resumed.screen)
    assert resumed.exit_code == 0, shown
    assert re.search(r"run \S+ resumed and confirmed: succeeded", shown), shown
    parts = re.search(r"\(parts sent (\d+), already stored (\d+)\)", shown)
    assert parts, shown
    sent, skipped = int(parts[1]), int(parts[2])
    assert skipped >= 1, shown
    assert sent >= 1, shown
    assert sent + skipped == 3, shown

    # What the server now holds, read back as JSON: two succeeded runs, two artifacts.
    assert terminal.run("strongroom run list files --json > runs.json").exit_code == 0
    runs = {r["id"]: r["state"] for r in read_json(home / "runs.json")}
    assert runs[confirmed[1]] == "succeeded"
    assert sorted(runs.values()) == ["succeeded", "succeeded"]
    assert terminal.run("strongroom artifact list --backup files --json > arts.json").exit_code == 0
    assert sorted((a["name"], a["size"], a["sha256"]) for a in read_json(home / "arts.json")) == [
        ("again.bin", FILE_SIZE, hashlib.sha256(again).hexdigest()),
        ("big.bin", FILE_SIZE, digest),
    ]
    terminal.save("end")
