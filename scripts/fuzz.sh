#!/usr/bin/env bash
# libFuzzer runs of two targets, each that many executions:
#   - the AASA engine (fuzz/AASAFuzz.swift): parser, validator, matcher, diff;
#   - the hit path's request framing (fuzz/RequestHeadFuzz.swift, seeds in fuzz/request-seeds/).
#   scripts/fuzz.sh quick      200,000 executions each (make test)
#   scripts/fuzz.sh long       10,000,000 executions each (make reliability)
#   scripts/fuzz.sh RUNS       that many
# Seeds: examples/*.json, every JSON object literal in Tests/**/*.swift, each also paired with
# URLs from the tests; plus fuzz/regressions/* (inputs that once failed), which run first.
# Leak detection is off: Swift globals are allocated once and never freed, which LSan reports.
# A failure leaves the input in .build/fuzz/crash-* (or timeout-*, oom-*) and exits non-zero: add it to
# fuzz/regressions/ and to Tests/AASAEngineTests/FuzzRegressionTests.swift.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-quick}" in
  quick) runs=200000 ;;
  long) runs=10000000 ;;
  *) runs=$1 ;;
esac
out=.build/fuzz
mkdir -p "$out/corpus" "$out/seeds"
# build TARGET SOURCES...: compiles a fuzz target when missing or older than its sources.
build() {
  local target=$1; shift
  if [ ! -x "$out/$target" ] || [ -n "$(find "$@" -newer "$out/$target")" ]; then
    echo "fuzz: building $out/$target (-sanitize=fuzzer,address)"
    swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name "$(echo "$target" | tr -d -)" \
      "$@" -o "$out/$target" 2> "$out/build.log" || { cat "$out/build.log"; exit 1; }
  fi
}
build aasa-fuzz Sources/AASAEngine/*.swift fuzz/AASAFuzz.swift
build request-head-fuzz Sources/EdgeHTTP/RequestHeadScanner.swift fuzz/RequestHeadFuzz.swift
python3 - "$out/seeds" <<'PY'
import glob, hashlib, os, re, sys
seeds, urls, bodies = sys.argv[1], set(), set()
for path in glob.glob("examples/*.json"):
    bodies.add(open(path, "rb").read())
for path in glob.glob("Tests/**/*.swift", recursive=True):
    text = open(path, encoding="utf-8").read()
    for m in re.finditer(r'#"(\{.*?\})"#', text):
        bodies.add(m.group(1).replace('\\#(', '(').encode())
    for m in re.finditer(r'"(https?://[^"\\ ]+)"', text):
        urls.add(m.group(1).encode())
urls = sorted(urls)[:40]
for body in bodies:
    for extra in [b""] + [b"\xff" + u for u in urls[:8]]:
        data = body + extra
        with open(os.path.join(seeds, hashlib.sha1(data).hexdigest()), "wb") as f:
            f.write(data)
print(f"fuzz: {len(bodies)} seed bodies, {len(urls)} seed URLs")
PY
if [ -d fuzz/regressions ] && [ -n "$(ls -A fuzz/regressions 2>/dev/null)" ]; then
  ASAN_OPTIONS=detect_leaks=0 "$out/aasa-fuzz" fuzz/regressions/* 2>&1 | tail -1
fi
# fuzz TARGET CORPUS SEEDS...: runs one target, prints its figures, fails with the last output on a finding.
fuzz() {
  local target=$1 runs=$2 corpus=$3; shift 3
  local log="$out/$target.log"
  mkdir -p "$corpus"
  ASAN_OPTIONS=detect_leaks=0 "$out/$target" -runs="$runs" -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -detect_leaks=0 \
    -artifact_prefix="$out/" "$corpus" "$@" > "$log" 2>&1 || { tail -40 "$log"; exit 1; }
  local execs secs cov
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  echo "fuzz $target: ${execs} executions in ${secs} s, ${cov}, corpus $(ls "$corpus" | wc -l) inputs, 0 crashes"
}
fuzz aasa-fuzz "$runs" "$out/corpus" "$out/seeds"
fuzz request-head-fuzz "$runs" "$out/request-corpus" fuzz/request-seeds
