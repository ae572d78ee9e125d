#!/usr/bin/env python3
"""Takes docs/screenshots/web-page.png: a few downloads in their states on the daemon's web page,
in headless chromium at 1200x700. Needs a daemon started with -j 2 and a fault server:

  rangefetch daemon --rpc-listen-port 0 -j 2 --dir D --state-dir S --rpc-secret SECRET &
  python3 Tests/Support/fault_server.py --port 0 &
  web_page_screenshot.py --page http://127.0.0.1:DAEMON/ --token SECRET \
      --server http://127.0.0.1:FAULT --out docs/screenshots/web-page.png
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from web_page_check import Page, start_browser  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--page", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--server", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    def rpc(method, *params):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": ["token:" + args.token, *params]})
        request = urllib.request.Request(args.page + "jsonrpc", body.encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.load(answer)["result"]

    def status(gid):
        return rpc("aria2.tellStatus", gid, ["status", "completedLength"])

    def wait(gid, predicate, seconds=60):
        deadline = time.time() + seconds
        while time.time() < deadline:
            if predicate(status(gid)):
                return
            time.sleep(0.2)
        raise SystemExit("timed out waiting for " + gid)

    done = rpc("aria2.addUri", [args.server + "/data/50331648/debian-12.8.0-amd64-netinst.iso"], {"split": "4"})
    wait(done, lambda s: s["status"] == "complete")
    broken = rpc("aria2.addUri", [args.server + "/data/1000/old-release.tar.xz?status=404"], {})
    wait(broken, lambda s: s["status"] == "error")
    paused = rpc("aria2.addUri", [args.server + "/data/134217728/Fedora-Workstation-Live-41.iso?rate=2000000"], {"split": "2"})
    wait(paused, lambda s: int(s["completedLength"]) > 30 << 20)
    rpc("aria2.pause", paused)
    rpc("aria2.addUri", [args.server + "/data/268435456/archlinux-2024.12.01-x86_64.iso?rate=700000"], {"split": "4"})
    rpc("aria2.addUri", [args.server + "/data/536870912/openstreetmap-europe.osm.pbf?rate=900000"], {"split": "2"})
    rpc("aria2.addUri", [args.server + "/data/1073741824/ubuntu-24.04.1-desktop-amd64.iso"], {})

    profile = tempfile.mkdtemp(prefix="rf-chromium-")
    driver = start_browser(profile)
    try:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 1200, "height": 700, "deviceScaleFactor": 1, "mobile": False})
        page = Page(driver, 60)
        driver.get(args.page)
        page.wait("the token form", lambda d: page.element("token-panel").is_displayed())
        page.element("token-input").send_keys(args.token)
        page.element("token-submit").click()
        page.wait("the WebSocket", lambda d: page.element("live").get_attribute("data-state") == "live")
        page.element("add-uris").send_keys(args.server + "/data/8388608/example.bin")
        time.sleep(12)  # speeds settle
        driver.save_screenshot(args.out)
        print("saved " + args.out)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
