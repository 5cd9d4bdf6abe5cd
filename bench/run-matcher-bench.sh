#!/usr/bin/env bash
# Builds the matcher benchmark in release, runs it pinned to one core, and appends the figures to
# bench/results/matcher-history.tsv (date, commit, figures) so regressions are visible.
set -euo pipefail
cd "$(dirname "$0")"
swift build -c release --package-path MatcherBench >&2
bin=MatcherBench/.build/release/MatcherBench
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
json=$("${pin[@]}" "$bin")
echo "$json" > results/matcher-latest.json
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
history=results/matcher-history.tsv
[ -f "$history" ] || printf 'date\tcommit\tdecisions_per_s\tdecisions_per_s_with_url_parsing\tcompile_ms_100kb\tworst_validation_ms\n' > "$history"
python3 - "$json" "$commit" >> "$history" <<'PY'
import json, sys, datetime
r = json.loads(sys.argv[1])
print("\t".join([datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%MZ"), sys.argv[2],
                 str(r["decisionsPerSecond"]), str(r["decisionsPerSecondWithURLParsing"]), str(r["compileMilliseconds"]),
                 str(r.get("worstValidationMilliseconds", ""))]))
PY
echo "$json"
