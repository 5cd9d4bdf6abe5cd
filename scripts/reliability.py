#!/usr/bin/env python3
"""aasa-edge reliability runs against the real binary and the real HTTPS test origin.

    reliability.py crash [--rounds 20] [--hosts 300]   kill -9 during release refetches under load
    reliability.py soak  [--seconds 60 | --minutes N]   load with purges, refetches, content changes
    reliability.py hostile [--seconds 5]                hostile clients against the contract's bounds

crash: each round starts the edge on the same store, checks the store the previous kill left
(PRAGMA integrity_check, every version any client or release saw still stored with the same
sha256, versions consecutive from 1, body bytes matching their sha256), measures the time from
process start to the first served hit, puts client load on it, changes every origin body,
POSTs a release that refetches every host, and kills the process with SIGKILL at a random moment
of the refetch.

soak: a bounded run at load while, every second, origin bodies change and hosts are hard purged,
soft purged and refetched. Checking clients (Python, keep-alive) verify every response: 200, and
its body's sha256 equal to the stored sha256 of the AASA-Edge-Version it claims; wrk, when
installed, adds raw load on one host (any non-2xx fails the run). RSS is sampled each second and
its growth after warm-up (the first 20 %, at least 5 s) reported; 10 % or more fails.

hostile: one phase per attack, each --seconds long, while a well-behaved keep-alive client asks
for a warm host: a pipelined flood from clients that never read, slowloris heads, slow request
bodies, 3,000 cold hosts at once (behind a slow origin), then, on an edge started with 256 file
descriptors, 400 idle connections and a cold request. The edge's RSS and descriptor count are
sampled every 0.1 s and printed against the bounds (--memory-cache-mb + a fixed overhead,
--max-connections + --origin-concurrency + a fixed overhead), beside the good client's success
rate and p99. A bound exceeded, a good client below 99 % success, or a 5xx other than the
contract's 503 fails the run.

Each prints one summary line per check and exits 1 when any check fails. --json FILE writes the figures.
"""
import argparse
import hashlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORIGIN_SCRIPT = os.path.join(ROOT, "Tests", "TestOrigin", "test-origin.py")
TEAM_APP = "ABCDE12345.com.example.reliability"
TOKEN = "reliability-token"


def body_for(host, generation):
    return json.dumps({"applinks": {"details": [{"appIDs": [TEAM_APP],
                                                  "components": [{"/": f"/{host.split('.')[0]}/g{generation}/*"}]}]}},
                      separators=(",", ":"))


class Origin:
    def __init__(self, workdir):
        self.process = subprocess.Popen([sys.executable, ORIGIN_SCRIPT, "--workdir", workdir],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        info = json.loads(self.process.stdout.readline())
        self.https, self.control_port, self.ca = info["https"], info["control"], info["ca"]

    def set(self, host, behaviour):
        c = http.client.HTTPConnection("127.0.0.1", self.control_port, timeout=10)
        c.request("PUT", f"/hosts/{host}", json.dumps(behaviour))
        c.getresponse().read()
        c.close()

    def stop(self):
        self.process.stdin.close()
        self.process.wait(timeout=10)


class Edge:
    def __init__(self, binary, db, origin, extra=()):
        self.started = time.monotonic()
        self.log = open(db + ".log", "a")
        self.process = subprocess.Popen([binary, "serve", "--port", "0", "--db", db, "--admin-token", TOKEN,
                                         "--connect-to", f"::127.0.0.1:{origin.https}", "--ca-file", origin.ca, *extra],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = None
        ready = threading.Event()

        def pump():
            for line in self.process.stderr:
                self.log.write(line)
                if self.port is None and "listening on http://" in line:
                    self.port = int(line.rsplit(":", 1)[1].split()[0])
                    ready.set()
            ready.set()
        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(30) or self.port is None:
            raise SystemExit(f"the edge did not start (see {db}.log)")

    def request(self, method, path, body=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        headers = {"Authorization": f"Bearer {TOKEN}"} if path.startswith("/admin") else {}
        c.request(method, path, body, headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    def rss_kb(self):
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


class Load:
    """Client threads on keep-alive connections, recording (host, version, sha256) of every 200."""

    def __init__(self, edge, hosts, threads=4):
        self.edge, self.hosts = edge, hosts
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.seen = {}  # (host, version) -> set of sha256
        self.statuses = {}
        self.connection_errors = 0
        self.unexpected = []  # (host, status, x-cache, cache-status, failure reason) of the first non-200s
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(threads)]
        for t in self.threads:
            t.start()

    def run(self):
        conn = None
        rng = random.Random()
        while not self.stop_flag.is_set():
            host = rng.choice(self.hosts)
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.edge.port, timeout=30)
                conn.request("GET", f"/a/v1/{host}")
                r = conn.getresponse()
                data = r.read()
                version = r.getheader("AASA-Edge-Version")
                with self.lock:
                    self.statuses[r.status] = self.statuses.get(r.status, 0) + 1
                    if r.status != 200 and len(self.unexpected) < 5:
                        self.unexpected.append((host, r.status, r.getheader("X-Cache"), r.getheader("Cache-Status"),
                                                r.getheader("Apple-Failure-Reason"), r.getheader("Apple-Failure-Details")))
                    if r.status == 200 and version:
                        self.seen.setdefault((host, int(version)), set()).add(hashlib.sha256(data).hexdigest())
            except (OSError, http.client.HTTPException):
                with self.lock:
                    self.connection_errors += 1
                conn = None
                time.sleep(0.01)

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(timeout=40)


def stored_snapshots(db):
    """host -> {version: sha256}, plus a list of problems found in the store."""
    problems = []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        check = conn.execute("PRAGMA integrity_check").fetchall()
        if check != [("ok",)]:
            problems.append(f"integrity_check: {check[:3]}")
        snapshots = {}
        for host, version, sha, size, body in conn.execute("SELECT host, version, sha256, size, body FROM snapshot"):
            snapshots.setdefault(host, {})[version] = sha
            if hashlib.sha256(body).hexdigest() != sha or len(body) != size:
                problems.append(f"{host} v{version}: stored body does not match its sha256/size")
        for host, current in conn.execute("SELECT name, currentVersion FROM host"):
            versions = sorted(snapshots.get(host, {}))
            if versions != list(range(1, len(versions) + 1)):
                problems.append(f"{host}: versions not consecutive from 1: {versions}")
            if current is not None and current not in snapshots.get(host, {}):
                problems.append(f"{host}: current version {current} is not stored")
    finally:
        conn.close()
    return snapshots, problems


def first_hit_seconds(edge, host):
    """Seconds from process start to the first 200 for `host` (retrying while the port opens)."""
    while time.monotonic() - edge.started < 30:
        try:
            status, headers, _ = edge.request("GET", f"/a/v1/{host}", timeout=5)
            if status == 200:
                return time.monotonic() - edge.started, headers.get("x-cache")
        except OSError:
            time.sleep(0.005)
    return None, None


def crash(args, work):
    origin = Origin(os.path.join(work, "origin"))
    hosts = [f"crash{i}.lab.test" for i in range(args.hosts)]
    generation = 0
    for h in hosts:
        origin.set(h, {"status": 200, "body": body_for(h, generation), "delay": args.origin_delay})
    db = os.path.join(work, "store", "aasa-edge.sqlite")
    os.makedirs(os.path.dirname(db))
    extra = ["--refetch-concurrency", "64", "--ttl", "3600"]
    known = {}  # (host, version) -> sha256 served to a client, ever
    reported = set()  # (host, version) a finished release reported
    failures = []
    first_hits = []
    kills_mid_release = 0
    edge = Edge(args.bin, db, origin, extra)
    # Round 0 fills the store: every host fetched once.
    for h in hosts:
        status, headers, data = edge.request("GET", f"/a/v1/{h}")
        if status != 200:
            failures.append(f"warm-up {h}: {status}")
        known[(h, int(headers["aasa-edge-version"]))] = hashlib.sha256(data).hexdigest()
    for round_ in range(1, args.rounds + 1):
        load = Load(edge, hosts, threads=3)
        generation += 1
        for h in hosts:
            origin.set(h, {"status": 200, "body": body_for(h, generation), "delay": args.origin_delay})
        release_result = {}

        def release():
            try:
                status, _, data = edge.request("POST", "/admin/v1/releases", json.dumps({"appIDs": [TEAM_APP]}), timeout=120)
                release_result["status"] = status
                release_result["body"] = json.loads(data) if status == 200 else data
            except (OSError, http.client.HTTPException, ValueError) as e:
                release_result["error"] = repr(e)
        releaser = threading.Thread(target=release, daemon=True)
        bound = args.hosts * args.origin_delay / 64
        delay = random.uniform(0.05, bound * 1.3 + 0.1)
        releaser.start()
        time.sleep(delay)
        edge.kill()
        releaser.join(timeout=10)
        load.stop()
        if "error" in release_result or "status" not in release_result:
            kills_mid_release += 1
        elif release_result.get("status") == 200:
            for item in release_result["body"].get("results", []):
                if item.get("version") is not None:
                    reported.add((item["domain"], item["version"]))
        for key, shas in load.seen.items():
            if len(shas) != 1:
                failures.append(f"round {round_}: {key} served with {len(shas)} different bodies")
            known.setdefault(key, next(iter(shas)))
        for status, count in load.statuses.items():
            if status >= 500:
                failures.append(f"round {round_}: {count} responses with status {status}")

        snapshots, problems = stored_snapshots(db)
        failures += [f"round {round_}: {p}" for p in problems]
        for (h, version), sha in known.items():
            stored = snapshots.get(h, {}).get(version)
            if stored != sha:
                failures.append(f"round {round_}: {h} v{version} was served/reported but is {'lost' if stored is None else 'changed'}")
        for h, version in reported:
            if version not in snapshots.get(h, {}):
                failures.append(f"round {round_}: {h} v{version} was reported by a release but is lost")
        versions = sum(len(v) for v in snapshots.values())

        edge = Edge(args.bin, db, origin, extra)
        seconds, xcache = first_hit_seconds(edge, random.choice(hosts))
        first_hits.append(seconds if seconds is not None else float("inf"))
        if seconds is None or seconds > 1.0:
            failures.append(f"round {round_}: first hit after restart took {seconds} s")
        print(f"round {round_:2d}: killed {delay:.2f} s into the release ({'mid-release' if 'status' not in release_result else 'after it answered'}); "
              f"store ok={not problems}, {versions} versions stored, {len(known)} seen versions all present="
              f"{all(snapshots.get(h, {}).get(v) == s for (h, v), s in known.items())}; first hit {seconds:.3f} s ({xcache}); "
              f"load {sum(load.statuses.values())} answers", flush=True)
    edge.stop()
    origin.stop()
    figures = {"rounds": args.rounds, "hosts": args.hosts, "killsMidRelease": kills_mid_release,
               "versionsTracked": len(known), "versionsLost": sum(1 for f in failures if "lost" in f),
               "firstHitMaxSeconds": round(max(first_hits), 3), "firstHitMedianSeconds": round(statistics.median(first_hits), 3),
               "failures": failures}
    return figures


def soak(args, work):
    origin = Origin(os.path.join(work, "origin"))
    hosts = [f"soak{i}.lab.test" for i in range(args.hosts)]
    generation = {h: 0 for h in hosts}
    for h in hosts:
        origin.set(h, {"status": 200, "body": body_for(h, 0)})
    db = os.path.join(work, "store", "aasa-edge.sqlite")
    os.makedirs(os.path.dirname(db))
    edge = Edge(args.bin, db, origin, ["--ttl", "2", "--refetch-concurrency", "16"])
    for h in hosts:
        edge.request("GET", f"/a/v1/{h}")
    load = Load(edge, hosts, threads=args.threads)
    duration = args.minutes * 60 if args.minutes else args.seconds
    # Raw load beside the checking clients, when wrk is installed (bench/run-edge-bench.sh installs it).
    wrk = None
    if shutil.which("wrk"):
        wrk = subprocess.Popen(["wrk", "-t1", "-c32", f"-d{int(duration)}s", f"http://127.0.0.1:{edge.port}/a/v1/{hosts[0]}"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    warmup = max(5.0, duration * 0.2)
    rng = random.Random(1)
    rss = []
    started = time.monotonic()
    operations = {"contentChanges": 0, "hardPurges": 0, "softPurges": 0, "refetches": 0}
    admin_failures = []
    while time.monotonic() - started < duration:
        tick = time.monotonic()
        for h in rng.sample(hosts, 3):
            generation[h] += 1
            origin.set(h, {"status": 200, "body": body_for(h, generation[h])})
            operations["contentChanges"] += 1
        for kind, path in (("hardPurges", "/purge"), ("softPurges", "/purge?soft=true"), ("refetches", "/refetch")):
            status, _, data = edge.request("POST", f"/admin/v1/domains/{rng.choice(hosts)}{path}")
            operations[kind] += 1
            if status >= 500:
                admin_failures.append(f"{kind}: {status} {data[:80]!r}")
        rss.append((time.monotonic() - started, edge.rss_kb()))
        time.sleep(max(0.0, 1.0 - (time.monotonic() - tick)))
    load.stop()
    wrk_answers = 0
    failures = []
    if wrk:
        report = wrk.communicate(timeout=60)[0]
        match = re.search(r"(\d+) requests in", report)
        wrk_answers = int(match.group(1)) if match else 0
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", report)
        if bad:
            failures.append(f"wrk: {bad.group(1)} responses other than 2xx/3xx")
    exit_status = edge.stop()
    origin.stop()
    snapshots, problems = stored_snapshots(db)
    failures += list(problems) + admin_failures
    mismatched = 0
    for (h, version), shas in load.seen.items():
        stored = snapshots.get(h, {}).get(version)
        if shas != {stored}:
            mismatched += 1
            failures.append(f"{h} v{version}: served sha256 {sorted(shas)} but stored {stored}")
    server_errors = sum(c for s, c in load.statuses.items() if s >= 500)
    not_ok = sum(c for s, c in load.statuses.items() if s != 200)
    if server_errors:
        failures.append(f"{server_errors} responses with 5xx")
    if not_ok:
        failures.append(f"{not_ok} responses other than 200: {load.statuses}; first: {load.unexpected}")
    if load.connection_errors:
        failures.append(f"{load.connection_errors} connection errors")
    if exit_status != 0:
        failures.append(f"the edge exited with {exit_status} on SIGTERM")
    after_warmup = [kb for t, kb in rss if t >= warmup]
    base = statistics.median(after_warmup[:5]) if after_warmup else 0
    end = statistics.median(after_warmup[-5:]) if after_warmup else 0
    growth = (end - base) / base * 100 if base else 0.0
    if growth >= 10:
        failures.append(f"RSS grew {growth:.1f} % after warm-up ({base} kB -> {end} kB)")
    answers = sum(load.statuses.values())
    figures = {"seconds": duration, "hosts": args.hosts, "answers": answers, "answersPerSecond": round(answers / duration),
               "wrkAnswers": wrk_answers, "wrkAnswersPerSecond": round(wrk_answers / duration),
               "statuses": {str(k): v for k, v in load.statuses.items()}, "versionsServed": len(load.seen),
               "shaMismatches": mismatched, **operations, "rssWarmKB": base, "rssEndKB": end,
               "rssGrowthPercent": round(growth, 1), "failures": failures}
    print(f"soak {duration:.0f} s: {answers} checked answers ({answers / duration:.0f}/s) + {wrk_answers} from wrk "
          f"({wrk_answers / duration:.0f}/s), statuses {load.statuses}, "
          f"{len(load.seen)} (host, version) pairs served, {mismatched} sha256 mismatches; {operations}; "
          f"RSS {base / 1024:.1f} MB after warm-up -> {end / 1024:.1f} MB ({growth:+.1f} %)", flush=True)
    return figures


class Sampler:
    """RSS (kB) and open descriptors of a process, every 0.1 s, until stopped."""

    def __init__(self, pid):
        self.pid, self.rss, self.fds = pid, [], []
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop_flag.is_set():
            try:
                with open(f"/proc/{self.pid}/status") as f:
                    self.rss.append(next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")))
                self.fds.append(len(os.listdir(f"/proc/{self.pid}/fd")))
            except (OSError, StopIteration):
                pass
            time.sleep(0.1)

    def stop(self):
        self.stop_flag.set()
        self.thread.join()
        return max(self.rss or [0]), max(self.fds or [0])


class GoodClient:
    """One keep-alive client asking for a warm host: success rate and latency."""

    def __init__(self, port, host):
        self.port, self.host = port, host
        self.latencies, self.failures = [], []
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        conn = None
        while not self.stop_flag.is_set():
            started = time.monotonic()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                conn.request("GET", f"/a/v1/{self.host}")
                r = conn.getresponse()
                r.read()
                if r.status == 200:
                    self.latencies.append(time.monotonic() - started)
                else:
                    self.failures.append(r.status)
            except (OSError, http.client.HTTPException) as e:
                self.failures.append(type(e).__name__)
                conn = None
            time.sleep(0.01)

    def stop(self):
        self.stop_flag.set()
        self.thread.join(timeout=15)
        answers = len(self.latencies) + len(self.failures)
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000 if ordered else None
        return answers, (len(self.latencies) / answers * 100 if answers else 0.0), p99


def attack_sockets(port, count):
    out = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.setblocking(False)
        out.append(s)
    return out


def pipelined_flood(port, host, seconds):
    """Clients that send pipelined requests and never read."""
    request = f"GET /a/v1/{host} HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"nomatch\"\r\n\r\n".encode() * 200
    sockets = attack_sockets(port, 8)
    sent, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for s in sockets:
            try:
                sent += s.send(request)
            except (BlockingIOError, OSError):
                pass
        time.sleep(0.001)
    return sockets, f"{sent >> 20} MB of pipelined requests on 8 connections that never read"


def slowloris(port, host, seconds):
    sockets = attack_sockets(port, 500)
    for s in sockets:
        s.send(f"GET /a/v1/{host} HTTP/1.1\r\nHost: x\r\n".encode())
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for s in sockets:
            try:
                s.send(b"X-Slow: 1\r\n")
            except OSError:
                pass
        time.sleep(0.5)
    return sockets, "500 connections dribbling header lines"


def slow_bodies(port, host, seconds):
    sockets = attack_sockets(port, 200)
    for s in sockets:
        s.send(b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\nt")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for s in sockets:
            try:
                s.send(b"x")
            except OSError:
                pass
        time.sleep(0.5)
    return sockets, "200 POST /login bodies dribbled a byte every 0.5 s"


def cold_hosts(port, hosts):
    """Every host requested at once, one connection each (asyncio); the statuses."""
    import asyncio

    async def one(h):
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
            writer.write(f"GET /a/v1/{h} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), 60)
            writer.close()
            return int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else 0
        except (OSError, asyncio.TimeoutError, ValueError, IndexError):
            return 0

    async def run():
        return await asyncio.gather(*(one(h) for h in hosts))

    statuses = {}
    for status in asyncio.run(run()):
        statuses[status] = statuses.get(status, 0) + 1
    return statuses


def hostile(args, work):
    origin = Origin(os.path.join(work, "origin"))
    good = "good.lab.test"
    origin.set(good, {"status": 200, "body": body_for(good, 0)})
    cold = [f"cold{i}.lab.test" for i in range(3000)]
    for h in cold:
        origin.set(h, {"status": 200, "body": body_for(h, 0), "delay": 0.5})
    db = os.path.join(work, "store", "aasa-edge.sqlite")
    os.makedirs(os.path.dirname(db))
    memory_mb, max_connections, origin_slots = 64, 2000, 256
    edge = Edge(args.bin, db, origin, ["--client-timeout", "2", "--memory-cache-mb", str(memory_mb),
                                       "--max-connections", str(max_connections), "--origin-concurrency", str(origin_slots)])
    edge.request("GET", f"/a/v1/{good}")
    time.sleep(1)
    base_rss = edge.rss_kb()
    rss_bound = base_rss + (memory_mb + 128) * 1024
    fd_bound = max_connections + origin_slots + 96
    failures, phases = [], []

    def phase(name, attack):
        sampler, client = Sampler(edge.process.pid), GoodClient(edge.port, good)
        sockets, what = attack()
        time.sleep(0.5)
        for s in sockets:
            s.close()
        rss, fds = sampler.stop()
        answers, success, p99 = client.stop()
        phases.append({"phase": name, "attack": what, "rssMaxKB": rss, "rssBoundKB": rss_bound, "fdsMax": fds, "fdBound": fd_bound,
                       "goodAnswers": answers, "goodSuccessPercent": round(success, 2), "goodP99Ms": p99 and round(p99, 2)})
        print(f"hostile {name:<16} {what}: RSS max {rss / 1024:.0f} MB (bound {rss_bound / 1024:.0f}), fds max {fds} (bound {fd_bound}); "
              f"good client {answers} answers, {success:.2f} % 200, p99 {p99 and round(p99, 2)} ms", flush=True)
        if rss > rss_bound:
            failures.append(f"{name}: RSS {rss} kB over the bound {rss_bound} kB")
        if fds > fd_bound:
            failures.append(f"{name}: {fds} descriptors over the bound {fd_bound}")
        if success < 99:
            failures.append(f"{name}: the good client got {success:.2f} % 200 (failures {client.failures[:5]})")

    phase("pipelined-flood", lambda: pipelined_flood(edge.port, good, args.seconds))
    phase("slowloris", lambda: slowloris(edge.port, good, args.seconds))
    phase("slow-bodies", lambda: slow_bodies(edge.port, good, args.seconds))
    statuses = {}

    def cold_attack():
        statuses.update(cold_hosts(edge.port, cold))
        return [], f"{len(cold)} cold hosts at once, origin 0.5 s each: statuses {statuses}"

    phase("cold-hosts", cold_attack)
    status, _, metrics = edge.request("GET", "/metrics")
    # Connections beyond --max-connections are closed at once (status 0 here) and counted.
    match = re.search(rb"aasa_edge_connections_rejected_total (\d+)", metrics)
    rejected = int(match.group(1)) if match else 0
    phases[-1]["connectionsRejected"] = rejected
    if set(statuses) - {200, 503, 0}:
        failures.append(f"cold hosts: statuses other than 200 and 503: {statuses}")
    if statuses.get(0, 0) > rejected:
        failures.append(f"cold hosts: {statuses.get(0, 0)} connections got no answer but only {rejected} were refused by --max-connections")
    print(f"hostile cold-hosts: {rejected} connections refused by --max-connections {max_connections}", flush=True)
    if b'aasa_edge_origin_failures_total{reason="SWCERR00203"} ' in metrics and not re.search(rb'aasa_edge_origin_failures_total\{reason="SWCERR00203"\} 0(\.0)?\n', metrics):
        failures.append("cold hosts: an origin failure was recorded")
    edge.stop()

    # Descriptors run out: an edge limited to 256, 400 idle connections, then a cold request.
    db2 = os.path.join(work, "store2", "aasa-edge.sqlite")
    os.makedirs(os.path.dirname(db2))
    process = subprocess.Popen(["prlimit", "--nofile=256:256", args.bin, "serve", "--port", "0", "--db", db2, "--admin-token", TOKEN,
                                "--connect-to", f"::127.0.0.1:{origin.https}", "--ca-file", origin.ca],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port = None
    for line in process.stderr:
        if "listening on http://" in line:
            port = int(line.rsplit(":", 1)[1].split()[0])
            break
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    keeper = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    keeper.request("GET", "/healthz")
    keeper.getresponse().read()
    idle = attack_sockets(port, 400)
    time.sleep(1.5)
    fds = len(os.listdir(f"/proc/{process.pid}/fd"))
    keeper.request("GET", f"/a/v1/{cold[0]}")
    r = keeper.getresponse()
    r.read()
    retry_after = r.getheader("Retry-After")
    for s in idle:
        s.close()
    time.sleep(1.5)
    keeper.request("GET", f"/a/v1/{cold[0]}")
    after = keeper.getresponse()
    after.read()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    print(f"hostile fd-exhaustion    256 descriptors, 400 idle connections ({fds} fds open): cold request {r.status} "
          f"Retry-After {retry_after}; after they closed: {after.status}", flush=True)
    phases.append({"phase": "fd-exhaustion", "fdsOpen": fds, "status": r.status, "retryAfter": retry_after, "statusAfter": after.status})
    if r.status != 503 or not retry_after:
        failures.append(f"fd exhaustion: {r.status} (Retry-After {retry_after}), expected 503 with Retry-After")
    if after.status != 200:
        failures.append(f"fd exhaustion: {after.status} once descriptors were free (a local shortage was cached?)")
    origin.stop()
    return {"phases": phases, "failures": failures}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["crash", "soak", "hostile"])
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build", "debug", "aasa-edge"))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--hosts", type=int)
    parser.add_argument("--origin-delay", type=float, default=0.1, help="seconds each origin answer takes (crash)")
    parser.add_argument("--seconds", type=float, help="soak: 60 by default; hostile: each phase, 5 by default")
    parser.add_argument("--minutes", type=float)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    if args.hosts is None:
        args.hosts = 300 if args.mode == "crash" else 50
    if args.seconds is None:
        args.seconds = 5 if args.mode == "hostile" else 60
    with tempfile.TemporaryDirectory(prefix=f"aasa-edge-{args.mode}-") as work:
        figures = {"crash": crash, "soak": soak, "hostile": hostile}[args.mode](args, work)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    for failure in figures["failures"][:30]:
        print("FAIL:", failure)
    if figures["failures"]:
        print(f"{args.mode}: {len(figures['failures'])} failures")
        sys.exit(1)
    print(f"{args.mode}: ok")


if __name__ == "__main__":
    main()
