#!/usr/bin/env python3
"""Drives the daemon's web page in Debian's headless chromium (Selenium + chromium-driver), as a
user would: WebPageTests runs it against a daemon and a fault server it started.

  web_page_check.py --page http://127.0.0.1:PORT/ --token SECRET \
      --fast-url URL --slow-url URL [--metalink FILE] [--queue-urls URL URL] [--screenshot PATH]

Steps, each waited for at most --timeout seconds (default 60): a wrong token is refused with a
message; the right one opens the queue; --fast-url is added and its row reaches "complete" and
100%; --slow-url is added with 2 connections, seen active, paused (its row says "paused"),
resumed (active or complete), then complete; the fast one's result is cleared from the list.
With --metalink, that file is added through the file input and its download (web-meta.bin)
reaches 100%. With --queue-urls (for a daemon run with -j 1), two more are added while the slow
one is paused, and the paused one is moved down the waiting list past the waiting one.
Prints "step: ..." lines as it goes and "PASS" at the end; exits 1 with the page's text and the
browser's console on any failure. Chromium and its driver are stopped in a finally.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--page", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--fast-url", required=True)
    parser.add_argument("--slow-url", required=True)
    parser.add_argument("--metalink", help="a .meta4 file to add through the page's file input")
    parser.add_argument("--queue-urls", nargs=2, metavar=("RUNNING", "WAITING"),
                        help="added while the slow one is paused (the daemon runs one download at a time): "
                             "the paused one is moved down the waiting list past WAITING")
    parser.add_argument("--screenshot")
    parser.add_argument("--timeout", type=float, default=60)
    return parser.parse_args()


def start_browser(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in ("--headless=new", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,700",
                 "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                 "--user-data-dir=" + profile):
        options.add_argument(flag)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # chromium refuses to run as root with its sandbox
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)


def percent(text):
    """42.5 of "42.5%"; -1 for anything else ("?")."""
    try:
        return float(text.rstrip("%"))
    except ValueError:
        return -1


def step(text):
    print("step: " + text, flush=True)


class Page:
    def __init__(self, driver, timeout):
        self.driver = driver
        self.timeout = timeout

    def wait(self, what, condition):
        """Polls `condition(driver)` until it is truthy, for at most the timeout."""
        try:
            return WebDriverWait(self.driver, self.timeout, poll_frequency=0.1,
                                 ignored_exceptions=(WebDriverException,)).until(condition)
        except Exception as error:  # TimeoutException, chiefly
            raise AssertionError("timed out after %.0f s waiting for %s (%s)" % (self.timeout, what, type(error).__name__))

    def element(self, element_id):
        return self.driver.find_element(By.ID, element_id)

    def row(self, name):
        rows = self.driver.find_elements(By.CSS_SELECTOR, 'tr[data-name="%s"]' % name)
        return rows[0] if rows else None

    def row_state(self, name):
        """(status, percent text) of the row named `name`, or None while it is not listed."""
        row = self.row(name)
        if row is None:
            return None
        return row.get_attribute("data-status"), row.find_element(By.CSS_SELECTOR, ".percent").text

    def wait_row(self, name, what, predicate):
        return self.wait("%s %s" % (name, what), lambda d: (lambda s: s if s and predicate(*s) else None)(self.row_state(name)))

    def click(self, name, action):
        button = self.wait("the %s button of %s" % (action, name),
                           lambda d: next((b for b in self.row(name).find_elements(By.CSS_SELECTOR, '[data-action="%s"]' % action)
                                           if b.is_displayed()), None) if self.row(name) else None)
        button.click()

    def add(self, url, connections=None):
        box = self.element("add-uris")
        box.clear()
        box.send_keys(url)
        split = self.element("add-split")
        split.clear()
        if connections:
            split.send_keys(str(connections))
        self.element("add-button").click()
        self.wait("the added notice", lambda d: self.element("notice").text.startswith("Added "))


def run(args, driver):
    page = Page(driver, args.timeout)
    fast = args.fast_url.split("?")[0].rstrip("/").split("/")[-1]
    slow = args.slow_url.split("?")[0].rstrip("/").split("/")[-1]

    driver.get(args.page)
    page.wait("the token form", lambda d: page.element("token-panel").is_displayed())
    step("token form shown")

    page.element("token-input").send_keys("not-the-token")
    page.element("token-submit").click()
    page.wait("the refusal", lambda d: "refused" in page.element("token-message").text
              and page.element("token-message").get_attribute("class") == "bad")
    assert not page.element("app").is_displayed(), "the queue is shown after a wrong token"
    step("wrong token refused: " + page.element("token-message").text)

    page.element("token-input").send_keys(args.token)
    page.element("token-submit").click()
    page.wait("the queue", lambda d: page.element("app").is_displayed())
    page.wait("the WebSocket", lambda d: page.element("live").get_attribute("data-state") == "live")
    step("token accepted, WebSocket live")

    page.add(args.fast_url)
    status, shown = page.wait_row(fast, "complete at 100%", lambda s, p: s == "complete" and p == "100%")
    step("%s: %s %s" % (fast, status, shown))

    if args.metalink:
        page.element("metalink-file").send_keys(os.path.abspath(args.metalink))
        page.element("add-metalink").click()
        page.wait("the metalink's notice", lambda d: "from " + os.path.basename(args.metalink) in page.element("notice").text)
        status, shown = page.wait_row("web-meta.bin", "complete at 100%", lambda s, p: s == "complete" and p == "100%")
        step("metalink %s: web-meta.bin %s %s" % (os.path.basename(args.metalink), status, shown))

    page.add(args.slow_url, connections=2)
    status, shown = page.wait_row(slow, "active and under way", lambda s, p: s == "active" and 0 < percent(p) < 100)
    step("%s: %s %s, connections %s" % (slow, status, shown, page.row(slow).find_element(By.CSS_SELECTOR, ".connections").text))
    page.click(slow, "pause")
    status, shown = page.wait_row(slow, "paused", lambda s, p: s == "paused")
    assert shown != "100%", "paused at 100%"
    step("%s: %s at %s" % (slow, status, shown))
    time.sleep(1.5)  # a paused download stays put across refreshes
    again = page.row_state(slow)
    assert again == (status, shown), "paused download moved: %s -> %s" % ((status, shown), again)

    if args.queue_urls:
        running, waiting = (url.split("?")[0].rstrip("/").split("/")[-1] for url in args.queue_urls)
        page.add(args.queue_urls[0], connections=1)
        page.wait_row(running, "active", lambda s, p: s == "active")
        page.add(args.queue_urls[1])
        page.wait_row(waiting, "waiting", lambda s, p: s == "waiting")
        position = lambda name: int(page.row(name).find_element(By.CSS_SELECTOR, ".position").text)
        assert position(slow) < position(waiting), "%s is not ahead of %s" % (slow, waiting)
        page.click(slow, "down")
        page.wait(slow + " moved below " + waiting, lambda d: position(waiting) < position(slow))
        rows = [row.get_attribute("data-name") for row in driver.find_elements(By.CSS_SELECTOR, "#queue tr")]
        assert rows.index(waiting) < rows.index(slow), "rows out of order: %s" % rows
        step("%s moved down past %s: %s" % (slow, waiting, rows))

    page.click(slow, "resume")
    status, shown = page.wait_row(slow, "resumed", lambda s, p: s in ("active", "complete"))
    step("%s resumed: %s %s" % (slow, status, shown))
    if args.screenshot:
        driver.save_screenshot(args.screenshot)
        step("screenshot " + args.screenshot)
    status, shown = page.wait_row(slow, "complete at 100%", lambda s, p: s == "complete" and p == "100%")
    step("%s: %s %s" % (slow, status, shown))

    page.click(fast, "remove")
    page.wait(fast + "'s row gone", lambda d: page.row(fast) is None)
    step(fast + " cleared")
    error = page.element("error").text
    assert not error, "the page shows an error: " + error


def main():
    args = parse()
    profile = tempfile.mkdtemp(prefix="rf-chromium-")
    driver = None
    try:
        driver = start_browser(profile)
        run(args, driver)
        print("PASS", flush=True)
        return 0
    except (AssertionError, WebDriverException) as error:
        print("FAIL: %s" % error, flush=True)
        if driver is not None:
            try:
                print("page text:\n" + driver.find_element(By.TAG_NAME, "body").text, flush=True)
                for entry in driver.get_log("browser"):
                    print("console: %s %s" % (entry.get("level"), entry.get("message")), flush=True)
            except WebDriverException:
                pass
        return 1
    finally:
        if driver is not None:
            driver.quit()  # stops chromedriver and the chromium it started
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
