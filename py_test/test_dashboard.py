"""The status page in a real browser: Debian's headless Chromium driven by Selenium.

`make browser` (part of `make test`) installs Chromium and its driver when they are missing.
What the tests count is page refreshes, never seconds: the time bounds below only stop a broken
page from hanging the suite on a busy machine.
"""

import json
import os
import uuid

import pytest

from helpers import chat, http, wait_until
from vllm_router import Router, RouterArgs
from vllm_router.mock_workers import MockWorkers

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1320,720", "--hide-scrollbars"]
ADMIN_KEY = "dashboard-admin-key"
WORKER_KEY = "dashboard-worker-key"
SCREENSHOT = os.path.join(os.path.dirname(__file__), "output", "dashboard.png")
PATIENCE_SECS = 30

# One call reads everything a check needs from the same rendering of the page.
READ_PAGE = """
const rows = [...document.querySelectorAll('#workers tbody tr')].map((row) => ({
  url: row.dataset.url,
  model: row.querySelector('.model').textContent,
  cls: row.className,
  health: row.querySelector('.health').textContent,
  circuit: row.querySelector('.circuit').textContent,
  sessions: Number(row.querySelector('.sessions-count').textContent),
  background: getComputedStyle(row.querySelector('td')).backgroundColor,
}));
return {refresh: Number(document.body.dataset.refresh || 0), rows: rows,
        boardShown: !document.getElementById('board').hidden,
        loginShown: !document.getElementById('login').hidden,
        loginReason: document.getElementById('login-reason').textContent,
        kvHeadShown: !document.getElementById('kv-head').hidden,
        notes: document.getElementById('notes').textContent,
        workersCard: document.getElementById('t-workers').textContent};
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            pytest.fail(f"{path} is missing: `make browser` installs Chromium and its driver",
                        pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def cluster(mock_workers):
    """A router over two shared mock workers and one of its own that a test can take down."""
    victim = MockWorkers(1)
    worker_urls = mock_workers[:2] + victim.urls
    args = RouterArgs(port=0, prometheus_port=0, policy="sticky_least_loaded",
                      worker_urls=worker_urls, admin_api_key=ADMIN_KEY,
                      api_key=WORKER_KEY, worker_startup_check_interval=1,
                      health_check_interval_secs=1, health_failure_threshold=1)
    router = Router.from_args(args).launch()
    yield router, victim, worker_urls
    router.shutdown()
    victim.close()


def read_page(browser) -> dict:
    return browser.execute_script(READ_PAGE)


def wait_for_page(browser, predicate, what: str) -> dict:
    seen = {}

    def check():
        seen.update(read_page(browser))
        return predicate(seen)

    assert wait_until(check, PATIENCE_SECS, interval=0.05), f"{what}; the page shows {seen}"
    return seen


def enter_key(browser, key: str) -> None:
    field = browser.find_element("id", "login-key")
    field.send_keys(key)
    browser.find_element("css selector", "#login-form button").click()


def sessions_of(page: dict, url: str) -> int:
    return next(row["sessions"] for row in page["rows"] if row["url"] == url)


def open_with_key(browser, url: str) -> None:
    browser.get(url + "/dashboard")
    wait_for_page(browser, lambda p: p["loginShown"] or p["boardShown"], "neither the key form nor the board")
    if read_page(browser)["loginShown"]:
        enter_key(browser, ADMIN_KEY)
    wait_for_page(browser, lambda p: p["boardShown"], "the board never showed")


def test_the_page_follows_sessions_and_worker_health(browser, cluster):
    router, victim, worker_urls = cluster

    browser.get(router.url + "/dashboard")
    page = wait_for_page(browser, lambda p: p["loginShown"], "no key form without a key")
    assert page["loginReason"] == "This router needs its admin API key to show its status."

    enter_key(browser, "not-the-key")
    page = wait_for_page(browser, lambda p: "did not accept" in p["loginReason"], "a wrong key got no message")
    assert page["loginReason"] == ("The router did not accept that key: Missing or invalid admin API key "
                                   "(send 'Authorization: Bearer <admin_api_key>')")
    assert not page["boardShown"]

    enter_key(browser, ADMIN_KEY)
    page = wait_for_page(browser, lambda p: len(p["rows"]) == 3, "the workers never appeared")
    assert [row["url"] for row in page["rows"]] == worker_urls
    for row in page["rows"]:
        assert (row["health"], row["circuit"], row["cls"], row["sessions"]) == ("healthy", "closed", "", 0)
    assert not page["kvHeadShown"]
    assert "KV-cache hit rate: no column, because the routing policy (sticky_least_loaded)" in page["notes"]
    assert ADMIN_KEY not in browser.page_source

    # A new session shows within two refreshes, and so does its release.
    session = "dash-" + uuid.uuid4().hex
    before = read_page(browser)["refresh"]
    assert chat(router.url, session, "hello")[0] == 200
    owner = next(url for url, count in router.sessions().items() if count == 1)
    page = wait_for_page(browser, lambda p: sessions_of(p, owner) == 1, "the new session never showed")
    assert page["refresh"] <= before + 2, f"shown by refresh {page['refresh']}, asked after {before}"

    before = read_page(browser)["refresh"]
    router.finish_session(session)
    page = wait_for_page(browser, lambda p: sessions_of(p, owner) == 0, "the released session never left")
    assert page["refresh"] <= before + 2, f"shown by refresh {page['refresh']}, released after {before}"

    # Some traffic for the rates, and sessions left open for the bars.
    sessions = [f"dash-{uuid.uuid4().hex}" for _ in range(5)]
    for turn in range(3):
        for s in sessions:
            assert chat(router.url, s, f"turn {turn}")[0] == 200

    victim.close()
    page = wait_for_page(browser, lambda p: any(r["url"] == victim.urls[0] and r["cls"] == "down"
                                                for r in p["rows"]), "the dead worker never turned red")
    down = next(row for row in page["rows"] if row["url"] == victim.urls[0])
    assert down["health"] == "unhealthy"
    assert down["background"] == "rgb(253, 236, 234)"
    assert page["workersCard"] == "2 / 3"
    for row in page["rows"]:
        if row["url"] != victim.urls[0]:
            assert row["cls"] == "" and row["health"] == "healthy"

    os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
    assert browser.save_screenshot(SCREENSHOT)
    for s in sessions:
        router.finish_session(s)


# Stands in for the router's answer so the page gets names no worker source can produce today
# (the router refuses such URLs, and no source sets model names yet) plus a policy that reports
# KV-cache hits; everything else of the answer is the router's own.
DOCTOR_STATE = """
const realFetch = window.fetch;
window.fetch = async (...args) => {
  const response = await realFetch(...args);
  if (!String(args[0]).endsWith('/dashboard/state') || !response.ok) return response;
  const state = await response.json();
  state.kv_cache_hit_rate_reported = true;
  state.workers.forEach((w) => { w.kv_cache_hit_rate = 0.5; });
  state.workers.push(Object.assign({}, state.workers[0], {
    url: %s, model: %s, kv_cache_hit_rate: 0.714}));
  return new Response(JSON.stringify(state), {status: 200, headers: {'Content-Type': 'application/json'}});
};
"""
HOSTILE_URL = "http://evil.example:1/<script>window.__pwned = 'url'</script>"
HOSTILE_MODEL = "<img src=x onerror=\"window.__pwned = 'model'\">"


def test_names_render_as_text_and_a_reported_kv_hit_rate_gets_its_column(browser, cluster):
    router = cluster[0]
    script = DOCTOR_STATE % (json.dumps(HOSTILE_URL), json.dumps(HOSTILE_MODEL))
    injected = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": script})
    try:
        open_with_key(browser, router.url)
        page = wait_for_page(browser, lambda p: any(r["url"] == HOSTILE_URL for r in p["rows"]),
                             "the doctored worker never appeared")
        hostile = next(row for row in page["rows"] if row["url"] == HOSTILE_URL)
        assert hostile["model"] == HOSTILE_MODEL
        assert browser.execute_script(
            "return document.querySelectorAll('#workers tbody script, #workers tbody img').length") == 0
        assert browser.execute_script("return window.__pwned === undefined")
        assert page["kvHeadShown"]
        assert "KV-cache hit rate: no column" not in page["notes"]
        kv_cells = browser.execute_script(
            "return [...document.querySelectorAll('#workers tbody td.kv')].map((c) => c.textContent)")
        assert kv_cells[-1] == "71%" and set(kv_cells[:-1]) == {"50%"}
    finally:
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument",
                                {"identifier": injected["identifier"]})


def test_state_holds_no_key_and_other_paths_are_404(cluster):
    router = cluster[0]
    status, headers, body = http("GET", router.url + "/dashboard/state",
                                 headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    assert status == 200 and headers["content-type"] == "application/json"
    assert ADMIN_KEY.encode() not in body and WORKER_KEY.encode() not in body
    status, _, body = http("GET", router.url + "/dashboard/state")
    assert status == 401
    assert json.loads(body)["error"]["message"].startswith("Missing or invalid admin API key")
    status, _, page = http("GET", router.url + "/dashboard")
    assert status == 200 and ADMIN_KEY.encode() not in page
    assert http("GET", router.url + "/dashboard/nope")[0] == 404
