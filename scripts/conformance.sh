#!/usr/bin/env bash
# Runs ../shared/conformance/cases.json through `aasa-edge match --jsonl` and compares decisions.
# Usage: scripts/conformance.sh BINARY CONFORMANCE_DIR
set -euo pipefail
bin=${1:?binary}
dir=${2:?conformance folder}
command -v python3 >/dev/null || { echo "conformance: python3 not found, skipped"; exit 0; }
python3 - "$bin" "$dir/cases.json" <<'PY'
import json, subprocess, sys
binary, cases_path = sys.argv[1], sys.argv[2]
cases = json.load(open(cases_path, encoding="utf-8"))["matching"]
lines = "".join(json.dumps({"id": c["name"], "aasa": c["aasa"], "domain": c["domain"],
                            "appId": c["appId"], "url": c["url"]}) + "\n" for c in cases)
out = subprocess.run([binary, "match", "--jsonl"], input=lines, capture_output=True, text=True, check=True).stdout
results = {r["id"]: r for r in map(json.loads, out.splitlines())}
failed = [c for c in cases if results.get(c["name"], {}).get("decision") != c["expect"]]
for c in failed:
    print(f"FAIL {c['name']}: expected {c['expect']}, got {results.get(c['name'])}")
print(f"conformance (match --jsonl): {len(cases) - len(failed)} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
PY
