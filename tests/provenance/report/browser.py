"""Headless Debian chromium driven by selenium through Debian's chromedriver (no downloads)."""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--window-size=1280,2000")


@contextlib.contextmanager
def chromium() -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="prov-report-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for f in (*FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(f)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        import shutil

        shutil.rmtree(profile, ignore_errors=True)


def open_file(driver, path: Path, ready_js: str, timeout: float = 10.0) -> float:
    """Load a file:// page and wait until `ready_js` is true; seconds from navigation."""
    t0 = time.perf_counter()
    driver.get(Path(path).resolve().as_uri())
    while time.perf_counter() - t0 < timeout:
        if driver.execute_script(f"return !!({ready_js});"):
            return time.perf_counter() - t0
        time.sleep(0.02)
    raise TimeoutError(f"{path}: page not ready after {timeout} s ({ready_js})")


PLOTS_READY = ("document.querySelectorAll('.plot[data-rendered=\"1\"]').length >= 2 && "
               "(document.querySelector('#heatmap') === null || "
               "document.querySelector('#heatmap[data-rendered=\"1\"]') !== null)")


def console_errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "ERROR")]


PAGE_READY = "document.readyState === 'complete'"

# The page's width against the window's: a page wider than its viewport scrolls sideways.
WIDTHS = ("return {scroll: document.documentElement.scrollWidth, "
          "client: document.documentElement.clientWidth, window: window.innerWidth};")


def full_page_screenshot(driver, path: Path, most: int = 4000) -> None:
    """The page from its top, at the window's width, as tall as it is (up to `most` px)."""
    driver.execute_script("window.scrollTo(0, 0)")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    width = driver.execute_script("return window.outerWidth")
    driver.set_window_size(width, min(height + 140, most))
    driver.save_screenshot(str(path))
