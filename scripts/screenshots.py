#!/usr/bin/env python3
"""Screenshots of the dashboard for the README (`make screenshots`), taken in headless Chromium.

  screenshots.py BINARY OUT_DIR

Starts the lab origin (scripts/lab-origin.sh) and a real edge in front of it, gives the edge some
history (requests, an origin change, a refetch) and a probe run inside the server that watches the
edge itself through a change, then signs in to the dashboard the way a person does (the sign-in
form) and saves the host list, a host's page and the probe's page as PNG files. Each page is also
checked for what it must show, so a broken page fails the run instead of being photographed.
Needs Chromium (Debian's `chromium`) and the `playwright` Python package (its own browsers are not
used).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url, seconds=30, context=None):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2, context=context)
            return
        except Exception:
            time.sleep(0.2)
    raise SystemExit(f"screenshots: {url} did not answer")


def admin(port, token, method, path, body=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/admin/v1{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/aasa-edge")
    out = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "docs/screenshots")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        raise SystemExit("screenshots: no Chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    work = tempfile.mkdtemp(prefix="aasa-shots-")
    origin_port, edge_port = free_port(), free_port()
    processes = []
    try:
        lab = subprocess.Popen(["bash", os.path.join(ROOT, "scripts/lab-origin.sh"), os.path.join(work, "lab"), str(origin_port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        processes.append(lab)
        import ssl
        wait_for(f"https://127.0.0.1:{origin_port}/", context=ssl._create_unverified_context())
        aasa = os.path.join(work, "lab/www/.well-known/apple-app-site-association")
        token = "screenshot-token"
        flags = ["--ca-file", os.path.join(work, "lab/lab-ca.pem")]
        hosts = ["app.lab.test", "shop.lab.test", "help.lab.test"]
        for host in hosts:
            flags += ["--connect-to", f"{host}:443:127.0.0.1:{origin_port}"]
        flags += ["--connect-to", "down.lab.test:443:127.0.0.1:1"]  # an origin that refuses connections
        edge = subprocess.Popen([binary, "serve", "--port", str(edge_port), "--db", os.path.join(work, "edge.sqlite"), "--ttl", "4",
                                 "--node-id", "lab-edge", "--admin-token", token, *flags],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(edge)
        base = f"http://127.0.0.1:{edge_port}"
        wait_for(base + "/healthz")
        # History: three hosts served to a few clients, a failing one, an origin change picked up by a refetch.
        for host in hosts:
            for client in ("phone-1", "phone-2", "tablet-1"):
                urllib.request.urlopen(urllib.request.Request(f"{base}/a/v1/{host}", headers={"X-Client-ID": client}))
        try:
            urllib.request.urlopen(f"{base}/a/v1/down.lab.test")
        except urllib.error.HTTPError:
            pass  # the 404 failure form
        text = open(aasa, encoding="utf-8").read()
        time.sleep(1.1)  # the lab origin's Last-Modified has whole seconds: a change within the second would look unmodified
        open(aasa, "w", encoding="utf-8").write(text.replace('"/buy/*"', '"/purchase/*"'))
        admin(edge_port, token, "POST", "/domains/app.lab.test/refetch")
        for client in ("phone-1", "phone-2"):
            urllib.request.urlopen(urllib.request.Request(f"{base}/a/v1/app.lab.test", headers={"X-Client-ID": client}))
        # A probe inside the server watching the edge itself through one more change.
        probe = admin(edge_port, token, "POST", "/probes", {"host": "shop.lab.test", "cdnURL": base + "/a/v1/{host}",
                                                           "interval": 0.5, "duration": 60, "untilConverged": True})["id"]
        time.sleep(2)
        open(aasa, "w", encoding="utf-8").write(text.replace('"/buy/*"', '"/checkout/*"'))
        deadline = time.time() + 30
        while admin(edge_port, token, "GET", f"/probes/{probe}")["state"] == "running" and time.time() < deadline:
            time.sleep(0.5)

        os.makedirs(out, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(base + "/login")
            page.fill("input[name=token]", token)
            page.click("button[type=submit]")
            shots = [
                ("dashboard.png", "/?live=off", ["hit ratio", "app.lab.test", "serving"]),
                ("host.png", "/dashboard/hosts/app.lab.test?live=off", ["Refetch now", "Propagation", "v2"]),
                ("probe.png", f"/dashboard/probes/{probe}", ["converged", "delay"]),
            ]
            for name, path, musts in shots:
                page.goto(base + path)
                html = page.content()
                for must in musts:
                    if must not in html:
                        raise SystemExit(f"screenshots: {path} does not show {must!r}")
                page.screenshot(path=os.path.join(out, name), full_page=True)
                print(f"screenshots: {os.path.join(out, name)}")
            browser.close()
    finally:
        for process in processes:
            try:
                if process is processes[0]:
                    os.killpg(process.pid, signal.SIGTERM)  # the lab origin's shell and its python
                else:
                    process.terminate()
            except ProcessLookupError:
                pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
