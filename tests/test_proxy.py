"""The README's reverse-proxy recipe, run: nginx with TLS in front of `goldpool serve` on
loopback, and Chromium signing in and labelling through it.

The nginx server block is read from README.md itself, so the recipe and the test cannot drift;
only the port, the certificate paths and the app's port are put in. Skipped (saying so) where
nginx, openssl or Chromium is missing (`apt-get install -y nginx openssl chromium`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app_fixtures import Project
from browser_helpers import CHROMIUM, free_port, idle, judgments, launch, new_page

README = Path(__file__).resolve().parents[1] / "README.md"
NGINX = shutil.which("nginx")
OPENSSL = shutil.which("openssl")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not (CHROMIUM and NGINX and OPENSSL),
        reason="PROXY TEST SKIPPED: needs nginx, openssl and chromium on the PATH (apt-get install -y nginx openssl chromium)",
    ),
]


def readme_server_block() -> str:
    """The ```nginx block of the README's "Serving a team" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## Serving a team", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```nginx\n(.*?)```", section, re.S)
    assert found, "README has no nginx block under 'Serving a team'"
    return found.group(1)


def _nginx_conf(tmp: Path, tls_port: int, app_port: int) -> Path:
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        [OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    block = readme_server_block()
    for old, new in (
        ("listen 443 ssl;", f"listen 127.0.0.1:{tls_port} ssl;"),
        ("/etc/ssl/goldpool/fullchain.pem", str(cert)),
        ("/etc/ssl/goldpool/privkey.pem", str(key)),
        ("http://127.0.0.1:8501", f"http://127.0.0.1:{app_port}"),
    ):
        assert old in block
        block = block.replace(old, new)
    conf = tmp / "nginx.conf"
    conf.write_text(
        f"daemon off;\nworker_processes 1;\npid {tmp}/nginx.pid;\nerror_log {tmp}/error.log;\n"
        "events { worker_connections 64; }\n"
        f"http {{\n access_log {tmp}/access.log;\n client_body_temp_path {tmp}/body;\n"
        f" proxy_temp_path {tmp}/proxy;\n{block}\n}}\n"
    )
    return conf


def test_label_through_the_readme_nginx_proxy(served: tuple[Project, str], tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    project, url = served
    app_port = int(url.rstrip("/").rsplit(":", 1)[1])
    tls_port = free_port()
    work = tmp_path / "nginx"
    work.mkdir()
    conf = _nginx_conf(work, tls_port, app_port)
    checked = subprocess.run([NGINX, "-t", "-c", str(conf), "-p", str(work)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    proxy = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(work)], stderr=subprocess.PIPE)
    try:
        with sync_playwright() as playwright:
            browser = launch(playwright)
            try:
                context = browser.new_context(ignore_https_errors=True)  # a self-signed test certificate
                page = new_page(context)
                for _ in range(50):  # nginx starts in well under a second
                    try:
                        page.goto(f"https://127.0.0.1:{tls_port}/")
                        break
                    except Exception:  # noqa: BLE001 - connection refused until it listens
                        page.wait_for_timeout(200)
                assert page.url.startswith("https://")
                page.get_by_label("Access token").fill(project.annotator_token)
                page.keyboard.press("Enter")
                expect(page.get_by_text("This batch: 0 of", exact=False)).to_be_visible()
                idle(page)
                page.keyboard.press("3")
                expect(page.get_by_text("This batch: 1 of", exact=False)).to_be_visible()
            finally:
                browser.close()
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
    rows = judgments(project)
    assert [r["relevance"] for r in rows] == [3]
    log = (work / "access.log").read_text()
    assert "/_stcore/stream" in log and " 101 " in log  # the WebSocket went through the proxy
