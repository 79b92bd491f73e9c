"""Fixtures of the browser tests: a real ``strongroom serve`` and headless chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from browsing import CHROMEDRIVER, CHROMIUM, WIDE
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

from support.serve_process import free_port, serving


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The served data dir (operator commands act on it)."""
    return tmp_path_factory.mktemp("serve") / "data"


@pytest.fixture(scope="module")
def server(data_dir: Path) -> Iterator[str]:
    """``strongroom serve`` on a free loopback port with a fresh data dir."""
    with serving(data_dir, free_port(), data_dir.parent / "serve.log") as url:
        yield url


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
        f"--window-size={WIDE},1100",
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
