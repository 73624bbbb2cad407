"""A small Chrome DevTools Protocol client over --remote-debugging-pipe
(standard library only): load a page in headless Chromium, collect console
errors, uncaught exceptions and failed loads, evaluate JavaScript, take a
screenshot.

The pipe transport needs no port and no websocket: Chromium reads
NUL-terminated JSON messages on fd 3 and writes its own on fd 4.
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

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    for name in CHROMIUM_CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class ChromiumError(RuntimeError):
    pass


class Browser:
    def __init__(self, executable: str, profile: Path, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def plumbing() -> None:  # in the child, before exec: the pipes become fds 3 and 4
            # Move both out of the way first (either may be 3 or 4 already),
            # then place them; dup2 leaves the copies inheritable.
            high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        argv = [
            executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-extensions", "--mute-audio",
            "--hide-scrollbars", f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank",
        ]
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, preexec_fn=plumbing, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    # -- transport

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\0"
        while data:
            written = os.write(self._to_chrome, data)
            data = data[written:]

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChromiumError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise ChromiumError(f"Chromium closed the pipe: {err[-2000:]}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == ident:
                if "error" in reply:
                    raise ChromiumError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        for event in self.events:
            if event.get("method") == method and (session is None or event.get("sessionId") == session):
                return event
        while True:
            event = self._receive(deadline)
            self.events.append(event)
            if event.get("method") == method and (session is None or event.get("sessionId") == session):
                return event

    def close(self) -> None:
        try:
            self._send({"id": 10**9, "method": "Browser.close", "params": {}})
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.process.stderr:
            self.process.stderr.close()


def load_page(executable: str, url: str, profile: Path, screenshot: Path | None = None,
              width: int = 1280, height: int = 900, expression: str | None = None) -> dict[str, Any]:
    """Loads `url`; returns {'problems': [console errors, exceptions, failed
    loads], 'value': the expression's value, 'screenshot': path}."""
    browser = Browser(executable, profile)
    try:
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            browser.call(f"{domain}.enable", session=session)
        browser.call("Emulation.setDeviceMetricsOverride",
                     {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=session)
        browser.call("Page.navigate", {"url": url}, session=session)
        browser.wait_for("Page.loadEventFired", session)
        value = None
        if expression:
            result = browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                  session=session)
            if "exceptionDetails" in result:
                raise ChromiumError(f"evaluate: {result['exceptionDetails']}")
            value = result["result"].get("value")
        if screenshot is not None:
            shot = browser.call("Page.captureScreenshot", {"format": "png"}, session=session)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        problems = []
        for event in browser.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                problems.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Runtime.exceptionThrown":
                problems.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                problems.append(f"log {entry.get('source')}: {entry.get('text')} {entry.get('url', '')}")
            elif method == "Network.loadingFailed":
                problems.append(f"load failed: {params.get('errorText')} (request {params.get('requestId')})")
            elif method == "Network.requestWillBeSent":
                request_url = params.get("request", {}).get("url", "")
                if not request_url.startswith(("file:", "data:", "about:")):
                    problems.append(f"network request: {request_url}")
        return {"problems": problems, "value": value, "screenshot": screenshot}
    finally:
        browser.close()
