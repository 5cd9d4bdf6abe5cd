#!/usr/bin/env python3
"""Side-by-side benchmarks of aasa-edge against nginx and Varnish on this machine (issue 8).

Run through bench/run-edge-bench.sh, which installs the tools and builds the release binary.

  P1 hit throughput: wrk -t1 -c64 on a cached ~2 KB AASA body through (a) aasa-edge /a/v1/{host},
     (b) nginx proxy_cache in front of the HTTPS origin, (c) Varnish in front of a plain-HTTP copy
     of the origin, (d) nginx serving the file statically (the ceiling). Systems interleaved
     (A B C D A B C D ...), medians and min-max; req/s, p50/p99 latency, server CPU seconds per
     100k requests (utime+stime of every process of the server, from /proc).
  P2 coalescing: 1,000 concurrent connections ask for one cold host behind a 200 ms origin:
     origin requests (target 1) and the time until all are answered.
  P3 release refetch: N hosts behind a 50 ms origin, one POST /admin/v1/releases: wall time
     against the bound N x 50 ms / concurrency; the origin alone is measured first with
     curl --parallel at the same concurrency.
  P5 scale: N hosts with distinct ~2 KB bodies, each served once: server RSS, database size, and
     the time from restarting the server to its first served hit.
The origins are nginx (with the echo module for delays and per-host bodies) on loopback with a CA
minted here. Results: bench/results/edge-latest.json, a table on stdout, and one line appended to
bench/results/edge-history.tsv.
"""
import argparse
import resource
import asyncio
import datetime
import json
import os
import re
import shutil
import socket
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORK = "/tmp/aasa-edge-bench"
HOST = "app.bench.test"
AASA_PATH = "/.well-known/apple-app-site-association"
PORTS = {"origin_tls": 19443, "origin_plain": 19080, "origin_50ms": 19444, "origin_200ms": 19445, "origin_distinct": 19446,
         "static": 19081, "nginx_proxy": 19082, "varnish": 19083, "edge": 19084, "edge_per_core": 19085}
ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"


def log(text):
    print(text, file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


# ---------------------------------------------------------------- fixtures

def make_certificates():
    if os.path.exists(f"{WORK}/ca.pem"):
        return
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "7",
         "-subj", "/CN=aasa-edge bench CA", "-keyout", f"{WORK}/ca.key", "-out", f"{WORK}/ca.pem"])
    run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=*.bench.test",
         "-keyout", f"{WORK}/origin.key", "-out", f"{WORK}/origin.csr"])
    with open(f"{WORK}/origin.ext", "w") as f:
        f.write("subjectAltName=DNS:*.bench.test,DNS:bench.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    run(["openssl", "x509", "-req", "-in", f"{WORK}/origin.csr", "-CA", f"{WORK}/ca.pem", "-CAkey", f"{WORK}/ca.key",
         "-CAcreateserial", "-days", "7", "-extfile", f"{WORK}/origin.ext", "-out", f"{WORK}/origin.pem"])


def aasa_body(app_suffix="app", size=2048):
    """A valid AASA file of about `size` bytes."""
    components = []
    i = 0
    while True:
        components.append({"/": f"/section-{i}/*", "comment": f"rule {i} of the benchmark file"})
        body = json.dumps({"applinks": {"details": [{"appIDs": [f"ABCDE12345.com.example.{app_suffix}"],
                                                       "components": components}]}}, separators=(",", ":"))
        if len(body) >= size - 60:
            return body
        i += 1


def nginx_conf(name, servers, workers="auto", modules=""):
    prefix = f"{WORK}/{name}"
    os.makedirs(f"{prefix}/logs", exist_ok=True)
    conf = f"""{modules}
user root;
worker_processes {workers};
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 8192; multi_accept on; }}
http {{
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 100000000; keepalive_timeout 120s;
  ssl_certificate {WORK}/origin.pem; ssl_certificate_key {WORK}/origin.key;
  ssl_session_cache shared:ssl:10m;
  client_body_temp_path {prefix}/tmp-body; proxy_temp_path {prefix}/tmp-proxy;
  fastcgi_temp_path {prefix}/tmp-fcgi; uwsgi_temp_path {prefix}/tmp-uwsgi; scgi_temp_path {prefix}/tmp-scgi;
  log_format hostonly '$host';
{servers}
}}
"""
    path = f"{prefix}/nginx.conf"
    with open(path, "w") as f:
        f.write(conf)
    return path


class Server:
    """A started server process, with the pids whose CPU counts as the server's."""

    def __init__(self, name, cmd, pid_file=None, env=None, stdout=None):
        self.name = name
        self.cmd = cmd
        self.pid_file = pid_file
        self.out = open(stdout or f"{WORK}/{name}.log", "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def pids(self):
        root = self.proc.pid
        if self.pid_file and os.path.exists(self.pid_file):
            root = int(open(self.pid_file).read().strip() or root)
        tree = {root}
        changed = True
        while changed:
            changed = False
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    stat = open(f"/proc/{entry}/stat").read()
                except OSError:
                    continue
                ppid = int(stat[stat.rindex(")") + 2:].split()[1])
                if ppid in tree and int(entry) not in tree:
                    tree.add(int(entry))
                    changed = True
        return tree

    def cpu_seconds(self):
        total = 0
        for pid in self.pids():
            try:
                stat = open(f"/proc/{pid}/stat").read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def rss_mb(self):
        total = 0
        for pid in self.pids():
            try:
                for line in open(f"/proc/{pid}/status"):
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.out.close()


def http_get(port, path, host=None, timeout=30):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": host} if host else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, dict(response.headers), response.read()


def wait_for(port, path="/", host=None, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            http_get(port, path, host, timeout=2)
            return True
        except urllib.error.HTTPError:
            return True
        except Exception:
            time.sleep(0.05)
    raise RuntimeError(f"nothing answers on port {port}")


def ensure_free(port):
    """Refuses to measure whatever already listens on a benchmark port (a leftover server)."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise RuntimeError(f"port {port} is already in use: stop the process listening there first")


def start_edge(binary, db, origin_port, name="edge", extra=(), port=PORTS["edge"]):
    ensure_free(port)
    cmd = [binary, "serve", "--port", str(port), "--db", db, "--admin-token", "bench-token",
           "--connect-to", f"::127.0.0.1:{origin_port}", "--ca-file", f"{WORK}/ca.pem", *extra]
    server = Server(name, cmd)
    wait_for(port, "/healthz")
    if server.proc.poll() is not None:
        raise RuntimeError(f"the edge exited (status {server.proc.returncode}); see {WORK}/{name}.log")
    return server


# ---------------------------------------------------------------- wrk

def wrk(url, duration, host=None, connections=64):
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", os.path.join(ROOT, "bench/wrk-tail.lua"), url]
    if host:
        cmd[1:1] = ["-H", f"Host: {host}"]
    out = run(cmd).stdout

    def latency(label):
        m = re.search(rf"^\s*{label}%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        value, unit = float(m.group(1)), m.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    tail = re.search(r"^tail p99\.9: ([\d.]+) ms$", out, re.M)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)), "p50_ms": latency("50"),
            "p99_ms": latency("99"), "p999_ms": float(tail.group(1)), "requests": requests, "non2xx": int(errors.group(1)) if errors else 0}


# ---------------------------------------------------------------- P1

def p1(binary, rounds, duration):
    body = open(f"{WORK}/body.json", "rb").read()
    systems = {
        "aasa-edge": (PORTS["edge"], f"/a/v1/{HOST}", None),
        # The same binary with one serving thread per core (the default before 2026-11-23: a variant, not a peer).
        "aasa-edge per core": (PORTS["edge_per_core"], f"/a/v1/{HOST}", None),
        "nginx proxy_cache": (PORTS["nginx_proxy"], AASA_PATH, HOST),
        "varnish": (PORTS["varnish"], AASA_PATH, HOST),
        "nginx static": (PORTS["static"], AASA_PATH, HOST),
    }
    servers = {}
    origin = Server("origin", ["nginx", "-c", nginx_conf("origin", f"""
  server {{ listen 127.0.0.1:{PORTS['origin_tls']} ssl; location = {AASA_PATH} {{ default_type application/json; alias {WORK}/body.json; }} }}
  server {{ listen 127.0.0.1:{PORTS['origin_plain']}; location = {AASA_PATH} {{ default_type application/json; alias {WORK}/body.json; }} }}
"""), "-g", "daemon off;"], pid_file=f"{WORK}/origin/nginx.pid")
    wait_for(PORTS["origin_plain"], AASA_PATH)
    servers["nginx static"] = Server("static", ["nginx", "-c", nginx_conf("static", f"""
  server {{ listen 127.0.0.1:{PORTS['static']} backlog=2048; location = {AASA_PATH} {{ default_type application/json; alias {WORK}/body.json; }} }}
"""), "-g", "daemon off;"], pid_file=f"{WORK}/static/nginx.pid")
    servers["nginx proxy_cache"] = Server("proxy", ["nginx", "-c", nginx_conf("proxy", f"""
  proxy_cache_path {WORK}/proxy/cache keys_zone=aasa:10m max_size=64m inactive=1h;
  server {{
    listen 127.0.0.1:{PORTS['nginx_proxy']} backlog=2048;
    location / {{
      proxy_pass https://127.0.0.1:{PORTS['origin_tls']};
      proxy_ssl_server_name on; proxy_ssl_name $host; proxy_ssl_verify on;
      proxy_ssl_trusted_certificate {WORK}/ca.pem; proxy_set_header Host $host;
      proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_cache aasa; proxy_cache_key $host$uri; proxy_cache_valid 200 1h; proxy_cache_lock on;
    }}
  }}
"""), "-g", "daemon off;"], pid_file=f"{WORK}/proxy/nginx.pid")
    shutil.rmtree(f"{WORK}/varnish", ignore_errors=True)
    servers["varnish"] = Server("varnish", ["varnishd", "-F", "-a", f"127.0.0.1:{PORTS['varnish']}",
                                            "-b", f"127.0.0.1:{PORTS['origin_plain']}", "-n", f"{WORK}/varnish",
                                            "-s", "malloc,64m", "-p", "default_ttl=3600"])
    servers["aasa-edge"] = start_edge(binary, f"{WORK}/p1/edge.sqlite", PORTS["origin_tls"], extra=["--ttl", "3600"])
    servers["aasa-edge per core"] = start_edge(binary, f"{WORK}/p1/edge-per-core.sqlite", PORTS["origin_tls"], name="edge-per-core",
                                               port=PORTS["edge_per_core"], extra=["--ttl", "3600", "--event-loops", str(os.cpu_count() or 1)])
    try:
        for name, (port, path, host) in systems.items():
            wait_for(port, path, host)
            for _ in range(2):  # prime the cache
                status, headers, got = http_get(port, path, host)
            if status != 200 or got != body:
                raise RuntimeError(f"{name} does not serve the benchmark body (status {status}, {len(got)} bytes)")
        results = {name: [] for name in systems}
        for r in range(rounds):
            for name, (port, path, host) in systems.items():
                server = servers[name]
                cpu0 = server.cpu_seconds()
                figures = wrk(f"http://127.0.0.1:{port}{path}", duration, host)
                figures["cpu_s_per_100k"] = (server.cpu_seconds() - cpu0) / max(1, figures["requests"]) * 100_000
                results[name].append(figures)
                log(f"P1 round {r + 1} {name:18} {figures['rps']:9.0f} req/s  p50 {figures['p50_ms']:.2f} ms  "
                    f"p99 {figures['p99_ms']:.2f} ms  p99.9 {figures['p999_ms']:.2f} ms  cpu {figures['cpu_s_per_100k']:.2f} s/100k  non-2xx {figures['non2xx']}")
        return summarise_p1(results)
    finally:
        for server in servers.values():
            server.stop()
        origin.stop()


def summarise_p1(results):
    summary = {}
    for name, runs in results.items():
        entry = {}
        for key in ("rps", "p50_ms", "p99_ms", "p999_ms", "cpu_s_per_100k"):
            values = [run_[key] for run_ in runs]
            entry[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        entry["non2xx"] = sum(run_["non2xx"] for run_ in runs)
        summary[name] = entry
    edge = summary["aasa-edge"]["rps"]["median"]
    for name in summary:
        summary[name]["edge_ratio"] = edge / summary[name]["rps"]["median"]
    return summary


# ---------------------------------------------------------------- slow / distinct origins

def slow_origin():
    servers = f"""
  server {{ listen 127.0.0.1:{PORTS['origin_50ms']} ssl backlog=4096; access_log {WORK}/slow/logs/50ms.log hostonly;
    location = {AASA_PATH} {{ default_type application/json; echo_sleep 0.05;
      echo '{{"applinks":{{"details":[{{"appIDs":["ABCDE12345.com.example.app"],"components":[{{"/":"/$host/*"}}]}}]}}}}'; }} }}
  server {{ listen 127.0.0.1:{PORTS['origin_200ms']} ssl backlog=4096; access_log {WORK}/slow/logs/200ms.log hostonly;
    location = {AASA_PATH} {{ default_type application/json; echo_sleep 0.2;
      echo '{{"applinks":{{"details":[{{"appIDs":["ABCDE12345.com.example.app"],"components":[{{"/":"/$host/*"}}]}}]}}}}'; }} }}
  server {{ listen 127.0.0.1:{PORTS['origin_distinct']} ssl backlog=4096;
    location = {AASA_PATH} {{ default_type application/json;
      echo '{{"applinks":{{"details":[{{"appIDs":["ABCDE12345.com.example.app"],"components":[{{"/":"/$host/*","comment":"{'x' * 1900}"}}]}}]}}}}'; }} }}
"""
    conf = nginx_conf("slow", servers, modules=f"load_module {ECHO_MODULE};")
    server = Server("slow-origin", ["nginx", "-c", conf, "-g", "daemon off;"], pid_file=f"{WORK}/slow/nginx.pid")
    deadline = time.time() + 10
    while time.time() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"the nginx origin did not start: {open(f'{WORK}/slow-origin.log').read().strip()}")
        try:
            import socket
            socket.create_connection(("127.0.0.1", PORTS["origin_distinct"]), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the nginx origin did not start listening")


def count_lines(path, host):
    try:
        return sum(1 for line in open(path) if line.strip() == host)
    except FileNotFoundError:
        return 0


# ---------------------------------------------------------------- P2

async def one_request(port, path):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data.split(b" ", 2)[1] if data.startswith(b"HTTP/") else b"???"


async def burst(port, path, count):
    started = time.monotonic()
    statuses = await asyncio.gather(*(one_request(port, path) for _ in range(count)), return_exceptions=True)
    return time.monotonic() - started, statuses


def p2(binary, clients):
    host = f"cold-{int(time.time())}.bench.test"
    edge = start_edge(binary, f"{WORK}/p2/edge.sqlite", PORTS["origin_200ms"])
    try:
        before = count_lines(f"{WORK}/slow/logs/200ms.log", host)
        elapsed, statuses = asyncio.run(burst(PORTS["edge"], f"/a/v1/{host}", clients))
        time.sleep(0.5)  # nginx writes its log line after the response
        fetches = count_lines(f"{WORK}/slow/logs/200ms.log", host) - before
        ok = sum(1 for s in statuses if s == b"200")
        result = {"clients": clients, "answered_200": ok, "errors": clients - ok, "origin_requests": fetches,
                  "all_answered_s": elapsed, "origin_latency_s": 0.2}
        log(f"P2 {clients} concurrent cold requests: {ok} answered 200 in {elapsed:.3f} s, origin requests {fetches}")
        return result
    finally:
        edge.stop()


# ---------------------------------------------------------------- P3

def p3(binary, hosts, concurrency=64):
    tag = int(time.time())
    names = [f"h{i}-{tag}.bench.test" for i in range(hosts)]
    # The origin alone, with libcurl at the same concurrency.
    started = time.monotonic()
    children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["curl", "-s", "--no-progress-meter", "--parallel", "--parallel-max", str(concurrency), "--connect-to", f"::127.0.0.1:{PORTS['origin_50ms']}",
                    "--cacert", f"{WORK}/ca.pem", "-o", "/dev/null",
                    f"https://h[0-{hosts - 1}]-{tag}o.bench.test{AASA_PATH}"], check=True)
    origin_alone = time.monotonic() - started
    children1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    curl_cpu = (children1.ru_utime - children0.ru_utime) + (children1.ru_stime - children0.ru_stime)
    bound = hosts * 0.05 / concurrency
    log(f"P3 origin alone: {hosts} fetches at concurrency {concurrency} in {origin_alone:.2f} s (bound {bound:.2f} s)")
    edge = start_edge(binary, f"{WORK}/p3/edge.sqlite", PORTS["origin_50ms"], extra=["--refetch-concurrency", str(concurrency)])
    try:
        body = json.dumps({"appIDs": [], "domains": names}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{PORTS['edge']}/admin/v1/releases", data=body, method="POST",
                                         headers={"Authorization": "Bearer bench-token", "Content-Type": "application/json"})
        started = time.monotonic()
        cpu0 = edge.cpu_seconds()
        with urllib.request.urlopen(request, timeout=600) as response:
            answer = json.loads(response.read())
        wall = time.monotonic() - started
        edge_cpu = edge.cpu_seconds() - cpu0
        result = {"hosts": hosts, "concurrency": concurrency, "bound_s": bound, "wall_s": wall, "ratio_to_bound": wall / bound,
                  "origin_alone_s": origin_alone, "ratio_to_curl": wall / origin_alone,
                  "edge_cpu_ms_per_fetch": edge_cpu / hosts * 1000, "curl_cpu_ms_per_fetch": curl_cpu / hosts * 1000,
                  "updated": answer["updated"], "failed": answer["failed"]}
        log(f"P3 release of {hosts} hosts: {wall:.2f} s = {wall / bound:.2f}x the bound, {wall / origin_alone:.2f}x curl --parallel; "
            f"CPU per fetch: edge {edge_cpu / hosts * 1000:.2f} ms, curl {curl_cpu / hosts * 1000:.2f} ms; "
            f"updated {answer['updated']}, failed {answer['failed']}")
        return result
    finally:
        edge.stop()


# ---------------------------------------------------------------- P5

async def distinct_requests(port, names, connections=64):
    """Each name asked once, over `connections` keep-alive connections; returns (answered, not 200)."""
    queue = list(reversed(names))
    counts = {"answered": 0, "errors": 0}

    async def worker():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while queue:
            name = queue.pop()
            writer.write(f"GET /a/v1/{name} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
            await reader.readexactly(length)
            counts["answered"] += 1
            if not head.startswith(b"HTTP/1.1 200"):
                counts["errors"] += 1
        writer.close()

    await asyncio.gather(*(worker() for _ in range(connections)))
    return counts["answered"], counts["errors"]


def p5(binary, hosts):
    tag = int(time.time())
    db = f"{WORK}/p5/edge.sqlite"
    shutil.rmtree(f"{WORK}/p5", ignore_errors=True)
    edge = start_edge(binary, db, PORTS["origin_distinct"])
    try:
        started = time.monotonic()
        served, errors = asyncio.run(distinct_requests(PORTS["edge"], [f"h{i}-{tag}.bench.test" for i in range(hosts)]))
        fill = time.monotonic() - started
        time.sleep(1.5)  # let the served-event batch reach the store
        rss = edge.rss_mb()
        log(f"P5 {served} distinct hosts served once in {fill:.1f} s ({errors} not 200); RSS {rss:.1f} MB")
    finally:
        edge.stop()
    db_mb = sum(os.path.getsize(p) for p in (db, db + "-wal") if os.path.exists(p)) / 1e6
    # Restart: time from spawning the server to its first served hit of a stored host.
    started = time.monotonic()
    cmd = [binary, "serve", "--port", str(PORTS["edge"]), "--db", db, "--admin-token", "bench-token",
           "--connect-to", f"::127.0.0.1:{PORTS['origin_distinct']}", "--ca-file", f"{WORK}/ca.pem"]
    restarted = Server("edge-restart", cmd)
    first_hit = None
    try:
        while time.monotonic() - started < 30:
            try:
                status, headers, _ = http_get(PORTS["edge"], f"/a/v1/h1-{tag}.bench.test", timeout=5)
                if status == 200:
                    first_hit = time.monotonic() - started
                    cache = headers.get("X-Cache")
                    break
            except Exception:
                time.sleep(0.005)
        rss_after = restarted.rss_mb()
    finally:
        restarted.stop()
    result = {"hosts": served, "non2xx": errors, "fill_s": fill, "rss_mb": rss,
              "db_mb": db_mb, "restart_to_first_hit_s": first_hit, "first_hit_x_cache": cache if first_hit else None,
              "rss_after_restart_mb": rss_after}
    log(f"P5 db {db_mb:.1f} MB; restart to first hit {first_hit:.3f} s ({result['first_hit_x_cache']})")
    return result


# ---------------------------------------------------------------- main

def table(results):
    lines = []
    if "P1" in results:
        lines.append("P1 hit throughput (wrk -t1 -c64, median [min-max] of %d rounds)" % results["meta"]["rounds"])
        lines.append(f"  {'system':18} {'req/s':>22} {'p50 ms':>8} {'p99 ms':>8} {'p99.9 ms':>9} {'CPU s/100k':>11} {'edge/x':>7}")
        for name, e in results["P1"].items():
            if name == "measured":
                continue
            lines.append(f"  {name:18} {e['rps']['median']:8.0f} [{e['rps']['min']:5.0f}-{e['rps']['max']:5.0f}] "
                         f"{e['p50_ms']['median']:8.2f} {e['p99_ms']['median']:8.2f} {e['p999_ms']['median']:9.2f} {e['cpu_s_per_100k']['median']:11.2f} {e['edge_ratio']:7.2f}")
    if "P2" in results:
        r = results["P2"]
        lines.append(f"P2 coalescing: {r['clients']} cold requests -> {r['origin_requests']} origin request(s); "
                     f"all answered in {r['all_answered_s']:.3f} s (origin 0.2 s); {r['errors']} errors")
    if "P3" in results:
        r = results["P3"]
        lines.append(f"P3 release: {r['hosts']} hosts in {r['wall_s']:.2f} s = {r['ratio_to_bound']:.2f}x the bound "
                     f"{r['bound_s']:.2f} s, {r['wall_s'] / r['origin_alone_s']:.2f}x curl --parallel ({r['origin_alone_s']:.2f} s); failed {r['failed']}")
    if "P4" in results:
        r = results["P4"]
        lines.append(f"P4 matcher: {r['decisionsPerSecond']:,.0f} decisions/s pre-parsed, "
                     f"{r['decisionsPerSecondWithURLParsing']:,.0f} with URL parsing")
    if "P5" in results:
        r = results["P5"]
        lines.append(f"P5 scale: {r['hosts']} hosts -> RSS {r['rss_mb']:.1f} MB, db {r['db_mb']:.1f} MB, "
                     f"restart to first hit {r['restart_to_first_hit_s']:.3f} s")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/release/aasa-edge"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--only", default="P1,P2,P3,P4,P5")
    parser.add_argument("--p2-clients", type=int, default=1000)
    parser.add_argument("--p3-hosts", type=int, default=10000)
    parser.add_argument("--p5-hosts", type=int, default=100000)
    args = parser.parse_args()
    only = set(args.only.upper().split(","))
    for port in PORTS.values():
        ensure_free(port)
    for folder in ("", "/p1", "/p2", "/p3", "/p5", "/slow/logs"):
        os.makedirs(WORK + folder, exist_ok=True)
    for stale in ("p1/edge", "p1/edge-per-core", "p2/edge", "p3/edge"):
        for suffix in ("", "-wal", "-shm"):
            try:
                os.remove(f"{WORK}/{stale}.sqlite{suffix}")
            except FileNotFoundError:
                pass
    make_certificates()
    with open(f"{WORK}/body.json", "w") as f:
        f.write(aasa_body())
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    if subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", "Sources", "Package.swift"],
                      capture_output=True, text=True).stdout.strip():
        commit += "+dirty"  # measured with uncommitted source changes
    results = {"meta": {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), "commit": commit,
                        "cores": os.cpu_count(), "rounds": args.rounds, "duration_s": args.duration,
                        "body_bytes": os.path.getsize(f"{WORK}/body.json")}}
    if "P1" in only:
        results["P1"] = p1(args.binary, args.rounds, args.duration)
    if only & {"P2", "P3", "P5"}:
        slow = slow_origin()
        try:
            if "P2" in only:
                results["P2"] = p2(args.binary, args.p2_clients)
            if "P3" in only:
                results["P3"] = p3(args.binary, args.p3_hosts)
            if "P5" in only:
                results["P5"] = p5(args.binary, args.p5_hosts)
        finally:
            slow.stop()
    if "P4" in only:
        latest = os.path.join(HERE, "results/matcher-latest.json")
        subprocess.run(["bash", os.path.join(HERE, "run-matcher-bench.sh")], check=True, capture_output=True)
        results["P4"] = json.load(open(latest))
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    latest_path = os.path.join(HERE, "results/edge-latest.json")
    measured = {"date": results["meta"]["date"], "commit": commit}
    for section in ("P1", "P2", "P3", "P4", "P5"):
        if section in results and isinstance(results[section], dict):
            results[section]["measured"] = measured
    # A partial run (--only) keeps the other sections of the previous latest file, each with the
    # date and commit it was measured at, so the file always holds the newest figure of each.
    merged = dict(results)
    try:
        previous = json.load(open(latest_path))
        for section in ("P1", "P2", "P3", "P4", "P5"):
            if section not in merged and isinstance(previous.get(section), dict):
                merged[section] = previous[section]
                merged[section].setdefault("measured", {"date": previous["meta"]["date"], "commit": previous["meta"]["commit"]})
    except (FileNotFoundError, ValueError, KeyError):
        pass
    with open(latest_path, "w") as f:
        json.dump(merged, f, indent=2)
    history = os.path.join(HERE, "results/edge-history.tsv")
    if not os.path.exists(history):
        with open(history, "w") as f:
            f.write("date\tcommit\tP1_edge_rps\tP1_nginx_proxy_rps\tP1_varnish_rps\tP1_nginx_static_rps\tP1_edge_p99_ms\t"
                    "P2_origin_requests\tP2_all_answered_s\tP3_ratio_to_bound\tP5_rss_mb\tP5_restart_first_hit_s\n")
    def pick(*keys):
        value = results
        for key in keys:
            if not isinstance(value, dict) or key not in value:
                return ""
            value = value[key]
        return f"{value:.3f}" if isinstance(value, float) else str(value)
    with open(history, "a") as f:
        f.write("\t".join([results["meta"]["date"], commit, pick("P1", "aasa-edge", "rps", "median"),
                           pick("P1", "nginx proxy_cache", "rps", "median"), pick("P1", "varnish", "rps", "median"),
                           pick("P1", "nginx static", "rps", "median"), pick("P1", "aasa-edge", "p99_ms", "median"),
                           pick("P2", "origin_requests"), pick("P2", "all_answered_s"), pick("P3", "ratio_to_bound"),
                           pick("P5", "rss_mb"), pick("P5", "restart_to_first_hit_s")]) + "\n")
    print(table(merged))


if __name__ == "__main__":
    main()
