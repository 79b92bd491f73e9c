"""Helpers of the browser tests: waiting, filling forms, screenshots at two widths, and
the checks every view must pass (accessible names, unique ids, nothing wider than the
screen, no console error)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from support.serve_process import STRONGROOM, unconfigured_environment

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SHOTS_COPY = Path(__file__).parent / "screenshots"
WAIT = 20
WIDE, NARROW = 1280, 420


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


DEFECTS = """
const out = [];
const ids = [...document.querySelectorAll('[id]')].map((e) => e.id);
const twice = new Set(ids.filter((id, i) => ids.indexOf(id) !== i));
for (const id of twice) out.push(`duplicate id ${id}`);
const root = document.documentElement;
const room = root.clientWidth;
if (root.scrollWidth > room) out.push(`page ${root.scrollWidth}px wide in ${room}px`);
for (const t of document.querySelectorAll('main table')) {
  const th = t.querySelector('th');
  if (t.getBoundingClientRect().width > t.parentElement.clientWidth + 1) {
    out.push(`table wider than its container (${th ? th.textContent : ''})`);
  }
}
for (const e of document.querySelectorAll('body *')) {
  if (e.closest('thead')) continue;  // visually hidden on narrow screens
  const box = e.getBoundingClientRect();
  if (box.width && box.right > room + 1) {
    out.push(`${e.tagName.toLowerCase()}.${e.className} sticks out to ${Math.round(box.right)}px`);
  }
}
return out.slice(0, 10);
"""


def defects(driver: WebDriver) -> list[str]:
    """What is wrong with the page as drawn: an id used twice, the page or a table wider
    than its room (something would scroll sideways)."""
    found: list[str] = driver.execute_script(DEFECTS)
    return found


def narrow(driver: WebDriver, on: bool) -> None:
    """Draw the page as a 420 px wide screen would (or back to the window's width)."""
    if on:
        metrics = {"width": NARROW, "height": 1100, "deviceScaleFactor": 1, "mobile": False}
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    else:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    until(lambda: driver.execute_script("return window.innerWidth") == (NARROW if on else WIDE))


class Shots:
    """Screenshots, numbered in order, at 1280 and 420 px, in the tmp dir (and copied to
    tests/browser/screenshots when ``STRONGROOM_SCREENSHOTS`` is set). Each width is checked
    for defects first."""

    def __init__(self, driver: WebDriver, folder: Path) -> None:
        self.driver, self.folder, self.count = driver, folder, 0
        self.copy = bool(os.environ.get("STRONGROOM_SCREENSHOTS"))
        print(f"\nscreenshots: {folder}")

    def _save(self, name: str) -> Path:
        path = self.folder / f"{name}.png"
        self.driver.execute_script("window.scrollTo(0, 0)")
        assert self.driver.save_screenshot(str(path))
        if self.copy:
            SHOTS_COPY.mkdir(exist_ok=True)
            shutil.copy(path, SHOTS_COPY / path.name)
        return path

    def __call__(self, name: str) -> Path:
        self.count += 1
        stem = f"{self.count:02d}-{name}"
        wide = self._save(f"{stem}-{WIDE}")
        found = defects(self.driver)
        assert found == [], f"{name} at {WIDE} px: {found}"
        narrow(self.driver, True)
        try:
            self._save(f"{stem}-{NARROW}")
            found = defects(self.driver)
            assert found == [], f"{name} at {NARROW} px: {found}"
        finally:
            narrow(self.driver, False)
        return wide


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
    """Type into the form's visible inputs by name (cleared first)."""
    for name, value in values.items():
        element = next(e for e in form.find_elements(By.NAME, name) if e.is_displayed())
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
    arrived(driver, hash_route)


def arrived(driver: WebDriver, hash_route: str) -> None:
    """Wait for the view of ``hash_route``; its controls all have accessible names."""
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


def console_errors(driver: WebDriver) -> list[str]:
    """Errors in the console since the last look, except the browser's own notes of a
    refused request (4xx: the test provokes refusals on purpose). A script error, a CSP
    violation or a 5xx counts."""
    found = []
    for entry in driver.get_log("browser"):
        if entry["level"] != "SEVERE":
            continue
        refused = entry.get("source") == "network" and re.search(
            r"status of 4\d\d", entry["message"]
        )
        if not refused:
            found.append(entry["message"])
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
