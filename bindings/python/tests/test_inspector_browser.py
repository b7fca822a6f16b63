"""The inspector's page in a real browser: headless Chromium (Debian's ``chromium``
and ``chromium-driver``, driven by Selenium; ``scripts/setup --test-tools``
installs them). Skipped, saying why, only when one of them is missing.

The page follows a journal that another process writes; a mutation must appear on
it within 3 s here (the design target is 1 s: the server pushes it through
server-sent events as soon as it reads the line; the bound leaves room for a
loaded machine). ``UNIFLOW_INSPECTOR_SCREENSHOT=docs/inspector.png`` makes
:func:`test_a_screenshot_of_the_page` write the picture the docs show.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Iterator, List, Tuple

import pytest

pytest.importorskip("aiohttp", reason="the inspector needs aiohttp (pip install 'uniflow[inspect]')")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else shutil.which("chromedriver")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip("needs chromium and chromedriver (apt-get install chromium chromium-driver, "
                "or scripts/setup --test-tools)", allow_module_level=True)
pytest.importorskip("selenium", reason="needs selenium (pip install selenium, or scripts/setup --test-tools)")

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

import uniflow  # noqa: E402
from conftest import FILE_DOWNLOADING, REPO_ROOT  # noqa: E402
from inspector_support import ACTIONS, DEFS, Inspector, Writer, get_json  # noqa: E402

WAIT = 10  # seconds: generous, for a loaded machine


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1000", "--hide-scrollbars"):
        options.add_argument(argument)
    assert CHROMIUM is not None and CHROMEDRIVER is not None
    options.binary_location = CHROMIUM
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))  # nothing downloaded
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def followed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Inspector, Writer]]:
    journal = tmp_path_factory.mktemp("inspector-page") / "journal.jsonl"
    writer = Writer(journal)
    for action in ACTIONS:
        writer.submit(action)
    inspector = Inspector(*DEFS, "--journal", str(journal))
    yield inspector, writer
    inspector.close()
    writer.close()


def by_testid(testid: str) -> Tuple[str, str]:
    return By.CSS_SELECTOR, f'[data-testid="{testid}"]'


def text_of(driver: WebDriver, testid: str) -> str:
    found = driver.find_elements(*by_testid(testid))
    try:
        return found[0].text if found else ""
    except StaleElementReferenceException:
        return ""


def wait_for(driver: WebDriver, condition: Any, message: str = "") -> Any:
    return WebDriverWait(driver, WAIT, poll_frequency=0.02,
                         ignored_exceptions=[StaleElementReferenceException]).until(condition, message)


def logged_seqs(driver: WebDriver) -> List[int]:
    return [int(row.get_attribute("data-seq") or -1) for row in driver.find_elements(*by_testid("mutation"))]


def open_page(driver: WebDriver, url: str) -> None:
    driver.get(url)
    wait_for(driver, lambda d: text_of(d, "connection") == "live", "the page did not connect")


def test_the_page_shows_the_model_the_log_and_the_graph(browser: WebDriver, followed: Any) -> None:
    inspector, writer = followed
    open_page(browser, inspector.url)
    wait_for(browser, lambda d: "Completed" in text_of(d, "feature-FileDownloading"))
    assert "Queued" in text_of(browser, "feature-Download[b_zip]")
    assert browser.find_elements(*by_testid("feature-Download[a_pdf]")) == []  # it left
    assert '"started": 2' in text_of(browser, "feature-Downloads")
    seqs = [m["seq"] for m in writer.mutations]
    wait_for(browser, lambda d: logged_seqs(d) == seqs[::-1], "the log is not every mutation, newest first")
    newest = browser.find_elements(*by_testid("mutation"))[0].text
    assert "FileDownloading" in newest and "transition" in newest and "InProgress → Completed" in newest
    graph = browser.find_element(*by_testid("graph"))
    wait_for(browser, lambda d: graph.find_elements(By.CSS_SELECTOR, "svg g.node.uf-current"))
    marked = sorted(e.get_attribute("textContent") for e in graph.find_elements(By.CSS_SELECTOR, "svg g.node.uf-current title"))
    assert marked == ["Download.Queued", "Downloads.Counting", "FileDownloading.Completed"]
    assert "Queued (1)" in graph.get_attribute("textContent")


def test_a_mutation_written_by_another_process_appears_within_a_second(browser: WebDriver, followed: Any) -> None:
    inspector, writer = followed
    open_page(browser, inspector.url)
    wait_for(browser, lambda d: logged_seqs(d)[:1] == [writer.mutations[-1]["seq"]])
    started = time.monotonic()
    answer = writer.submit({"kind": "initialize", "feature": "Download", "key": "c_iso", "into": "Queued"})
    seq = answer["mutations"][0]["seq"]
    wait_for(browser, lambda d: seq in logged_seqs(d), "the new mutation did not appear")
    elapsed = time.monotonic() - started
    assert elapsed < 3.0, f"{elapsed:.2f} s from the write to the page (design target: 1 s)"
    wait_for(browser, lambda d: "Queued" in text_of(d, "feature-Download[c_iso]"))
    assert logged_seqs(browser)[0] == writer.mutations[-1]["seq"]  # newest first
    # What changed is highlighted: the new instance, and the count its binding raised.
    highlighted = ("feature-Download[c_iso]", "feature-Downloads")
    wait_for(browser, lambda d: all("changed" in (d.find_element(*by_testid(t)).get_attribute("class") or "")
                                    for t in highlighted), "the changes are not highlighted")
    assert "changed" not in (browser.find_element(*by_testid("feature-FileDownloading")).get_attribute("class") or "")


def test_the_time_control_shows_the_model_after_an_earlier_seq_and_back_to_live(browser: WebDriver,
                                                                                followed: Any) -> None:
    inspector, writer = followed
    open_page(browser, inspector.url)
    wait_for(browser, lambda d: "Completed" in text_of(d, "feature-FileDownloading"))
    # After FileDownloading went InProgress at 10, before any Download existed.
    seq = next(m["seq"] for m in writer.mutations if m["kind"] == "transition")
    expected = get_json(inspector.base, "/api/model", inspector.token, at=seq)[1]
    assert expected["FileDownloading"] == {"state": "InProgress", "payload": {"progress": 10}}
    time_control = browser.find_element(*by_testid("time"))
    assert time_control.get_attribute("type") == "range"
    assert int(time_control.get_attribute("max") or 0) == writer.mutations[-1]["seq"]
    browser.execute_script("arguments[0].value = arguments[1];"
                           "arguments[0].dispatchEvent(new Event('input', {bubbles: true}));", time_control, seq)
    wait_for(browser, lambda d: "InProgress" in text_of(d, "feature-FileDownloading"))
    assert '"progress": 10' in text_of(browser, "feature-FileDownloading")
    assert browser.find_elements(*by_testid("feature-Download[b_zip]")) == []  # did not exist then
    assert text_of(browser, "time-label") == f"after seq {seq}"
    shown = {e.get_attribute("data-testid") for e in browser.find_elements(By.CSS_SELECTOR, '[data-testid^="feature-"]')}
    assert shown == {f"feature-{name}" for name in expected}
    # The keyboard moves it too: Home is the start of the history, an empty model.
    time_control.send_keys(Keys.HOME)
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '[data-testid^="feature-"]') == [])
    browser.find_element(*by_testid("time-live")).click()
    wait_for(browser, lambda d: "Completed" in text_of(d, "feature-FileDownloading"))
    assert "Queued" in text_of(browser, "feature-Download[b_zip]")
    assert text_of(browser, "time-label") == "live"


def test_a_bad_filter_shows_the_librarys_message(browser: WebDriver, followed: Any) -> None:
    inspector, writer = followed
    open_page(browser, inspector.url)
    box = browser.find_element(*by_testid("filter"))
    box.send_keys("TransitionInto<FileDownloading.Nope>", Keys.ENTER)
    with uniflow.Dispatcher() as d:
        for path in DEFS:
            d.register(path)
        with pytest.raises(uniflow.NotFound) as error:
            d.subscribe(print, when="TransitionInto<FileDownloading.Nope>")
    wait_for(browser, lambda d: text_of(d, "filter-error") == error.value.message)
    box.clear()
    box.send_keys("Initialization<Download>", Keys.ENTER)
    expected = [m["seq"] for m in writer.mutations if m["kind"] == "initialization" and m["feature"] == "Download"]
    wait_for(browser, lambda d: logged_seqs(d) == expected[::-1], "the filter's rows")
    assert not browser.find_element(*by_testid("filter-error")).is_displayed()
    box.clear()
    box.send_keys(Keys.ENTER)
    wait_for(browser, lambda d: len(logged_seqs(d)) == len(writer.mutations))


def test_without_the_token_nothing_is_served(browser: WebDriver, followed: Any) -> None:
    inspector, _ = followed
    for url in (inspector.base + "/", inspector.base + "/?token=", inspector.base + "/?token=" + inspector.token[::-1]):
        browser.get(url)
        assert "403" in browser.find_element(By.TAG_NAME, "body").text
        assert browser.find_elements(*by_testid("model")) == []


def test_a_python_hosts_page_submits_an_action_and_shows_a_rejections_reason(browser: WebDriver) -> None:
    with uniflow.Dispatcher() as d:
        d.register(FILE_DOWNLOADING)
        d.initialize("FileDownloading", "Starting")
        with d.inspect(allow_submit=True) as inspector:
            open_page(browser, inspector.url)
            form = browser.find_element(*by_testid("submit"))
            wait_for(browser, lambda _: form.is_displayed())
            action = browser.find_element(*by_testid("submit-action"))
            action.send_keys(json.dumps({"kind": "transition", "feature": "FileDownloading", "from": "Starting",
                                         "into": "InProgress", "payload": {"progress": 30}}))
            browser.find_element(*by_testid("submit-button")).click()
            wait_for(browser, lambda b: text_of(b, "submit-status") == "UF_OK")
            wait_for(browser, lambda b: '"progress": 30' in text_of(b, "feature-FileDownloading"))
            assert d.get("FileDownloading") == uniflow.State("InProgress", {"progress": 30})
            action.clear()
            action.send_keys(json.dumps({"kind": "deinitialize", "feature": "FileDownloading", "from": "Starting"}))
            browser.find_element(*by_testid("submit-button")).click()
            wait_for(browser, lambda b: text_of(b, "submit-status") ==
                     "UF_REJECTED: FileDownloading is in state InProgress, not Starting")
            action.clear()
            action.send_keys("{\"kind\": \"initialize\"}")
            browser.find_element(*by_testid("submit-button")).click()
            wait_for(browser, lambda b: text_of(b, "submit-status").startswith("UF_ESCHEMA: "))


def test_a_journal_followers_page_has_no_submit_form(browser: WebDriver, followed: Any) -> None:
    inspector, _ = followed
    open_page(browser, inspector.url)
    assert not browser.find_element(*by_testid("submit")).is_displayed()


def test_a_screenshot_of_the_page(browser: WebDriver, followed: Any, tmp_path: Path) -> None:
    inspector, writer = followed
    # A running download: its state timer is armed (shown with its time left).
    writer.submit({"kind": "transition", "feature": "Download", "key": "b_zip", "from": "Queued", "into": "Running",
                   "payload": {"progress": 40}})
    open_page(browser, inspector.url)
    wait_for(browser, lambda d: "Running" in text_of(d, "feature-Download[b_zip]"))
    wait_for(browser, lambda d: "after[0]" in text_of(d, "timers"), "the state timer is not shown")
    graph = browser.find_element(*by_testid("graph"))
    wait_for(browser, lambda d: "Running (1)" in (graph.get_attribute("textContent") or ""))
    time.sleep(2.2)  # the highlights fade out
    target = Path(os.environ.get("UNIFLOW_INSPECTOR_SCREENSHOT") or tmp_path / "inspector.png")
    if not target.is_absolute():
        target = REPO_ROOT / target
    assert browser.save_screenshot(str(target))
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
