#!/usr/bin/env bash
# A stand-in for a lab's internal origin, for the README recipes: HTTPS on 127.0.0.1 with a
# private CA minted here, serving DIR/www as https://app.lab.test:PORT/ (any *.lab.test name).
#   scripts/lab-origin.sh [DIR] [PORT]      (defaults: /tmp/aasa-lab 8443; Ctrl-C stops it)
# It writes DIR/lab-ca.pem (give it to the edge with --ca-file) and, when missing,
# DIR/www/.well-known/apple-app-site-association (Apple's applinks example).
set -euo pipefail
DIR=${1:-/tmp/aasa-lab}
PORT=${2:-8443}
HERE=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$DIR/www/.well-known"
cd "$DIR"
if [ ! -f lab-ca.pem ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=aasa-edge lab CA" -keyout lab-ca.key -out lab-ca.pem 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=app.lab.test" \
    -keyout origin.key -out origin.csr 2>/dev/null
  printf 'subjectAltName=DNS:app.lab.test,DNS:*.lab.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > origin.ext
  openssl x509 -req -in origin.csr -CA lab-ca.pem -CAkey lab-ca.key -CAcreateserial -days 30 \
    -extfile origin.ext -out origin.pem 2>/dev/null
fi
AASA=www/.well-known/apple-app-site-association
[ -f "$AASA" ] || cp "$HERE/examples/apple-overview.json" "$AASA"
echo "lab origin: https://app.lab.test:$PORT/.well-known/apple-app-site-association on 127.0.0.1 (CA: $DIR/lab-ca.pem)"
exec python3 - "$PORT" <<'PY'
import http.server, ssl, sys
class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k): super().__init__(*a, directory="www", **k)
    def guess_type(self, path): return "application/json"
    def log_message(self, fmt, *args): sys.stderr.write("lab origin: " + (fmt % args) + "\n")
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("origin.pem", "origin.key")
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
PY
