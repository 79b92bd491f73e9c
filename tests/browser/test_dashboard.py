"""The dashboard in a real browser: Debian's chromium, headless, driven by selenium through
chromedriver, against a real ``strongroom serve`` process (the embedded default).

One journey a new person would take: sign up, sign in (authorization code with PKCE),
create a workspace, create a worker, configure a scheduled local backup, trigger it and
watch the run finish (the test plays the worker agent through the public API with the
token the dashboard showed), download the artifact, see a refusal with its request id,
invite a member, create an API key, read and filter the audit log, look at the quotas.
Then every request the browser made (Chrome's performance log) is checked against
``/openapi.json``, and the console holds no Content-Security-Policy violation.

Screenshots go to the test's tmp directory, and also to ``tests/browser/screenshots/``
when ``STRONGROOM_SCREENSHOTS`` is set (they are not committed).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2
import pytest
from fake_oidc import PERSON, FakeOidcProvider
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from strongroom.domain.backups import Schedule
from support.serve_process import STRONGROOM, free_port, serving, unconfigured_environment

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SHOTS_COPY = Path(__file__).parent / "screenshots"
EMAIL = "grace@example.com"
PASSWORD = "correct horse battery staple"
WAIT = 20


# --------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The served data dir (operator commands act on it)."""
    return tmp_path_factory.mktemp("serve") / "data"


@pytest.fixture(scope="module")
def server(data_dir: Path) -> Iterator[str]:
    """``strongroom serve`` on a free loopback port with a fresh data dir."""
    with serving(data_dir, free_port(), data_dir.parent / "serve.log") as url:
        yield url


def operator(data_dir: Path, *arguments: str) -> None:
    """``strongroom admin ...`` on the served data dir, as an operator runs it."""
    done = subprocess.run(
        [str(STRONGROOM), "admin", *arguments, "--data-dir", str(data_dir)],
        env=unconfigured_environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser saves downloads."""
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads: Path) -> Iterator[WebDriver]:
    """Headless chromium (installed by ``.ci/run`` when missing) with performance and
    console logs on."""
    assert CHROMIUM.exists(), "apt-get install chromium (.ci/run does)"
    assert CHROMEDRIVER.exists(), "apt-get install chromium-driver (.ci/run does)"
    options = Options()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,1100",
        "--no-proxy-server",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    options.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.execute_cdp_cmd(
        "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    try:
        yield driver
    finally:
        driver.quit()


class Shots:
    """Screenshots, numbered in order, in the tmp dir (and copied when asked)."""

    def __init__(self, driver: WebDriver, folder: Path) -> None:
        self.driver, self.folder, self.count = driver, folder, 0
        self.copy = bool(os.environ.get("STRONGROOM_SCREENSHOTS"))

    def __call__(self, name: str) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{name}.png"
        self.driver.execute_script("window.scrollTo(0, 0)")
        assert self.driver.save_screenshot(str(path))
        if self.copy:
            SHOTS_COPY.mkdir(exist_ok=True)
            shutil.copy(path, SHOTS_COPY / path.name)
        return path


# --------------------------------------------------------------------------------------
# Helpers


def wait_for(driver: WebDriver, css: str, timeout: float = WAIT) -> WebElement:
    """The first visible element matching ``css``."""
    found: WebElement = WebDriverWait(driver, timeout).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, css))
    )
    return found


def wait_text(driver: WebDriver, css: str, text: str, timeout: float = WAIT) -> None:
    """Until an element matching ``css`` contains ``text``."""
    WebDriverWait(driver, timeout).until(
        ec.text_to_be_present_in_element((By.CSS_SELECTOR, css), text)
    )


def fill(form: WebElement, **values: str) -> None:
    """Type into the form's inputs by name (cleared first)."""
    for name, value in values.items():
        element = form.find_element(By.NAME, name)
        element.clear()
        element.send_keys(value)


def submit(form: WebElement) -> None:
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()


def selected_workspace(driver: WebDriver) -> str:
    """The switcher's choice (read in one step: the header is redrawn with every view)."""
    text: str = driver.execute_script(
        "const s = document.getElementById('workspace-select');"
        "return s ? s.options[s.selectedIndex].text : '';"
    )
    return text


def renders(driver: WebDriver) -> int:
    """How many times the dashboard has drawn its view."""
    return int(driver.find_element(By.ID, "view").get_attribute("data-renders") or 0)


def submit_and_redraw(driver: WebDriver, form: WebElement) -> None:
    """Submit a form whose success redraws the view, and wait for the redraw."""
    before = renders(driver)
    submit(form)
    until(lambda: renders(driver) > before)


def button(driver: WebDriver, label: str) -> WebElement:
    """A visible button by its exact text."""
    found: WebElement = WebDriverWait(driver, WAIT).until(
        lambda d: next(
            (b for b in d.find_elements(By.TAG_NAME, "button") if b.text == label),
            False,
        )
    )
    return found


def go(driver: WebDriver, hash_route: str) -> None:
    """Follow a navigation link, wait for its view, and check that every control of the
    view has an accessible name."""
    driver.find_element(By.CSS_SELECTOR, f"nav a[href='{hash_route}']").click()
    WebDriverWait(driver, WAIT).until(
        lambda d: d.find_element(By.ID, "view").get_attribute("data-route") == hash_route
    )
    assert unlabelled(driver) == [], hash_route


def unlabelled(driver: WebDriver) -> list[str]:
    """Controls without a label, an aria-label or (buttons) text."""
    found: list[str] = driver.execute_script(
        "return [...document.querySelectorAll('input:not([type=hidden]), select, textarea,"
        " button')].filter((c) => !(c.labels && c.labels.length) && !c.getAttribute("
        "'aria-label') && !(c.tagName === 'BUTTON' && c.textContent.trim()))"
        ".map((c) => c.outerHTML.slice(0, 80));"
    )
    return found


def run_state(driver: WebDriver) -> str | None:
    """The newest run's state as the page shows it (read in one step: the page redraws the
    runs every two seconds)."""
    state: str | None = driver.execute_script(
        "const row = document.querySelector('#runs tr[data-run]');"
        "return row ? row.dataset.state : null;"
    )
    return state


def until(predicate: Callable[[], Any], timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def openapi_matchers(server: str) -> list[tuple[str, re.Pattern[str]]]:
    """``(METHOD, path regex)`` of every operation of the served ``/openapi.json``: a path
    parameter matches what its documented pattern allows (one segment when it has none)."""
    document = httpx2.get(f"{server}/openapi.json", trust_env=False).json()

    def resolved(parameter: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in parameter:
            found: dict[str, Any] = document["components"]["parameters"][
                parameter["$ref"].rsplit("/", 1)[1]
            ]
            return found
        return parameter

    matchers = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            patterns = {
                p["name"]: p["schema"].get("pattern", "^[^/]+$").strip("^$")
                for p in map(resolved, operation.get("parameters", []))
                if p["in"] == "path"
            }
            regex = re.sub(
                r"\\\{(\w+)\\\}",
                lambda m, allowed=patterns: f"(?:{allowed.get(m[1], '[^/]+')})",
                re.escape(path),
            )
            matchers.append((method.upper(), re.compile(f"^{regex}$")))
    return matchers


def requests_made(driver: WebDriver) -> list[tuple[str, str]]:
    """``(METHOD, URL)`` of every network request in Chrome's performance log, downloads
    included."""
    made = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Page.downloadWillBegin":  # a download is not a page request
            made.append(("GET", message["params"]["url"]))
        if message["method"] == "Network.requestWillBeSent":
            request = message["params"]["request"]
            made.append((request["method"], request["url"]))
    return made


# --------------------------------------------------------------------------------------
# The journey


def test_a_new_person_backs_up_with_the_dashboard_alone(
    server: str, browser: WebDriver, downloads: Path, tmp_path: Path, data_dir: Path
) -> None:
    driver = browser
    shot = Shots(driver, tmp_path)
    seen: list[tuple[str, str]] = []

    # Signed out: the landing page; sign up, then sign in on the provider's page.
    driver.get(f"{server}/app")
    wait_for(driver, "#sign-in")
    assert not driver.find_element(By.ID, "nav").is_displayed()
    shot("landing")
    driver.find_element(By.LINK_TEXT, "Create an account").click()
    form = wait_for(driver, "#signup-form")
    fill(form, name="Grace Hopper", email=EMAIL, password=PASSWORD)
    shot("signup")
    submit(form)
    login = wait_for(driver, "form[action='authorize']")
    assert urlsplit(driver.current_url).path == "/idp/authorize"
    fill(login, email=EMAIL, password="wrong password!")
    submit(login)
    wait_text(driver, ".notice.error", "Wrong email or password")
    login = wait_for(driver, "form[action='authorize']")
    fill(login, email=EMAIL, password=PASSWORD)
    shot("login")
    submit(login)

    # Signed in, no workspace yet: create one; the session switches to it.
    form = wait_for(driver, "#workspace-form")
    assert urlsplit(driver.current_url).query == "", "the code left the address bar"
    assert driver.execute_script("return document.cookie") == ""
    token = driver.execute_script("return JSON.parse(sessionStorage['strongroom.session']).token")
    assert token.startswith("bks_")
    shot("no-workspace")
    fill(form, name="Acme Corp")
    submit(form)
    wait_for(driver, "#backup-form")
    until(lambda: "Acme Corp" in selected_workspace(driver))

    # A worker for the local backup: its token is shown once, with a copy button.
    go(driver, "#/access")
    form = wait_for(driver, "#worker-create-form")
    fill(form, name="laptop")
    submit(form)
    worker_token = wait_for(driver, "#secret [data-secret=token]").text
    assert worker_token.startswith("bkw_")
    button(driver, "Copy")
    shot("worker-token")

    # Create and configure a scheduled local backup.
    go(driver, "#/backups")
    form = wait_for(driver, "#backup-form")
    fill(form, name="laptop-home")
    Select(form.find_element(By.NAME, "kind")).select_by_value("local")
    submit(form)
    form = wait_for(driver, "#worker-form")
    Select(form.find_element(By.NAME, "worker_id")).select_by_visible_text("laptop")
    submit_and_redraw(driver, form)
    form = wait_for(driver, "#schedule-form")
    fill(form, cron="30 2 * * mon-fri", timezone="Europe/Paris")
    until(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#next-runs li")) == 5)
    previews = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#next-runs li")]
    assert all(text.endswith("02:30") for text in previews), previews
    submit_and_redraw(driver, form)
    form = wait_for(driver, "#retention-form")
    assert "Write-once" in form.text
    fill(form, expire_after="P30D", lock_for="PT0S")
    submit_and_redraw(driver, form)
    wait_text(driver, "main", "active")
    wait_text(driver, "#next-run-at", ":30")
    shot("backup-configured")

    # Trigger it, then play the worker agent through the public API and watch the run.
    # Pause and resume (a paused backup says so), then trigger it.
    before = renders(driver)
    button(driver, "Pause").click()
    until(lambda: renders(driver) > before)
    wait_text(driver, "main", "paused")
    before = renders(driver)
    button(driver, "Resume").click()
    until(lambda: renders(driver) > before)
    button(driver, "Run now").click()
    until(lambda: run_state(driver) == "queued")
    shot("run-queued")
    content = b"the bytes of a laptop backup\n" * 100
    with httpx2.Client(
        base_url=server, trust_env=False, headers={"Authorization": f"Bearer {worker_token}"}
    ) as agent:
        claim = agent.post("/v1/claims", json={})
        assert claim.status_code == 201, claim.text
        run_id = claim.json()["run"]["id"]
        beat = agent.post(
            f"/v1/runs/{run_id}/heartbeat",
            json={"progress": {"bytes_done": 1200, "bytes_total": len(content), "message": "tar"}},
        )
        assert beat.status_code == 200, beat.text
        until(lambda: run_state(driver) == "running")
        until(lambda: driver.execute_script("return !!document.querySelector('#runs progress')"))
        shot("run-running")
        upload = agent.post(
            f"/v1/runs/{run_id}/upload-url",
            json={
                "name": "home.tar.zst",
                "size": len(content),
                "sha256": hashlib.sha256(content).hexdigest(),
            },
        )
        assert upload.status_code == 201, upload.text
        put = httpx2.put(
            upload.json()["url"], content=content, headers=upload.json()["headers"], trust_env=False
        )
        assert put.status_code in (200, 201, 204), put.text
        confirmed = agent.post(f"/v1/runs/{run_id}/confirm", json={})
        assert confirmed.status_code == 200, confirmed.text
    until(lambda: run_state(driver) == "succeeded")
    wait_text(driver, "#backup-artifacts", "home.tar.zst")  # its artifact appears too
    shot("run-succeeded")

    # Download the artifact; deleting the only one is refused, plainly, with a request id.
    go(driver, "#/artifacts")
    button(driver, "Download").click()
    saved = until(lambda: [p for p in downloads.glob("*") if not p.name.endswith(".crdownload")])
    assert saved[0].name == "home.tar.zst"
    assert until(lambda: saved[0].read_bytes() == content)
    button(driver, "Delete").click()
    driver.switch_to.alert.accept()
    refusal = wait_for(driver, ".error[data-code=last_artifact]")
    assert re.search(r"Request ID: \S+", refusal.text), refusal.text
    shot("artifact-refusal")

    # A second workspace, then back to the first with the switcher.
    go(driver, "#/workspaces")
    form = wait_for(driver, "#workspace-form")
    fill(form, name="Side Project")
    submit(form)
    until(lambda: "Side Project" in selected_workspace(driver))
    wait_text(driver, "main", "No backups yet")
    Select(driver.find_element(By.ID, "workspace-select")).select_by_visible_text(
        "Acme Corp (admin)"
    )
    wait_text(driver, "main", "laptop-home")

    # Invite a member.
    go(driver, "#/members")
    form = wait_for(driver, "#invite-form")
    fill(form, email="bob@example.com")
    Select(form.find_element(By.NAME, "role")).select_by_value("viewer")
    submit(form)
    wait_text(driver, "main", "bob@example.com")
    shot("members")

    # An API key, its token shown once.
    go(driver, "#/access")
    form = wait_for(driver, "#api-key-form")
    fill(form, name="ci-reader")
    form.find_element(By.CSS_SELECTOR, "input[value='backups:read']").click()
    submit(form)
    key_token = wait_for(driver, "#secret [data-secret=token]").text
    assert key_token.startswith("bkk_")
    wait_text(driver, "main", "ci-reader")
    shot("api-key")

    # The audit log, then filtered.
    go(driver, "#/audit")
    wait_text(driver, "main", "backup.create")
    shot("audit")
    form = wait_for(driver, "#audit-form")
    fill(form, action="api_key.create")
    submit(form)
    until(
        lambda: (
            driver.find_element(By.ID, "view").get_attribute("data-route")
            == "#/audit?action=api_key.create"
        )
    )
    actions = set(
        driver.execute_script(
            "return [...document.querySelectorAll('main td:nth-child(2) code')]"
            ".map((c) => c.textContent)"
        )
    )
    assert "backup.create" not in actions
    assert "api_key.create" in actions

    # Quotas with usage bars.
    go(driver, "#/quotas")
    meters = until(lambda: driver.find_elements(By.CSS_SELECTOR, "main meter"))
    assert {m.get_attribute("aria-label") for m in meters} >= {"backups_per_workspace usage"}
    shot("quotas")

    # The operator blocks the workspace: a write is refused, and the banner says so.
    workspace_id = driver.execute_script(
        "return JSON.parse(sessionStorage['strongroom.session']).workspace_id"
    )
    operator(data_dir, "billing", workspace_id, "blocked")
    go(driver, "#/backups")
    form = wait_for(driver, "#backup-form")
    fill(form, name="refused")
    submit(form)
    wait_for(driver, ".error[data-code=billing_restricted]")
    banner = wait_for(driver, "#banner")
    assert "blocked" in banner.text
    shot("billing-blocked")
    go(driver, "#/quotas")

    # Keyboard: the skip link is the first stop and lands on the content.
    driver.refresh()
    wait_for(driver, "main meter")
    ActionChains(driver).send_keys(Keys.TAB).perform()
    assert driver.switch_to.active_element.text == "Skip to content"
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    until(lambda: driver.switch_to.active_element.get_attribute("id") == "view")

    # Every request the browser made is an operation of /openapi.json (or the dashboard's
    # own files), and nothing left this origin.
    seen = requests_made(driver)
    matchers = openapi_matchers(server)
    origin = server.rstrip("/")
    for method, url in seen:
        # The browser's own favicon probe on the identity provider's page is not the
        # dashboard's doing (the dashboard declares an inline data: icon).
        if url.startswith("data:") or urlsplit(url).path == "/favicon.ico":
            continue
        assert url.startswith(origin + "/"), f"a request left the origin: {url}"
        path = urlsplit(url).path
        assert any(m == method and p.match(path) for m, p in matchers), (method, path)
    paths = {urlsplit(url).path for _, url in seen}
    assert {"/v1/auth/sessions", "/idp/token", "/v1/workspaces"} <= paths
    assert any(p.startswith("/storage/") for p in paths), "the download followed its URL"

    # No Content-Security-Policy violation in the console.
    console = driver.get_log("browser")
    violations = [e["message"] for e in console if "Content Security Policy" in e["message"]]
    assert violations == []


def test_the_page_carries_a_strict_policy(server: str) -> None:
    """The page and its files: the strict CSP, nosniff, no inline script or style."""
    page = httpx2.get(f"{server}/app", trust_env=False)
    policy = page.headers["content-security-policy"]
    for directive in (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ):
        assert directive in policy
    assert "unsafe-inline" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "<script>" not in page.text
    assert "style=" not in page.text
    script = httpx2.get(f"{server}/app/app.js", trust_env=False)
    assert script.headers["content-type"].startswith("text/javascript")
    missing = httpx2.get(f"{server}/app/nope.js", trust_env=False)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_screenshot_helper_is_real(browser: WebDriver, tmp_path: Path, server: str) -> None:
    """A screenshot is a PNG of the page (the journey's are looked at by people)."""
    browser.get(f"{server}/app")
    path = Shots(browser, tmp_path)("probe")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


PREVIEWED = [
    ("30 2 * * mon-fri", "Europe/Paris"),
    ("*/15 9-17 * * *", "America/New_York"),
    ("0 0 1,15 * *", "Asia/Kolkata"),
    ("5 4 * * sun", "UTC"),
    ("0 12 13 * fri", "Australia/Sydney"),  # day of month OR weekday, as cron has it
    ("0 6 * jan,jul *", "Pacific/Auckland"),
    ("10-20/5 */6 * * *", "UTC"),
    ("0 0 29 2 *", "UTC"),
]


@pytest.mark.parametrize(("cron", "timezone"), PREVIEWED)
def test_the_schedule_preview_agrees_with_the_server(
    server: str, browser: WebDriver, cron: str, timezone: str
) -> None:
    """The five run times the browser computes are the service's own slots (away from DST
    gaps, where the preview may differ by skipping the missing local minute)."""
    if "/app" not in browser.current_url:
        browser.get(f"{server}/app")
    start = datetime(2026, 11, 24, 4, 29, tzinfo=UTC)
    shown = browser.execute_async_script(
        "const [cron, zone, from, done] = arguments;"
        "import('/app/cron.js').then((m) => done(m.nextRuns(cron, zone, 5, new Date(from))"
        ".map((r) => r.at.toISOString()))).catch((e) => done(String(e)));",
        cron,
        timezone,
        start.isoformat(),
    )
    schedule, expected, moment = Schedule(cron, timezone), [], start
    for _ in range(5):
        moment = schedule.next_after(moment)
        expected.append(moment.strftime("%Y-%m-%dT%H:%M:00.000Z"))
    assert shown == expected


def test_signing_in_with_an_external_oidc_provider(
    browser: WebDriver, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """With `STRONGROOM_OIDC_*` set, the same flow runs at the provider: its authorization
    endpoint, its token endpoint (PKCE checked there), and the ID token it gives is
    exchanged for a session. The policy lets the page reach that token endpoint and no
    other foreign origin."""
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    provider = FakeOidcProvider(allowed_origin=origin)
    provider.thread.start()
    root = tmp_path_factory.mktemp("oidc")
    try:
        with serving(root / "data", port, root / "serve.log", provider.configuration()):
            policy = httpx2.get(f"{origin}/app", trust_env=False).headers["content-security-policy"]
            assert f"connect-src 'self' {provider.url};" in policy
            browser.get_log("performance")  # start the record afresh
            browser.get(f"{origin}/app")
            sign_in = wait_for(browser, "#sign-in")
            assert browser.find_elements(By.LINK_TEXT, "Create an account") == []
            sign_in.click()
            wait_for(browser, "#workspace-form")
            Shots(browser, tmp_path)("oidc-signed-in")
            assert PERSON["email"] in browser.find_element(By.ID, "account").text
            assert len(provider.exchanges) == 1
            assert provider.exchanges[0]["grant_type"] == "authorization_code"
            assert provider.exchanges[0]["redirect_uri"] == f"{origin}/app"
            hosts = {urlsplit(url).netloc for _, url in requests_made(browser)}
            assert hosts <= {urlsplit(origin).netloc, urlsplit(provider.url).netloc}
    finally:
        provider.server.shutdown()
        provider.server.server_close()


def test_a_redirect_this_tab_did_not_ask_for_is_refused(server: str, browser: WebDriver) -> None:
    """A link carrying someone else's code (login CSRF) finds no pending sign-in with its
    state in this tab: the dashboard says so and never spends the code."""
    browser.get(f"{server}/app")
    browser.execute_script("sessionStorage.clear()")  # signed out, nothing pending
    browser.get(f"{server}/app")
    wait_for(browser, "#sign-in")
    browser.get_log("performance")  # start the record afresh
    browser.get(f"{server}/app?code=bka_not_yours&state=forged")
    refusal = wait_for(browser, ".error[data-code=state_mismatch]")
    assert "sign in again" in refusal.text
    assert urlsplit(browser.current_url).query == ""
    assert "/idp/token" not in {urlsplit(url).path for _, url in requests_made(browser)}
    wait_for(browser, "#sign-in")
