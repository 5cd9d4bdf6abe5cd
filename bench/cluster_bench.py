#!/usr/bin/env python3
"""Several edges on one PostgreSQL store (issue 17), measured on this machine.

Run through bench/run-cluster-bench.sh (installs PostgreSQL, nginx with the echo module, wrk;
builds the release binary).

  C1 purge fan-out: 3 edges on one PostgreSQL store, a host warm on all three; 100 times, a hard
     purge on edge 1, then each of the other edges is polled (admin GET of the host, every 2 ms)
     until it reports the host purged: time from the purge's answer to the last edge, p50/p99.
  C2 cold requests: 1,000 concurrent requests for one cold host behind a 200 ms origin, spread
     over the 3 edges: origin requests (goal 1) and the time until all are answered.
  C3 hit path: P1's wrk run (-t1 -c64, ~2 KB body) against one edge on PostgreSQL and one on
     SQLite, interleaved: the hit path never touches the store, so the ratio should be ~1.
Results: bench/results/cluster-latest.json, a table on stdout, a line in cluster-history.tsv.
"""
import argparse
import asyncio
import datetime
import json
import os
import shutil
import statistics
import subprocess
import time
import urllib.request

import edge_bench as eb

PG_BIN = sorted((d for d in os.listdir("/usr/lib/postgresql") if d.isdigit()), key=int)[-1]
PG_BIN = f"/usr/lib/postgresql/{PG_BIN}/bin"
PG_PORT = 19432
EDGE_PORTS = [19091, 19092, 19093]
SQLITE_EDGE_PORT = 19094
TOKEN = "bench-token"


def postgres():
    folder = f"{eb.WORK}/pg"
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    if os.getuid() == 0:
        eb.run(["chown", "postgres", folder])
    eb.run(as_postgres + [f"{PG_BIN}/initdb", "-D", f"{folder}/data", "-U", "postgres", "--auth=trust", "-E", "UTF8",
                          "--locale=C", "--no-sync"])
    eb.run(as_postgres + [f"{PG_BIN}/pg_ctl", "-D", f"{folder}/data", "-w", "-l", f"{folder}/log", "-o",
                          f"-p {PG_PORT} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200", "start"])
    eb.run(["psql", "-h", "127.0.0.1", "-p", str(PG_PORT), "-U", "postgres", "-c", "CREATE DATABASE bench"])

    def stop():
        subprocess.run(as_postgres + [f"{PG_BIN}/pg_ctl", "-D", f"{folder}/data", "-m", "fast", "-w", "stop"], capture_output=True)
    return f"postgres://postgres@127.0.0.1:{PG_PORT}/bench?sslmode=disable", stop


def start_edge(binary, port, origin_port, store=None, db=None, node="edge"):
    eb.ensure_free(port)
    where = ["--store", store, "--node-id", node] if store else ["--db", db]
    cmd = [binary, "serve", "--port", str(port), *where, "--admin-token", TOKEN, "--ttl", "3600",
           "--connect-to", f"::127.0.0.1:{origin_port}", "--ca-file", f"{eb.WORK}/ca.pem"]
    server = eb.Server(node, cmd)
    eb.wait_for(port, "/healthz")
    return server


def admin(port, method, path, body=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/admin/v1{path}", method=method, data=body,
                                     headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read()


def state(port, host):
    try:
        return json.loads(admin(port, "GET", f"/domains/{host}")[1])["state"]
    except Exception:
        return None


def c1(binary, purges):
    host = eb.HOST
    lags = []
    for _ in range(purges):
        for port in EDGE_PORTS:
            eb.http_get(port, f"/a/v1/{host}")  # warm (the first edge refetches after each purge)
        for port in EDGE_PORTS[1:]:
            deadline = time.monotonic() + 5
            while state(port, host) != "fresh" and time.monotonic() < deadline:
                time.sleep(0.002)
        admin(EDGE_PORTS[0], "POST", f"/domains/{host}/purge")
        answered = time.monotonic()
        pending = set(EDGE_PORTS[1:])
        deadline = answered + 5
        while pending and time.monotonic() < deadline:
            pending = {port for port in pending if state(port, host) != "purged"}
            if pending:
                time.sleep(0.002)
        lags.append((time.monotonic() - answered) * 1000 if not pending else float("inf"))
    lags.sort()
    result = {"purges": purges, "p50_ms": statistics.median(lags), "p99_ms": lags[min(len(lags) - 1, int(len(lags) * 0.99))],
              "max_ms": lags[-1], "goal_p99_ms": 100}
    eb.log(f"C1 purge fan-out over {purges} purges: p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms, max {result['max_ms']:.1f} ms")
    return result


async def spread_burst(host, count):
    started = time.monotonic()
    statuses = await asyncio.gather(*(eb.one_request(EDGE_PORTS[i % 3], f"/a/v1/{host}") for i in range(count)),
                                    return_exceptions=True)
    return time.monotonic() - started, statuses


def c2(clients):
    host = f"cold-{int(time.time())}.bench.test"
    log_file = f"{eb.WORK}/slow/logs/200ms.log"
    before = eb.count_lines(log_file, host)
    elapsed, statuses = asyncio.run(spread_burst(host, clients))
    time.sleep(0.5)
    fetches = eb.count_lines(log_file, host) - before
    ok = sum(1 for s in statuses if s == b"200")
    result = {"clients": clients, "edges": 3, "answered_200": ok, "origin_requests": fetches, "all_answered_s": elapsed,
              "origin_latency_s": 0.2}
    eb.log(f"C2 {clients} cold requests over 3 edges: {ok} answered 200 in {elapsed:.3f} s, origin requests {fetches}")
    return result


def c3(rounds, duration):
    systems = {"postgres": EDGE_PORTS[0], "sqlite": SQLITE_EDGE_PORT}
    runs = {name: [] for name in systems}
    for port in systems.values():
        eb.http_get(port, f"/a/v1/{eb.HOST}")
    for r in range(rounds):
        for name, port in systems.items():
            figures = eb.wrk(f"http://127.0.0.1:{port}/a/v1/{eb.HOST}", duration)
            runs[name].append(figures)
            eb.log(f"C3 round {r + 1} {name:9} {figures['rps']:9.0f} req/s  p99 {figures['p99_ms']:.2f} ms")
    result = {name: {"rps_median": statistics.median(f["rps"] for f in values),
                     "p99_ms_median": statistics.median(f["p99_ms"] for f in values)} for name, values in runs.items()}
    result["ratio_postgres_to_sqlite"] = result["postgres"]["rps_median"] / result["sqlite"]["rps_median"]
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(eb.ROOT, ".build/release/aasa-edge"))
    parser.add_argument("--purges", type=int, default=100)
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    args = parser.parse_args()
    os.makedirs(f"{eb.WORK}/slow/logs", exist_ok=True)
    eb.make_certificates()
    with open(f"{eb.WORK}/body.json", "w") as f:
        f.write(eb.aasa_body())
    origin = eb.Server("origin", ["nginx", "-c", eb.nginx_conf("origin", f"""
  server {{ listen 127.0.0.1:{eb.PORTS['origin_tls']} ssl; location = {eb.AASA_PATH} {{ default_type application/json; alias {eb.WORK}/body.json; }} }}
"""), "-g", "daemon off;"], pid_file=f"{eb.WORK}/origin/nginx.pid")
    slow = eb.slow_origin()
    store, stop_postgres = postgres()
    servers = []
    try:
        servers = [start_edge(args.binary, port, eb.PORTS["origin_tls"], store=store, node=f"edge-{i + 1}")
                   for i, port in enumerate(EDGE_PORTS)]
        sqlite_db = f"{eb.WORK}/cluster-sqlite.sqlite"
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(sqlite_db + suffix):
                os.remove(sqlite_db + suffix)
        servers.append(start_edge(args.binary, SQLITE_EDGE_PORT, eb.PORTS["origin_tls"], db=sqlite_db, node="sqlite"))
        results = {"C1": c1(args.binary, args.purges), "C3": c3(args.rounds, args.duration)}
        for server in servers:
            server.stop()
        # C2 needs the edges in front of the 200 ms origin.
        servers = [start_edge(args.binary, port, eb.PORTS["origin_200ms"], store=store, node=f"edge-{i + 1}")
                   for i, port in enumerate(EDGE_PORTS)]
        results["C2"] = c2(args.clients)
    finally:
        for server in servers:
            server.stop()
        slow.stop()
        origin.stop()
        stop_postgres()
    commit = subprocess.run(["git", "-C", eb.ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    results["meta"] = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), "commit": commit,
                       "cores": os.cpu_count()}
    out = os.path.join(eb.HERE, "results")
    with open(os.path.join(out, "cluster-latest.json"), "w") as f:
        json.dump(results, f, indent=2)
    history = os.path.join(out, "cluster-history.tsv")
    if not os.path.exists(history):
        with open(history, "w") as f:
            f.write("date\tcommit\tC1_p50_ms\tC1_p99_ms\tC2_origin_requests\tC2_all_answered_s\tC3_pg_rps\tC3_sqlite_rps\tC3_ratio\n")
    with open(history, "a") as f:
        f.write("\t".join(str(x) for x in [results["meta"]["date"], commit, f"{results['C1']['p50_ms']:.1f}",
                                           f"{results['C1']['p99_ms']:.1f}", results["C2"]["origin_requests"],
                                           f"{results['C2']['all_answered_s']:.3f}", f"{results['C3']['postgres']['rps_median']:.0f}",
                                           f"{results['C3']['sqlite']['rps_median']:.0f}",
                                           f"{results['C3']['ratio_postgres_to_sqlite']:.3f}"]) + "\n")
    print(f"C1 purge visible on all 3 edges: p50 {results['C1']['p50_ms']:.1f} ms, p99 {results['C1']['p99_ms']:.1f} ms (goal p99 <= 100 ms)")
    print(f"C2 {results['C2']['clients']} cold requests over 3 edges: {results['C2']['origin_requests']} origin fetch(es), "
          f"all answered in {results['C2']['all_answered_s']:.3f} s (origin latency 0.2 s)")
    print(f"C3 hit path: PostgreSQL {results['C3']['postgres']['rps_median']:.0f} req/s vs SQLite "
          f"{results['C3']['sqlite']['rps_median']:.0f} req/s (ratio {results['C3']['ratio_postgres_to_sqlite']:.3f})")


if __name__ == "__main__":
    main()
