#!/usr/bin/env bash
# The side-by-side benchmark suite (P1-P5, see bench/edge_bench.py): installs what it needs when
# missing (nginx with the echo module, Varnish, wrk, curl, openssl), builds the release binary,
# and runs. Arguments go to edge_bench.py, e.g. --only P1 --rounds 5, --p5-hosts 20000.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
need=()
command -v nginx >/dev/null || need+=(nginx)
[ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ] || need+=(libnginx-mod-http-echo)
command -v varnishd >/dev/null || need+=(varnish)
command -v wrk >/dev/null || need+=(wrk)
command -v curl >/dev/null || need+=(curl)
command -v openssl >/dev/null || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y "${need[@]}" || { $SUDO apt-get update && $SUDO apt-get install -y "${need[@]}"; }
fi
# The distribution's services are not the benchmark's: keep them from holding ports or CPU.
for service in nginx varnish varnishncsa; do $SUDO systemctl stop "$service" 2>/dev/null || true; done
swift build -c release --product aasa-edge >&2
exec python3 bench/edge_bench.py "$@"
