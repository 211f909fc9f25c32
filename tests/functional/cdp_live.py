#!/usr/bin/env python3
"""cdp_live.py - drive headless Chromium for serve_browser_spec.lua.

Usage: cdp_live.py CHROMIUM URL SEQ SCREENSHOT -- POST-COMMAND...

Opens URL in headless Chromium, speaking the DevTools protocol over
--remote-debugging-pipe (file descriptors 3 and 4, NUL-terminated JSON: no
websocket client needed, only the standard library). Waits until the page's
event stream is open (the "live" badge the page's script sets), runs
POST-COMMAND (which posts message SEQ), and waits until the page's DOM shows
message SEQ, without a reload. Then it reads what the spec checks, saves a
screenshot and prints one JSON object:

  {"live": bool, "appeared": bool, "latency_ms": float, "reloaded": bool,
   "title": text of the new message's title, "scripts": number of <script>,
   "pwned": window.__pwned, "images": <img> elements in the timeline,
   "links": hrefs in the timeline that are javascript:, "error": str|null}

Exit 0 when it could ask all of that (the spec judges the answers), 1 when
Chromium could not be driven.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

TIMEOUT = 60.0


class Browser:
    def __init__(self, chromium, profile):
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def fds():
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-dev-shm-usage", "--remote-debugging-pipe", "--user-data-dir=" + profile,
             "--window-size=1280,900", "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self.next_id = 0
        self.buf = b""

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            while b"\0" not in self.buf:
                chunk = os.read(self.from_child, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == want:
                if "error" in reply:
                    raise RuntimeError(method + ": " + json.dumps(reply["error"]))
                return reply.get("result", {})
        raise RuntimeError(method + ": no answer")

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def main():
    if len(sys.argv) < 7 or sys.argv[5] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    chromium, url, seq, shot = sys.argv[1:5]
    post = sys.argv[6:]
    out = {"live": False, "appeared": False, "latency_ms": None, "reloaded": None, "title": None,
           "scripts": None, "pwned": None, "images": None, "links": None, "error": None}
    with tempfile.TemporaryDirectory() as profile:
        b = Browser(chromium, profile)
        try:
            target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            b.send("Page.enable", session=session)
            b.send("Page.navigate", {"url": url}, session=session)

            def ev(expr):
                r = b.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=session)
                return r.get("result", {}).get("value")

            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                if ev("(function(){var e=document.getElementById('live');"
                      "return !!e && e.textContent==='live';})()"):
                    out["live"] = True
                    break
                time.sleep(0.05)
            if out["live"]:
                # A mark that a reload would lose.
                ev("window.__sameDocument = 1")
                t0 = time.monotonic()
                subprocess.run(post, check=True, stdout=subprocess.DEVNULL)
                check = "!!document.getElementById('m-%d')" % int(seq)
                while time.monotonic() - t0 < TIMEOUT:
                    if ev(check):
                        out["appeared"] = True
                        out["latency_ms"] = (time.monotonic() - t0) * 1000
                        break
                    time.sleep(0.005)
                time.sleep(0.5)  # the panels' refresh after the message
                out["reloaded"] = ev("window.__sameDocument !== 1")
                out["title"] = ev("(function(){var e=document.querySelector('#m-%d .title');"
                                  "return e ? e.textContent : null;})()" % int(seq))
                out["scripts"] = ev("document.querySelectorAll('script').length")
                out["pwned"] = ev("window.__pwned === undefined ? null : window.__pwned")
                out["images"] = ev("document.querySelectorAll('#timeline img').length")
                out["links"] = ev("Array.prototype.filter.call(document.querySelectorAll('#timeline a'),"
                                  "function(a){return /^javascript:/i.test(a.getAttribute('href')||'');}).length")
            shot_data = b.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
            with open(shot, "wb") as f:
                f.write(base64.b64decode(shot_data))
        except Exception as e:  # reported to the spec, which fails on it
            out["error"] = str(e)
        finally:
            b.close()
    print(json.dumps(out))
    return 0 if out["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
