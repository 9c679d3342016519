#!/usr/bin/env python3
"""A provider registry (the registry protocol's three endpoints) over HTTPS on 127.0.0.1,
serving the files of one `scripts/release` output folder, for `terraform init` tests.

    fake_registry.py DIST_DIR VERSION CERT KEY PORT_FILE KEY_ID ARMORED_KEY_FILE

Serves /.well-known/terraform.json, /v1/providers/locality/locality/versions, the download
metadata for linux_amd64 (with the GPG key that signed SHA256SUMS), and the files themselves
under /files/. Writes the port it listens on to PORT_FILE, then serves until killed.
"""
import http.server
import json
import os
import ssl
import sys

dist, version, cert, key, port_file, key_id, armored_file = sys.argv[1:8]
armored = open(armored_file).read()
provider = f"terraform-provider-locality_{version}"


class Handler(http.server.BaseHTTPRequestHandler):
    def reply(self, status, body, kind="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        base = f"https://{self.headers['Host']}/files"
        path = self.path.split("?")[0]
        if path == "/.well-known/terraform.json":
            return self.reply(200, {"providers.v1": "/v1/providers/"})
        if path == "/v1/providers/locality/locality/versions":
            return self.reply(200, {"versions": [{"version": version, "protocols": ["6.0"],
                                                  "platforms": [{"os": "linux", "arch": "amd64"}]}]})
        if path == f"/v1/providers/locality/locality/{version}/download/linux/amd64":
            zip_name = f"{provider}_linux_amd64.zip"
            sums = open(os.path.join(dist, f"{provider}_SHA256SUMS")).read()
            shasum = next(line.split()[0] for line in sums.splitlines() if line.endswith(zip_name))
            return self.reply(200, {
                "protocols": ["6.0"], "os": "linux", "arch": "amd64", "filename": zip_name,
                "download_url": f"{base}/{zip_name}",
                "shasums_url": f"{base}/{provider}_SHA256SUMS",
                "shasums_signature_url": f"{base}/{provider}_SHA256SUMS.sig",
                "shasum": shasum,
                "signing_keys": {"gpg_public_keys": [{"key_id": key_id, "ascii_armor": armored}]},
            })
        if path.startswith("/files/"):
            name = os.path.basename(path)
            full = os.path.join(dist, name)
            if os.path.isfile(full):
                return self.reply(200, open(full, "rb").read(), "application/octet-stream")
        self.reply(404, {"errors": ["not found"]})

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
