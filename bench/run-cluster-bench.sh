#!/usr/bin/env bash
# Several edges on one PostgreSQL store (C1-C3, see bench/cluster_bench.py): installs what it needs
# when missing (PostgreSQL, nginx with the echo module, wrk, openssl), builds the release binary,
# and runs. Arguments go to cluster_bench.py, e.g. --purges 100 --rounds 3.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/install-missing.sh
need=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v nginx >/dev/null || need+=(nginx)
[ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ] || need+=(libnginx-mod-http-echo)
command -v wrk >/dev/null || need+=(wrk)
command -v openssl >/dev/null || need+=(openssl)
install_missing "${need[@]}"
for service in nginx postgresql; do $SUDO systemctl stop "$service" 2>/dev/null || true; done
swift build -c release --product aasa-edge >&2
cd bench && exec python3 cluster_bench.py "$@"
