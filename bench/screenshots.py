"""PNG screenshots of the web page of `ragqa serve`, for review (not committed).

Starts `ragqa serve` on a free loopback port over a data folder (default: a temp folder with the
bundled seeds ingested), opens the page in headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by Selenium; nothing is downloaded) and saves each view in light and
dark, at desktop and phone width:

    python bench/screenshots.py [--home DIR] [--out bench/results/screenshots]

Views: ask (an answer with its references), paper (a citation opened in the side panel, the
quote highlighted), closest (an answer that cites nothing), papers (the list), search (a
search), summary (a summary of "audio"), token (the token dialog, from a second server started
with --token).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars")
SIZES = {"desktop": (1280, 860), "phone": (375, 812)}
WAIT = 90


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_serve(home: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGQA_"))}
    env.update(RAGQA_HOME=str(home), RAGQA_ENV_FILE=str(home / "no.env"))
    process = subprocess.Popen([sys.executable, "-m", "ragqa", "serve", "--port", str(port),
                                *extra], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"screenshots: ragqa serve exited with {process.returncode}")
        try:
            urllib.request.urlopen(url + "/api/health", timeout=5).close()
            return process, url
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    process.kill()
    sys.exit("screenshots: ragqa serve did not start")


def stop(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument("--user-data-dir=" + tempfile.mkdtemp(prefix="ragqa-shots-"))
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


def wait(driver, condition, seconds: float = WAIT):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, poll_frequency=0.1).until(condition)


def css(driver, selector: str):
    return driver.find_elements("css selector", selector)


def set_look(driver, scheme: str, size: str) -> None:
    width, height = SIZES[size]
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": size == "phone"})
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {
        "features": [{"name": "prefers-color-scheme", "value": scheme}]})


def open_page(driver, url: str, view: str) -> None:
    driver.get(f"{url}/#{view}")
    wait(driver, lambda d: css(d, "#mode")[0].text not in ("", "connecting…"))


def ask(driver, question: str):
    before = len(css(driver, "#thread .turn"))
    box = css(driver, "#question")[0]
    box.send_keys(question + "\n")
    wait(driver, lambda d: len(css(d, "#thread .turn")) == before + 1
         and not css(d, "#thread [aria-busy]"))
    return css(driver, "#thread .turn")[-1]


def shoot(driver, out: Path, name: str) -> None:
    time.sleep(0.2)  # let the layout settle after the last change
    driver.save_screenshot(str(out / f"{name}.png"))
    print(out / f"{name}.png")


def views(driver, url: str, out: Path, look: str) -> None:
    open_page(driver, url, "ask")
    shoot(driver, out, f"{look}-ask-empty")
    turn = ask(driver, "Which papers do full-duplex speech?")
    driver.execute_script("window.scrollTo(0, 0)")
    shoot(driver, out, f"{look}-ask")
    turn.find_element("css selector", "button.cite").click()
    wait(driver, lambda d: css(d, "#panel-abstract mark"))
    shoot(driver, out, f"{look}-paper")
    css(driver, "#panel-close")[0].click()
    css(driver, "#new-chat")[0].click()
    ask(driver, "Which papers study quantum cooking?")
    shoot(driver, out, f"{look}-closest")

    css(driver, ".view-tab[data-view=papers]")[0].click()
    wait(driver, lambda d: css(d, "#paper-list > li"))
    shoot(driver, out, f"{look}-papers")
    css(driver, "#search-q")[0].send_keys("speech language models\n")
    wait(driver, lambda d: "match" in css(d, "#papers-info")[0].text)
    shoot(driver, out, f"{look}-search")

    css(driver, ".view-tab[data-view=summary]")[0].click()
    css(driver, "#topic")[0].send_keys("audio\n")
    wait(driver, lambda d: css(d, "#summary-out")[0].is_displayed())
    shoot(driver, out, f"{look}-summary")


def token_view(driver, url: str, out: Path, look: str) -> None:
    driver.get(url + "/")
    driver.execute_script("sessionStorage.clear()")
    driver.refresh()
    wait(driver, lambda d: css(d, "#token-dialog")[0].is_displayed())
    shoot(driver, out, f"{look}-token")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, help="a RAGQA_HOME to serve (default: the seeds)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "screenshots")
    args = parser.parse_args()
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        print("screenshots: needs Debian's chromium and chromium-driver "
              "(apt-get install chromium chromium-driver)")
        return
    args.out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="ragqa-shots-home-"))
    home = args.home
    if home is None:
        home = scratch / "home"
        env = {**os.environ, "RAGQA_HOME": str(home), "RAGQA_ENV_FILE": str(scratch / "no.env")}
        subprocess.run([sys.executable, "-m", "ragqa", "ingest", "--seeds", "--quiet"], env=env,
                       check=True)
    process, url = start_serve(home)
    guarded, guarded_url = start_serve(home, "--token", "screenshot-token")
    driver = browser()
    try:
        for scheme in ("light", "dark"):
            for size in SIZES:
                set_look(driver, scheme, size)
                views(driver, url, args.out, f"{scheme}-{size}")
                token_view(driver, guarded_url, args.out, f"{scheme}-{size}")
    finally:
        driver.quit()
        stop(process)
        stop(guarded)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
