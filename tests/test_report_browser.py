"""The HTML report of a virtual-GPU campaign, opened from disk in headless Chromium.

Chromium is driven over the Chrome DevTools Protocol through ``--remote-debugging-pipe`` (file
descriptors 3 and 4, NUL-separated JSON messages), so the test needs no Python package beyond the
standard library: only the ``chromium`` executable (Debian package ``chromium``). Without it the test
is skipped, saying so, unless CALIB_REQUIRE_CHROMIUM=1 (CI), which makes a missing browser a failure.

The test asserts that every <img> of the page loaded (naturalWidth > 0), that the parameter table lists
every parameter of the file, and that the page has no scripts; it saves a full-page screenshot in the
test's temporary directory, and also at $CALIB_REPORT_SCREENSHOT when that variable is set (e.g.
CALIB_REPORT_SCREENSHOT=tests/benchmarks/report_screenshot.png to look at it: generated images are
git-ignored, so the screenshot never goes into the repository).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"), shutil.which("google-chrome"))
                 if p), None)
WIDTH_PX = 1240


class Cdp:
    """A minimal Chrome DevTools Protocol client over --remote-debugging-pipe."""

    def __init__(self, exe: str, profile: Path, timeout_s: float = 60.0):
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"]
        def child() -> None:
            # Chromium reads commands on fd 3 and writes replies on fd 4. The pipe ends may themselves be
            # 3 or 4: move them above 10 first, then into place, and make both inheritable (every other
            # descriptor Python opened is non-inheritable, PEP 446, so close_fds=False is safe).
            hi_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            hi_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen([exe, *flags], preexec_fn=child, close_fds=False,  # noqa: PLW1509
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        self.timeout_s = timeout_s

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        req: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            req["sessionId"] = session
        os.write(self._w, json.dumps(req).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            msg = self._read_message(deadline)
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, session: str | None = None) -> dict:
        deadline = time.monotonic() + self.timeout_s
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method and (session is None or ev.get("sessionId") == session):
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # our own child, by its handle
            self.proc.wait()
        os.close(self._r)
        os.close(self._w)


def evaluate(cdp: Cdp, session: str, expr: str) -> Any:
    res = cdp.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True}, session)
    if "exceptionDetails" in res:
        raise RuntimeError(f"page script failed: {res['exceptionDetails']}")
    return res["result"]["value"]


def test_report_of_virtual_campaign_renders_in_chromium(quick_run, tmp_path, cli):
    if CHROMIUM is None:
        msg = "chromium is not installed (Debian: apt-get install -y chromium); the browser test of the HTML report needs it"
        if os.environ.get("CALIB_REQUIRE_CHROMIUM") == "1":  # CI: a missing browser is a failure, not a skip
            pytest.fail(msg)
        pytest.skip(msg)
    from calib.core import params as P

    params_path = quick_run / "fitted" / "q.json"
    out = tmp_path / "report"
    code, _stdout, err = cli("report", params_path, "-o", out, "--session", quick_run / "logs" / "q")
    assert code == 0, err
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "<script" not in html.lower()  # readable without JavaScript: there is none
    doc = P.load(params_path)
    expected = sorted(f"{s}.{n}" for s, sec in doc.items() for n in sec.params)

    cdp = Cdp(CHROMIUM, tmp_path / "profile")
    try:
        target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        cdp.send("Page.enable", session=session)
        cdp.send("Emulation.setDeviceMetricsOverride",
                 {"width": WIDTH_PX, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session)
        cdp.send("Page.navigate", {"url": (out / "index.html").resolve().as_uri()}, session)
        cdp.wait_event("Page.loadEventFired", session)
        images = evaluate(cdp, session, "Array.from(document.images).map(i => ({src: i.getAttribute('src'), "
                                        "w: i.naturalWidth, h: i.naturalHeight, done: i.complete}))")
        rows = evaluate(cdp, session, "Array.from(document.querySelectorAll('#parameter-table tbody tr'))"
                                      ".map(r => r.cells[0].textContent.trim() + '.' + r.cells[1].textContent.trim())")
        height = evaluate(cdp, session, "document.documentElement.scrollHeight")
        shot = cdp.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                   "clip": {"x": 0, "y": 0, "width": WIDTH_PX, "height": height,
                                                            "scale": 1}}, session)
    finally:
        cdp.close()

    drawn = sorted(p.name for p in (out / "fig").glob("*.png"))
    assert len(images) == len(drawn) >= 7, (images, drawn)
    assert "floorplan.png" in drawn and any(i["src"].endswith("floorplan.png") for i in images)  # the heat map
    broken = [i["src"] for i in images if not (i["done"] and i["w"] > 0 and i["h"] > 0)]
    assert not broken, f"images that did not load: {broken}"
    assert sorted(rows) == expected  # every parameter of the file, once
    assert height > 5000  # the figures are laid out at full size, not collapsed
    png = base64.b64decode(shot["data"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "report_screenshot.png").write_bytes(png)
    if os.environ.get("CALIB_REPORT_SCREENSHOT"):
        Path(os.environ["CALIB_REPORT_SCREENSHOT"]).write_bytes(png)
