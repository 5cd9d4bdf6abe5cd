#!/usr/bin/env python3
"""A real HTTPS origin on 127.0.0.1 for aasa-edge's tests.

At start it creates a throw-away CA and certificates in --workdir, listens for TLS on one port
and for a plain-HTTP control API on another, and prints one JSON line:
    {"https": PORT, "control": PORT, "ca": "WORKDIR/ca.pem"}

Hosts are names under lab.test (reach them with curl's CONNECT_TO). The certificate chosen by
SNI depends on the name:
    expired.lab.test    an expired certificate from the test CA
    wronghost.lab.test  a valid certificate for another name
    unknownca.lab.test  a certificate from a CA nobody trusts
    hang.lab.test       the TLS handshake never completes
    anything else       a valid certificate for *.lab.test
A host whose behaviour has "tls" set to one of "expired", "wronghost", "unknownca" or "hang" gets
that fault instead, whatever its name; its kept-alive connections are closed at their next request
so the client has to handshake again.

Each host's behaviour is set through the control API (JSON), any time during a test:
    PUT /hosts/NAME         {"status":200,"reason":"OK","headers":{...},"body":"...","bodyBase64":"...",
                             "etag":"\\"v1\\"","delay":0,"drip":{"bytes":16,"interval":0.2},
                             "contentLength":true,"oversize":200000,"closeMidBody":false,
                             "neverAnswer":false,"reset":false,"tls":"expired"}
    GET  /hosts/NAME        {"count": N, "connections": N, "lastHeaders": {...}}: requests and TLS
                            connections (handshakes by SNI) seen for NAME, and the last request's
                            headers, lower-cased, plus ":request-line"
    DELETE /hosts           forget every behaviour and counter
Unknown hosts get 404. A request with If-None-Match equal to the behaviour's etag gets 304.
"""
import argparse
import base64
import datetime
import json
import os
import socket
import ssl
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

LOCK = threading.Lock()
BEHAVIOURS = {}
COUNTS = {}
LAST_HEADERS = {}
HANDSHAKES = {}


def make_key():
    return ec.generate_private_key(ec.SECP256R1())


def write_pem(path, key=None, cert=None):
    with open(path, "wb") as f:
        if cert is not None:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        if key is not None:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))


def make_ca(name):
    key = make_key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


def make_leaf(ca_key, ca_cert, names, not_before, not_after):
    key = make_key()
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(not_before).not_valid_after(not_after)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def build_contexts(workdir):
    now = datetime.datetime.now(datetime.timezone.utc)
    day = datetime.timedelta(days=1)
    ca_key, ca_cert = make_ca("aasa-edge test CA")
    write_pem(os.path.join(workdir, "ca.pem"), cert=ca_cert)
    rogue_key, rogue_cert = make_ca("untrusted test CA")
    leaves = {
        "default": make_leaf(ca_key, ca_cert, ["*.lab.test", "lab.test"], now - day, now + 30 * day),
        "expired.lab.test": make_leaf(ca_key, ca_cert, ["expired.lab.test"], now - 30 * day, now - day),
        "wronghost.lab.test": make_leaf(ca_key, ca_cert, ["somewhere-else.example"], now - day, now + 30 * day),
        "unknownca.lab.test": make_leaf(rogue_key, rogue_cert, ["unknownca.lab.test"], now - day, now + 30 * day),
    }
    contexts = {}
    for name, (key, cert) in leaves.items():
        path = os.path.join(workdir, name.replace("*", "star") + ".pem")
        write_pem(path, key=key, cert=cert)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(path)
        contexts[name] = ctx
    return contexts


def behaviour_for(host):
    with LOCK:
        return dict(BEHAVIOURS.get(host, {}))


class OriginHandler:
    """Serves HTTP/1.1 on one TLS connection, keep-alive, one request at a time."""

    def __init__(self, conn):
        self.conn = conn
        self.buffer = b""

    def read_request(self):
        while b"\r\n\r\n" not in self.buffer:
            chunk = self.conn.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
            if len(self.buffer) > 1 << 20:
                return None
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        return lines[0], headers

    def serve(self):
        while True:
            request = self.read_request()
            if request is None:
                return
            request_line, headers = request
            host = headers.get("host", "").split(":")[0].lower()
            with LOCK:
                COUNTS[host] = COUNTS.get(host, 0) + 1
                LAST_HEADERS[host] = dict(headers, **{":request-line": request_line})
            b = behaviour_for(host)
            if not self.respond(b, headers):
                return

    def send(self, data):
        self.conn.sendall(data)

    def respond(self, b, request_headers):
        """Writes one response; returns False when the connection must close."""
        if b.get("reset") or b.get("tls"):
            return False
        if b.get("neverAnswer"):
            time.sleep(120)
            return False
        if b.get("delay"):
            time.sleep(float(b["delay"]))
        status = int(b.get("status", 404)) if b else 404
        reason = b.get("reason", None)
        body = b""
        if "bodyBase64" in b:
            body = base64.b64decode(b["bodyBase64"])
        elif "body" in b:
            body = b["body"].encode("utf-8")
        elif not b:
            body = b"not configured\n"
        if b.get("oversize"):
            filler = b'{"pad":"' + b"x" * int(b["oversize"]) + b'"}'
            body = filler
        etag = b.get("etag")
        if etag and request_headers.get("if-none-match") == etag:
            status, body, reason = 304, b"", None
        if reason is None:
            try:
                reason = HTTPStatus(status).phrase
            except ValueError:
                reason = "Unknown"
        headers = dict(b.get("headers", {}))
        if etag:
            headers.setdefault("ETag", etag)
        head = "HTTP/1.1 %d %s\r\n" % (status, reason)
        send_length = b.get("contentLength", True)
        if status == 304:
            send_length = False
        if send_length:
            headers["Content-Length"] = str(len(body))
        else:
            headers["Connection"] = "close"
        for name, value in headers.items():
            head += "%s: %s\r\n" % (name, value)
        self.send((head + "\r\n").encode("latin-1"))
        if status == 304:
            return True
        if b.get("closeMidBody"):
            self.send(body[: len(body) // 2])
            return False
        drip = b.get("drip")
        if drip:
            step = max(1, int(drip.get("bytes", 16)))
            for i in range(0, len(body), step):
                self.send(body[i:i + step])
                time.sleep(float(drip.get("interval", 0.2)))
            return send_length
        self.send(body)
        return send_length


def serve_tls(listener, contexts):
    default = contexts["default"]

    def sni(sock, name, ctx):
        name = (name or "").lower()
        with LOCK:
            HANDSHAKES[name] = HANDSHAKES.get(name, 0) + 1
        fault = behaviour_for(name).get("tls")
        if fault:
            name = fault + ".lab.test"
        if name == "hang.lab.test":
            time.sleep(120)
        if name in contexts:
            sock.context = contexts[name]

    default.sni_callback = sni

    def handle(raw):
        try:
            raw.settimeout(300)
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = default.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            raw.close()
            return
        try:
            OriginHandler(conn).serve()
        except (ssl.SSLError, OSError):
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    while True:
        try:
            raw, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=handle, args=(raw,), daemon=True).start()


class ControlHandler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def host(self):
        parts = self.path.strip("/").split("/")
        return parts[1].lower() if len(parts) >= 2 and parts[0] == "hosts" else None

    def do_PUT(self):
        host = self.host()
        length = int(self.headers.get("Content-Length", "0"))
        behaviour = json.loads(self.rfile.read(length) or b"{}")
        with LOCK:
            BEHAVIOURS[host] = behaviour
        self.reply(200, {"host": host})

    def do_GET(self):
        host = self.host()
        with LOCK:
            self.reply(200, {"count": COUNTS.get(host, 0), "connections": HANDSHAKES.get(host, 0),
                             "lastHeaders": LAST_HEADERS.get(host, {})})

    def do_DELETE(self):
        with LOCK:
            BEHAVIOURS.clear()
            COUNTS.clear()
            LAST_HEADERS.clear()
            HANDSHAKES.clear()
        self.reply(200, {})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    contexts = build_contexts(args.workdir)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    control = ThreadingHTTPServer(("127.0.0.1", 0), ControlHandler)
    control.daemon_threads = True
    threading.Thread(target=serve_tls, args=(listener, contexts), daemon=True).start()
    threading.Thread(target=control.serve_forever, daemon=True).start()
    print(json.dumps({"https": listener.getsockname()[1], "control": control.server_address[1],
                      "ca": os.path.join(args.workdir, "ca.pem")}), flush=True)
    # Stop when the test process closes our stdin (or dies).
    try:
        sys.stdin.read()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
