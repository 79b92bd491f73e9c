"""The dashboard in a real browser: Debian's chromium, headless, driven by selenium through
chromedriver, against a real ``strongroom serve`` process (the embedded default).

One journey a new person would take: sign up (and be signed in), create a workspace, sign
out and in again (and be taken into the one workspace), create a worker, configure a
scheduled local backup, trigger it and watch the run finish (the test plays the worker
agent through the public API with the token the dashboard showed), follow the run's link,
download the artifact, see a refusal with its request id, see the backup's health and its
retention explained, a snapshot backup's snapshots, the source and destination forms
showing only the chosen type's fields, invite a member, create an API key from a preset,
read and filter the audit log, look at the quotas.

Every view is photographed at 1280 and 420 px (the directory is printed) after checking
that no id is used twice and nothing is wider than the screen. Then every request the
browser made (Chrome's performance log) is checked against ``/openapi.json``, and the
console holds no error.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import pyrage
import pytest
from browsing import (
    Shots,
    arrived,
    button,
    console_errors,
    fill,
    go,
    openapi_matchers,
    operator,
    renders,
    requests_made,
    run_state,
    selected_workspace,
    submit,
    submit_and_redraw,
    until,
    wait_for,
    wait_text,
)
from fake_oidc import PERSON, FakeOidcProvider
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select

from strongroom.domain.backups import Schedule
from support.serve_process import free_port, serving

EMAIL = "grace@example.com"
PASSWORD = "correct horse battery staple"


def visible_names(driver: WebDriver, form_id: str) -> set[str]:
    """The names of the inputs a person sees in a form."""
    form = driver.find_element(By.ID, form_id)
    return {
        e.get_attribute("name")
        for e in form.find_elements(By.TAG_NAME, "input")
        if e.is_displayed()
    }


def sign_up_and_back_in(driver: WebDriver, server: str, shot: Shots) -> None:
    """Sign up: signed in at once; a workspace; then sign out and in again (a wrong
    password first) and land in the one workspace."""
    driver.get(f"{server}/app")
    wait_for(driver, "#sign-in")
    assert not driver.find_element(By.ID, "nav").is_displayed()
    shot("landing")
    driver.find_element(By.LINK_TEXT, "Create an account").click()
    form = wait_for(driver, "#signup-form")
    fill(form, name="Grace Hopper", email=EMAIL, password=PASSWORD)
    shot("signup")
    submit(form)

    form = wait_for(driver, "#workspace-form")  # signed in, nothing typed twice
    assert urlsplit(driver.current_url).query == "", "the code left the address bar"
    assert driver.execute_script("return document.cookie") == ""
    token = driver.execute_script("return JSON.parse(sessionStorage['strongroom.session']).token")
    assert token.startswith("bks_")
    shot("no-workspace")
    fill(form, name="Acme Corp")
    submit(form)
    wait_for(driver, "#backup-form")
    until(lambda: "Acme Corp" in selected_workspace(driver))
    assert len(driver.find_elements(By.CSS_SELECTOR, "select[aria-label=Workspace]")) == 1

    button(driver, "Sign out").click()
    wait_for(driver, "#sign-in").click()
    login = wait_for(driver, "form[action='authorize']")
    assert urlsplit(driver.current_url).path == "/idp/authorize"
    fill(login, email=EMAIL, password="wrong password!")
    submit(login)
    wait_text(driver, ".notice.error", "Wrong email or password")
    login = wait_for(driver, "form[action='authorize']")
    fill(login, email=EMAIL, password=PASSWORD)
    shot("login")
    submit(login)
    wait_for(driver, "#backup-form")  # taken into the only workspace
    until(lambda: "Acme Corp" in selected_workspace(driver))


def forms_show_the_chosen_type(driver: WebDriver, shot: Shots) -> None:
    """A cloud backup's source form shows S3 or PostgreSQL fields, never both; the
    destination's bucket fields appear only for the customer's own bucket."""
    go(driver, "#/backups")
    form = wait_for(driver, "#backup-form")
    fill(form, name="db-nightly")
    submit(form)
    wait_for(driver, "#source-form")
    assert {"endpoint", "bucket", "prefix"} <= visible_names(driver, "source-form")
    assert "host" not in visible_names(driver, "source-form")
    assert visible_names(driver, "destination-form") == set()
    shot("cloud-backup")
    source = driver.find_element(By.ID, "source-form")
    Select(source.find_element(By.NAME, "type")).select_by_value("postgres")
    assert {"host", "port", "database"} <= visible_names(driver, "source-form")
    assert "bucket" not in visible_names(driver, "source-form")
    destination = driver.find_element(By.ID, "destination-form")
    Select(destination.find_element(By.NAME, "type")).select_by_value("customer_s3")
    assert {"endpoint", "bucket", "user", "secret"} <= visible_names(driver, "destination-form")
    fill(source, host="db.example.com", database="shop")
    submit_and_redraw(driver, source)
    source = wait_for(driver, "#source-form")
    assert Select(source.find_element(By.NAME, "type")).first_selected_option.text == (
        "PostgreSQL database"
    )
    assert {"host", "port", "database"} <= visible_names(driver, "source-form")


def upload(api: httpx2.Client, run_id: str, name: str, content: bytes) -> None:
    """Announce an artifact of the run and put its bytes at the URL the API gives."""
    announced = api.post(
        f"/v1/runs/{run_id}/upload-url",
        json={"name": name, "size": len(content), "sha256": hashlib.sha256(content).hexdigest()},
    )
    assert announced.status_code == 201, announced.text
    put = httpx2.put(
        announced.json()["url"],
        content=content,
        headers=announced.json()["headers"],
        trust_env=False,
    )
    assert put.status_code in (200, 201, 204), put.text


def a_snapshot_backup(server: str, token: str, workspace_id: str) -> str:
    """A manual snapshot backup with one confirmed run, made through the API."""
    recipient = str(pyrage.x25519.Identity.generate().to_public())
    with httpx2.Client(
        base_url=server, trust_env=False, headers={"Authorization": f"Bearer {token}"}
    ) as api:
        made = api.post(
            f"/v1/workspaces/{workspace_id}/backups",
            json={"name": "docs", "kind": "manual", "encryption": {"recipients": [recipient]}},
        )
        assert made.status_code == 201, made.text
        bid = made.json()["id"]
        retention = {"retention": {"expire_after": "P30D", "lock_for": "PT0S"}}
        assert api.patch(f"/v1/backups/{bid}", json=retention).status_code == 200
        run = api.post("/v1/runs", json={"backup_id": bid})
        assert run.status_code == 201, run.text
        upload(api, run.json()["id"], "pack-0", b"sealed pack bytes" * 50)
        assert api.post(f"/v1/runs/{run.json()['id']}/confirm", json={}).status_code == 200
        return str(run.json()["id"])


def test_a_new_person_backs_up_with_the_dashboard_alone(
    server: str, browser: WebDriver, downloads: Path, tmp_path: Path, data_dir: Path
) -> None:
    driver = browser
    driver.get_log("browser")  # start the console afresh
    shot = Shots(driver, tmp_path)
    sign_up_and_back_in(driver, server, shot)
    shot("backups-empty")

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
    next_run = wait_for(driver, "#next-run-at").text
    assert re.fullmatch(r".*\b2:30\b.* Europe/Paris", next_run), next_run  # one time, its zone
    shot("backup-configured")

    # Pause and resume (a paused backup says so), then trigger it and play the worker.
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
        upload(agent, run_id, "home.tar.zst", content)
        confirmed = agent.post(f"/v1/runs/{run_id}/confirm", json={})
        assert confirmed.status_code == 200, confirmed.text
    until(lambda: run_state(driver) == "succeeded")
    wait_text(driver, "#backup-artifacts", "home.tar.zst")  # its artifact appears too
    shot("run-succeeded")

    # The run id is a link to the run's page; back on the backup, retention explained.
    driver.find_element(By.CSS_SELECTOR, f"#runs a[href='#/runs/{run_id}']").click()
    arrived(driver, f"#/runs/{run_id}")
    wait_text(driver, "main", "home.tar.zst")
    shot("run")
    driver.find_element(By.LINK_TEXT, "← laptop-home").click()
    explained = wait_for(driver, "#retention-explained tr[data-verdict=keep]")
    assert "newest" in explained.text
    assert "within P30D" in explained.text
    shot("backup-retention")

    # The list: each backup's health.
    go(driver, "#/backups")
    health = wait_for(driver, "td[data-health]")
    assert health.get_attribute("data-health") == "ok", health.text

    # Artifacts: backup, sha256, verification; download; deleting the only one is refused.
    go(driver, "#/artifacts")
    row = wait_for(driver, "tr[data-artifact]")
    assert "laptop-home" in row.text
    assert hashlib.sha256(content).hexdigest()[:12] in row.text
    shot("artifacts")
    button(driver, "Download").click()
    saved = until(lambda: [p for p in downloads.glob("*") if not p.name.endswith(".crdownload")])
    assert saved[0].name == "home.tar.zst"
    assert until(lambda: saved[0].read_bytes() == content)
    button(driver, "Delete").click()
    driver.switch_to.alert.accept()
    refusal = wait_for(driver, ".error[data-code=last_artifact]")
    assert re.search(r"Request ID: \S+", refusal.text), refusal.text
    shot("artifact-refusal")

    # A snapshot backup lists its snapshots with the command that restores one.
    session = driver.execute_script("return JSON.parse(sessionStorage['strongroom.session'])")
    snapshot = a_snapshot_backup(server, session["token"], session["workspace_id"])
    go(driver, "#/backups")
    driver.find_element(By.LINK_TEXT, "docs").click()
    listed = wait_for(driver, f"#snapshots tr[data-snapshot='{snapshot}']")
    assert f"strongroom restore {snapshot} --to DIR" in listed.text
    shot("snapshots")

    forms_show_the_chosen_type(driver, shot)

    # A second workspace, then back to the first with the switcher: one switcher only.
    go(driver, "#/workspaces")
    form = wait_for(driver, "#workspace-form")
    shot("workspaces")
    fill(form, name="Side Project")
    submit(form)
    until(lambda: "Side Project" in selected_workspace(driver))
    wait_text(driver, "main", "No backups yet")
    assert len(driver.find_elements(By.ID, "workspace-select")) == 1
    Select(driver.find_element(By.ID, "workspace-select")).select_by_visible_text(
        "Acme Corp (admin)"
    )
    wait_text(driver, "main", "laptop-home")
    shot("backups")

    # Invite a member; the sole admin is not offered to remove herself.
    go(driver, "#/members")
    form = wait_for(driver, "#invite-form")
    assert driver.find_elements(By.CSS_SELECTOR, f"button[aria-label='Remove {EMAIL}']") == []
    fill(form, email="bob@example.com")
    Select(form.find_element(By.NAME, "role")).select_by_value("viewer")
    submit(form)
    wait_text(driver, "main", "bob@example.com")
    shot("members")

    # An API key from the read-only preset, its token shown once.
    go(driver, "#/access")
    form = wait_for(driver, "#api-key-form")
    fill(form, name="ci-reader")
    form.find_element(By.CSS_SELECTOR, "button[data-preset=read-only]").click()
    checked = {
        box.get_attribute("value")
        for box in form.find_elements(By.CSS_SELECTOR, "input[name=perm]")
        if box.is_selected()
    }
    assert {"backups:read", "audit:read", "artifacts:download"} <= checked
    assert not {p for p in checked if p.endswith(":write")}
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
    arrived(driver, "#/audit?action=api_key.create")
    actions = set(
        driver.execute_script(
            "return [...document.querySelectorAll('main td:nth-child(2) code')]"
            ".map((c) => c.textContent)"
        )
    )
    assert actions == {"api_key.create"}

    # Quotas: human names, "unlimited" where there is no limit.
    go(driver, "#/quotas")
    meters = until(lambda: driver.find_elements(By.CSS_SELECTOR, "main meter"))
    assert {m.get_attribute("aria-label") for m in meters} >= {"Backups usage"}
    assert "∞" not in driver.find_element(By.ID, "view").text
    assert "_" not in driver.find_element(By.CSS_SELECTOR, "main table").text
    assert "no limit" in wait_for(driver, "tr[data-resource=storage_bytes]").text
    shot("quotas")

    # The operator blocks the workspace: a write is refused, and the banner alone says so.
    operator(data_dir, "billing", session["workspace_id"], "blocked")
    go(driver, "#/backups")
    form = wait_for(driver, "#backup-form")
    fill(form, name="refused")
    submit(form)
    banner = wait_for(driver, "#banner")
    assert "blocked" in banner.text
    assert "Request ID: " in banner.text
    assert not driver.find_elements(By.CSS_SELECTOR, ".error[data-code=billing_restricted]")
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

    # No error in the console: no script error, no CSP violation, no failed request but
    # the refusals provoked above.
    assert console_errors(driver) == []


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
