"""The HTML report laid out by a real browser (the system's headless Chromium): nothing overflows the page, at a
desktop's width and a phone's, every frontier label and tick is inside its SVG, and the axes have ticks.

Skipped, saying so, where no Chromium is installed (`.ci/run` installs Debian's `chromium`)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from arenatui.cli import main

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (.ci/run installs Debian's "
                                                         "chromium); the HTML report's layout is not checked")

MEASURE = """<script>
const W = document.documentElement.clientWidth;
const out = {width: W, scrollWidth: document.documentElement.scrollWidth, overflowing: [], outside: [], ticks: 0,
             frontiers: 0, repeated: []};
for (const e of document.body.querySelectorAll('*')) {
  const r = e.getBoundingClientRect();
  // a table may be wider than a phone: its box scrolls sideways (.wide), the page does not
  if (r.right > W + 1 && !e.closest('.wide')) {
    out.overflowing.push(e.tagName + ' ' + (e.textContent || '').slice(0, 40));
  }
}
for (const svg of document.querySelectorAll('svg.frontier')) {
  out.frontiers += 1;
  const vb = svg.viewBox.baseVal;
  for (const t of svg.querySelectorAll('text:not([transform])')) {
    const b = t.getBBox();
    if (b.x < vb.x - 0.5 || b.y < vb.y - 0.5 || b.x + b.width > vb.x + vb.width + 0.5 ||
        b.y + b.height > vb.y + vb.height + 0.5) out.outside.push(t.textContent);
  }
  out.ticks += svg.querySelectorAll('text.tick').length;
  // drawn size over drawing size: below ~0.85 its 10-unit tick labels are under 8.5 px, unreadable on a phone
  out.scales = (out.scales || []).concat([svg.getBoundingClientRect().width / vb.width]);
}
// each sideways-scrolling box: the heading before it, and whether it scrolls (its table wider than the box)
out.wide = [...document.querySelectorAll('.wide')].map(b => {
  let h = b.previousElementSibling;
  while (h && !/^H[123]$/.test(h.tagName)) h = h.previousElementSibling;
  return [h ? h.textContent : '', b.scrollWidth, b.clientWidth];
});
document.body.setAttribute('data-layout', JSON.stringify(out));
</script>"""


def _chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           "--hide-scrollbars", f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of a run whose models have long names (the labels that ran off the SVG's edge)."""
    d = tmp_path_factory.mktemp("html-report")
    sim = {"base_latency_s": 0.0, "per_token_s": 0.0, "jitter": 0.0}
    models = [{"key": k, "provider": "sim", "model": k, "price_in_per_mtok": p, "price_out_per_mtok": 2 * p,
               "sim": {**sim, "accuracy": a}}
              for k, p, a in (("a-rather-long-model-name-large", 3.0, 0.9),
                              ("a-rather-long-model-name-small", 0.1, 0.6), ("mid-sized", 0.8, 0.75))]
    # a model that errors: the failures table (a provider's message) sits on the page at a phone's width too
    models[2]["sim"]["transient_rate"] = 0.3
    project = d / "p.toml"
    project.write_text(tomli_w.dumps({"project": {"name": "html"}, "run": {"seed": 2, "trials": 2, "max_attempts": 1},
                                      "models": models,
                                      "cases": [{"id": f"c{i}", "input": f"q{i}", "expected": "yes"}
                                                for i in range(16)]}), encoding="utf-8")
    db = d / "r.db"
    assert main(["evaluate", "--project", str(project), "--db", str(db), "--quiet", "--no-report",
                 "--fail-on-error", "1"]) == 0
    out = d / "report.html"
    assert main(["report", "last", "--db", str(db), "-f", "html", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "<h2>Failures</h2>\n<ul><li><b>mid-sized</b>: transient" in text
    assert "<h2>max_tokens and timeout_s</h2>" in text
    return out


def layout_of(report: Path, tmp_path: Path, width: int) -> dict[str, Any]:
    """The page as Chromium lays it out at `width` (MEASURE's figures), for any test of an HTML page."""
    page = tmp_path / f"measured-{width}.html"
    page.write_text(report.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    p = _chromium(f"--window-size={width},900", "--dump-dom", page.as_uri(), profile=tmp_path / f"profile-{width}")
    m = re.search(r'data-layout="([^"]*)"', p.stdout)
    assert m, (p.returncode, p.stderr[-2000:])
    return json.loads(html.unescape(m.group(1)))  # type: ignore[no-any-return]


@pytest.mark.parametrize("width", [1280, 500, 390], ids=["desktop", "phone", "small-phone"])
def test_nothing_overflows_and_every_label_is_inside_its_svg(report: Path, tmp_path: Path, width: int) -> None:
    layout = layout_of(report, tmp_path, width)
    assert layout["frontiers"] == 2
    assert layout["overflowing"] == [], layout
    assert layout["scrollWidth"] <= layout["width"], layout  # type: ignore[operator]
    assert layout["outside"] == [], layout
    assert layout["ticks"] >= 2 * (5 + 5)  # both axes of both frontiers are ticked
    assert layout["repeated"] == [], layout
    assert min(layout["scales"]) >= 0.85, layout  # type: ignore[call-overload]  # a chart scrolls before it shrinks


@pytest.mark.parametrize("width", [1280, 500], ids=["desktop", "phone"])
def test_a_screenshot_renders(report: Path, tmp_path: Path, width: int) -> None:
    """The screenshot a person looks at (kept under the test's tmp folder): Chromium draws the page, at a desktop's
    width and a phone's."""
    shot = tmp_path / f"report-{width}.png"
    p = _chromium(f"--window-size={width},4000", f"--screenshot={shot}", report.as_uri(),
                  profile=tmp_path / "profile")
    assert shot.exists() and shot.stat().st_size > 10_000, p.stderr[-2000:]


def test_the_leaderboard_fits_a_desktop_page(report: Path, tmp_path: Path) -> None:
    """Issue 37 item 16: at 1280 px the leaderboard still scrolled sideways, p95 and later hidden."""
    layout = layout_of(report, tmp_path, 1280)
    boxes = [(h, sw, cw) for h, sw, cw in layout["wide"] if str(h).startswith("Leaderboard")]  # type: ignore[attr-defined]
    assert len(boxes) == 2, layout["wide"]  # the figures, then spend, latency and reliability
    for heading, scroll_w, client_w in boxes:
        assert scroll_w <= client_w, (heading, scroll_w, client_w)
