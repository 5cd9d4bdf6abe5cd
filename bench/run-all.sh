#!/usr/bin/env bash
# Every benchmark in one command (`make bench-all`, 8 to 20 minutes on 2 cores): the edge against
# nginx and Varnish (P1-P3, P5: hit throughput and tail, coalescing, release refetch against
# curl --parallel, 100,000 hosts' memory and restart), the shared PostgreSQL store (C1-C3: purge
# fan-out over 3 edges, cold requests over 3 edges, hit path on PostgreSQL against SQLite) and the
# matcher (P4). Each writes its JSON to bench/results/*-latest.json and a line to *-history.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."
bench/run-edge-bench.sh --only P1,P2,P3,P5
bench/run-cluster-bench.sh
bench/run-matcher-bench.sh
