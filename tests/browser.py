"""Opening an HTML report in Debian's chromium (installed by scripts/install-system-packages.sh), driven by
Playwright with executable_path: Playwright never downloads a browser here. As root, on a closed network, chromium
needs these flags or it stalls on sandboxing and on background connections it cannot make."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"  # gitignored: screenshots of the pages tested

# Per chart: its SVG layers and the marks in them (points, bars, heat map images, lines).
CHART_MARKS = """() => [...document.querySelectorAll('[data-figure]')].map(d => ({
  id: d.id,
  svg: d.querySelectorAll('svg.main-svg').length,
  marks: d.querySelectorAll('.scatterlayer .point, .scatterlayer .js-line, .barlayer .point path, .hm image').length,
}))"""


@dataclass
class Rendered:
    state: str  # body's data-charts: "rendered", or "error: ..."
    errors: list[str] = field(default_factory=list)  # page errors and console errors
    charts: list[dict[str, Any]] = field(default_factory=list)
    page: Any = None


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright
    profile = tempfile.mkdtemp(prefix="dbperf-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=FLAGS,
                                                           headless=True, viewport={"width": 1280, "height": 900})
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def render(context: Any, html_file: Path, screenshot: str) -> Rendered:
    """Opens the file, waits until its charts are drawn (or failed), keeps a full-page screenshot."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.goto(html_file.as_uri())
    page.wait_for_function("document.body.dataset.charts !== 'pending'", timeout=120_000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / screenshot), full_page=True)
    return Rendered(page.evaluate("document.body.dataset.charts"), errors, page.evaluate(CHART_MARKS), page)
