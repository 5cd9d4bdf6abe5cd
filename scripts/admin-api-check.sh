#!/usr/bin/env bash
# The admin API against its OpenAPI description (docs/openapi.yaml): schemathesis (PyPI) drives a
# live `aasa-edge serve` with generated requests and checks every response (no 5xx, status codes
# and bodies as documented, authentication enforced); then the token rules are checked directly:
# no token and a wrong token get 401, and a generated token file is mode 0600.
# Origins are unreachable on purpose (every fetch goes to a closed local port, every probe's CDN
# request to a closed local proxy), so nothing leaves the machine.   Usage: scripts/admin-api-check.sh [MAX_EXAMPLES]   (default 25 per operation)
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/debug/aasa-edge}
EXAMPLES=${1:-25}
command -v schemathesis >/dev/null || python3 -m pip install --quiet schemathesis 2>/dev/null \
  || python3 -m pip install --quiet --break-system-packages schemathesis 2>/dev/null
if ! command -v schemathesis >/dev/null; then echo "admin-api-check: schemathesis could not be installed: skipped"; exit 0; fi
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
. scripts/lib/start-edge.sh
# Probes started by the check observe their CDN URL (Apple's by default) with a plain GET, which
# honours proxy variables: a closed local port keeps those inside the machine too.
export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 all_proxy=http://127.0.0.1:9 no_proxy=127.0.0.1,localhost
start_edge "$work/log" --db "$work/var/store.sqlite" --origin-timeout 1 --connect-to ::127.0.0.1:1
[ -n "$port" ] || { echo "admin-api-check: the edge did not start"; cat "$work/log"; exit 1; }
token=$(cat "$work/var/admin-token")
failed=0
mode=$(stat -c %a "$work/var/admin-token")
[ "$mode" = 600 ] && echo "token file mode: 600" || { echo "✗ token file mode $mode, expected 600"; failed=1; }
for header in "" "Authorization: Bearer wrong-token" "Authorization: Basic $(printf 'x:%s' "$token" | base64 -w0)"; do
  status=$(curl -s -o /dev/null -w '%{http_code}' ${header:+-H "$header"} "http://127.0.0.1:$port/admin/v1/domains")
  [ "$status" = 401 ] || { echo "✗ '${header:-no header}' got $status, expected 401"; failed=1; }
done
echo "no token, a wrong token and Basic auth: 401"
# Seed one host so that the read routes have something to show.
curl -s -o /dev/null "http://127.0.0.1:$port/a/v1/seed.lab.test"
# Hummingbird answers 404, not 405, to a method no route has (TRACE /domains): that check is left out.
# DELETE /probes/{id} stops a run and keeps its record (the contract), so the run stays readable:
# the use-after-free check, which expects a deleted resource to be gone, is left out too.
schemathesis run docs/openapi.yaml --url "http://127.0.0.1:$port/admin/v1" -H "Authorization: Bearer $token" \
  --checks all --exclude-checks unsupported_method,use_after_free --max-examples "$EXAMPLES" --generation-deterministic --no-color \
  --report junit --report-dir "$work/report" > "$work/schemathesis.txt" 2>&1
rc=$?
cp "$work/schemathesis.txt" "${TMPDIR:-/tmp}/admin-api-check.txt"
tail -n 25 "$work/schemathesis.txt"
[ $rc -eq 0 ] || failed=1
if grep -q "Internal Server Error\| 5[0-9][0-9] " "$work/log"; then echo "✗ the edge logged a server error"; failed=1; fi
[ $failed -eq 0 ] && echo "admin-api-check: passed" || { echo "admin-api-check: FAILED"; exit 1; }
