#!/usr/bin/env bash
# The side-by-side benchmark suite (P1-P5, see bench/edge_bench.py): installs what it needs when
# missing (nginx with the echo module, Varnish, wrk, curl, openssl), builds the release binary,
# and runs. Arguments go to edge_bench.py, e.g. --only P1 --rounds 5, --p5-hosts 20000.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/install-missing.sh
need=()
command -v nginx >/dev/null || need+=(nginx)
[ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ] || need+=(libnginx-mod-http-echo)
command -v varnishd >/dev/null || need+=(varnish)
command -v wrk >/dev/null || need+=(wrk)
command -v curl >/dev/null || need+=(curl)
command -v openssl >/dev/null || need+=(openssl)
install_missing "${need[@]}"
# The distribution's services are not the benchmark's: keep them from holding ports or CPU.
for service in nginx varnish varnishncsa; do $SUDO systemctl stop "$service" 2>/dev/null || true; done
swift build -c release --product aasa-edge >&2
exec python3 bench/edge_bench.py "$@"
