# Sourced by the check scripts: start_edge LOG ARGS... runs `$BIN serve --port 0 ARGS...` in the
# background with its output in LOG, waits (up to 10 s) for its "listening on" line, and sets
# `pid` and `port` (port stays empty when it did not start).
start_edge() {
  local log=$1
  shift
  "$BIN" serve --port 0 "$@" > "$log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 1 100); do
    port=$(sed -n 's#.*listening on http://[^:]*:\([0-9]*\).*#\1#p' "$log" | head -1)
    [ -n "$port" ] && return 0
    sleep 0.1
  done
}
