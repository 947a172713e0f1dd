"""report.html in a real browser: headless Chromium (Debian's ``chromium``) loads the page the
gate writes for the polluter-victim example, and a synthetic page of 10,000 tests x 20 runs
written by ``evgate_report_fixture``, offline and within a time bound.

``EVIDENCE_GATE_REPORT_FIXTURE`` names the fixture program (CTest sets it; by hand it is
looked for in the build tree).
"""

import os
import re
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness import EXAMPLES, Ledger, configure_example, ctest

# Seconds for Chromium to load, lay out and dump the 10,000-test page: a bound against a page
# that is not usable at all, wide enough for a loaded 2-core CI machine (the page takes ~5 s).
BROWSER_BOUND = 90
MAX_REPORT_BYTES = 5 * 1024 * 1024
SYNTHETIC_TESTS = 10000
HOSTILE_ID = "tests/test_hostile.py::test_id[<script>alert(\"x\")</script>&'y'\n\u00fc\u2713]"
HOSTILE_PARTNER = "tests/test_mod_0.py::test_case[4]"


def chromium():
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("'chromium' is not on PATH: install Debian's chromium package (apt-get install chromium); "
                    "this test loads report.html in headless Chromium", pytrace=False)
    return path


def browse(page, profile, *mode):
    """Chromium's output for `page` in headless `mode` (--dump-dom, --screenshot=...), and the seconds it took."""
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
            f"--user-data-dir={profile}", *mode, Path(page).as_uri()]
    start = time.monotonic()
    try:
        completed = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                   timeout=4 * BROWSER_BOUND)
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish within {4 * BROWSER_BOUND} s: {' '.join(argv)}", pytrace=False)
    elapsed = time.monotonic() - start
    assert completed.returncode == 0, f"$ {' '.join(argv)}\n(exit {completed.returncode})\n{completed.stderr[-4000:]}"
    return completed.stdout, elapsed


def screenshot(page, tmp_path):
    png = tmp_path / "report.png"
    _, elapsed = browse(page, tmp_path / "profile", f"--screenshot={png}", "--window-size=1280,2000")
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"chromium wrote no screenshot of {page}"
    assert png.stat().st_size > 20000, f"the screenshot of {page} is nearly empty ({png.stat().st_size} bytes)"
    return elapsed


class Page(HTMLParser):
    """The DOM Chromium dumped: text per <section id>, heat-map rows, scripts, and every attribute
    that could fetch something."""

    FETCHING = ("src", "href", "srcset", "action", "formaction", "poster", "data", "background")

    def __init__(self, dom):
        super().__init__(convert_charrefs=True)
        self.sections, self.heat_rows, self.scripts, self.fetches = {}, 0, 0, []
        self._section = None
        self.feed(dom)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self._section = attrs.get("id")
            self.sections[self._section] = ""
        self.heat_rows += tag == "td" and attrs.get("class") == "k"
        self.scripts += tag == "script"
        self.fetches += [f"<{tag} {name}={value}>" for name, value in attrs.items()
                         if name in self.FETCHING and value and not value.startswith("#")]

    def handle_endtag(self, tag):
        if tag == "section":
            self._section = None

    def handle_data(self, data):
        if self._section:
            self.sections[self._section] += data


def expect_offline(html, page):
    assert not re.search(r"https?:", html), f"{page} names a remote address"
    assert not page.fetches, f"the page would fetch: {page.fetches}"
    assert page.scripts == 1, f"expected only the report's own script, found {page.scripts} <script> elements"


def test_polluter_victim_report_shows_blocking_rows_heat_map_and_partner(tmp_path, build_dir):
    binary = tmp_path / "build"
    configure_example(EXAMPLES / "polluter-victim", binary, build_dir)
    run = ctest(binary, "-L", "evidence")
    ledger = Ledger(binary, "billing")
    report = binary / "evidence" / "billing" / "report.html"
    printed = re.findall(r"^report: (.+)$", run.test_output("billing.gate"), re.M)
    assert [Path(p).resolve() for p in printed] == [report.resolve()], f"the gate printed report lines {printed}"

    html = report.read_text(encoding="utf-8")
    dom, _ = browse(report, tmp_path / "profile", "--dump-dom")
    page = Page(dom)
    expect_offline(html, page)
    blocking = [row for row in ledger.rows if row["gate"] == "block"]
    assert sorted(row["test"] for row in blocking) == ["tests/test_billing.py::test_apply_discount",
                                                       "tests/test_billing.py::test_invoice_totals"], ledger
    for row in blocking:
        assert row["test"] in page.sections["blocking"], f"{row['test']} is not among the blocking rows of {report}"
        assert row["reason"] in page.sections["blocking"], f"the reason of {row['test']} is not shown"
        if "partner" in row:
            assert row["partner"] in page.sections["blocking"], f"the partner of {row['test']} is not shown"
    assert page.heat_rows == len(ledger.tests), f"the heat map has {page.heat_rows} rows for {len(ledger.tests)} tests"
    for test in ledger.tests:
        assert test in page.sections["heatmap"], f"{test} is not on the heat map"
    screenshot(report, tmp_path)
    expect_one_line_commands(report, tmp_path)

    markdown = (report.parent / "report.md").read_text(encoding="utf-8")
    assert markdown.startswith("## Evidence Gate: billing **BLOCKED**\n"), markdown
    for row in blocking:
        assert f"`{row['test']}`" in markdown, f"{row['test']} is not in report.md:\n{markdown}"


# Appended to a copy of the page: where each blocking row and its reason end up in a laptop's
# first screen, and whether the suite checks that pass are folded.
FIRST_SCREEN = """<script>
var lines = [];
document.querySelectorAll('#blocking tbody tr:not(.cmdrow)').forEach(function (r) {
  lines.push('blocking ' + (r.getBoundingClientRect().bottom <= window.innerHeight));
});
var folded = document.querySelector('#summary details.passing-checks');
lines.push('passing-checks ' + (folded ? (folded.open ? 'open' : 'folded') : 'absent'));
document.querySelectorAll('#summary details').forEach(function (d) {
  if (d.open) lines.push('open ' + d.querySelector('summary').textContent);
});
var pre = document.createElement('pre');
pre.id = 'measured';
pre.textContent = lines.join('\\n');
document.body.appendChild(pre);
</script></body>"""


def test_the_first_screen_answers_why_it_is_red(tmp_path, build_dir):
    """A project whose suite checks warn (a stray config among its tests) and pass by the dozen:
    at 1280 x 800 every blocking row and its reason are on the first screen, and the passing
    suite checks are folded."""
    source = tmp_path / "src"
    shutil.copytree(EXAMPLES / "polluter-victim", source)
    (source / "tests" / "sub").mkdir()
    (source / "tests" / "sub" / "pytest.ini").write_text("[pytest]\n")
    (source / "tests" / "sub" / "test_more.py").write_text("def test_more():\n    pass\n")
    binary = tmp_path / "build"
    configure_example(source, binary, build_dir)
    ctest(binary, "-L", "evidence")
    ledger = Ledger(binary, "billing")
    assert len(ledger.blocking()) == 2 and any(row.get("warning") for row in ledger.suite_rows), ledger
    report = binary / "evidence" / "billing" / "report.html"
    page = tmp_path / "first-screen.html"
    page.write_text(report.read_text(encoding="utf-8").replace("</body>", FIRST_SCREEN, 1), encoding="utf-8")
    dom, _ = browse(page, tmp_path / "profile", "--window-size=1280,800", "--virtual-time-budget=2000", "--dump-dom")
    measured = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert measured, f"the measuring script did not run:\n{dom[-2000:]}"
    lines = measured.group(1).split("\n")
    assert lines.count("blocking true") == 2 and "blocking false" not in lines, lines
    assert "passing-checks folded" in lines, lines
    assert not [line for line in lines if line.startswith("open ")], lines


# Appended to a copy of the page: measures every reproduce command as laid out at 1,400 px,
# then presses the first copy button.
MEASURE = """<script>
var lines = [];
document.querySelectorAll('code.cmd').forEach(function (c) {
  var style = getComputedStyle(c);
  var line = parseFloat(style.lineHeight), pad = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
  lines.push([c.clientHeight <= line + pad + 1, c.scrollWidth > c.clientWidth, c.textContent.length].join(' '));
});
lines.push('page ' + (document.documentElement.scrollWidth <= window.innerWidth));
var button = document.querySelector('button.copy');
button.click();
setTimeout(function () {
  lines.push('button ' + button.textContent);
  var pre = document.createElement('pre');
  pre.id = 'measured';
  pre.textContent = lines.join('\\n');
  document.body.appendChild(pre);
}, 200);
</script></body>"""


def expect_one_line_commands(report, tmp_path):
    """Each reproduce command is one line that scrolls sideways (the page does not widen), and
    its copy button answers."""
    page = tmp_path / "measure.html"
    page.write_text(report.read_text(encoding="utf-8").replace("</body>", MEASURE, 1), encoding="utf-8")
    dom, _ = browse(page, tmp_path / "profile-measure", "--window-size=1400,2000", "--virtual-time-budget=3000",
                    "--dump-dom")
    measured = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert measured, f"the measuring script did not run:\n{dom[-2000:]}"
    lines = measured.group(1).split("\n")
    commands = [line.split() for line in lines if line.split()[0] in ("true", "false")]
    assert commands, lines
    for one_line, scrolls, length in commands:
        assert one_line == "true", f"a reproduce command of {length} characters wraps: {lines}"
    assert any(scrolls == "true" for _, scrolls, _ in commands), f"no command is long enough to scroll: {lines}"
    assert "page true" in lines, f"a command widens the page: {lines}"
    assert any(line in ("button copied", "button selected: Ctrl+C copies it") for line in lines), lines


def report_fixture():
    explicit = os.environ.get("EVIDENCE_GATE_REPORT_FIXTURE")
    if explicit:
        return Path(explicit)
    build = os.environ.get("EVIDENCE_GATE_BUILD_DIR")
    path = Path(build or ".") / "tests" / "evgate_report_fixture"
    if not path.is_file():
        pytest.fail("set EVIDENCE_GATE_REPORT_FIXTURE, or EVIDENCE_GATE_BUILD_DIR to a build tree that has "
                    "built tests/evgate_report_fixture", pytrace=False)
    return path


def test_ten_thousand_tests_render_within_the_bound(tmp_path):
    written = subprocess.run([str(report_fixture()), str(tmp_path), str(SYNTHETIC_TESTS), "20"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert written.returncode == 0, written.stderr
    report = tmp_path / "report.html"
    size = report.stat().st_size
    assert size < MAX_REPORT_BYTES, f"{report} has {size} bytes for {SYNTHETIC_TESTS} tests"

    html = report.read_text(encoding="utf-8")
    dom, elapsed = browse(report, tmp_path / "profile", "--dump-dom")
    assert elapsed < BROWSER_BOUND, f"chromium took {elapsed:.1f} s to load and dump {report}"
    page = Page(dom)
    expect_offline(html, page)
    assert page.heat_rows == SYNTHETIC_TESTS
    assert HOSTILE_ID in page.sections["blocking"], "the hostile node id is not shown verbatim among the blocking rows"
    assert HOSTILE_PARTNER in page.sections["blocking"], "the partner of the hostile row is not shown"
    assert HOSTILE_ID in page.sections["heatmap"]
    elapsed = screenshot(report, tmp_path)
    assert elapsed < BROWSER_BOUND, f"chromium took {elapsed:.1f} s to screenshot {report}"
