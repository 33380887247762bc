#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the GCE metadata server's token endpoint, for the unit test of
oci_gce_token (tests/unit/test_oci_config.c): 127.0.0.1 only, plain HTTP as the real one.

  gce-metadata.py --port-file F --mode-file F --log F [--lifetime SEC]

GET /computeMetadata/v1/instance/service-accounts/default/token answers what the first word
of --mode-file says, read on each request:
  token      200 and {"access_token": ..., "expires_in": 3599, "token_type": "Bearer"}, the
             answer the real server gives
             (https://cloud.google.com/compute/docs/access/authenticate-workloads)
  garbage    200 and an HTML page, as a captive portal would
  basic      200 and the JSON with "token_type": "Basic"
  spaces     200 and the JSON with an access_token holding a space (not an RFC 6750 b64token)
  none       404, an instance without a service account
  error      500
A request without the header Metadata-Flavor: Google is answered 403, as the real server
does, whatever the mode. Each request appends a line to --log: the path and the
Metadata-Flavor header it carried.
"""
import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import serverutil

TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
TOKEN = "ya29.stand-in_token-0123456789"


def answer_for(mode):
    """The status and body that MODE calls for."""
    token = {"access_token": TOKEN, "expires_in": 3599, "token_type": "Bearer"}
    if mode == "token":
        return 200, json.dumps(token)
    if mode == "garbage":
        return 200, "<html><body>Sign in to the network</body></html>"
    if mode == "basic":
        return 200, json.dumps(dict(token, token_type="Basic"))
    if mode == "spaces":
        return 200, json.dumps(dict(token, access_token="ya29 with spaces"))
    if mode == "none":
        return 404, "Not Found"
    return 500, "Internal Server Error"


def handler_for(args):
    """The request handler class, bound to ARGS."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *a):
            pass

        def do_GET(self):
            flavor = self.headers.get("Metadata-Flavor")
            with open(args.log, "a", encoding="utf-8") as log:
                log.write(json.dumps({"path": self.path, "flavor": flavor}) + "\n")
            if flavor != "Google":
                status, body = 403, "Missing Metadata-Flavor:Google header."
            elif self.path != TOKEN_PATH:
                status, body = 404, "Not Found"
            else:
                with open(args.mode_file, encoding="utf-8") as f:
                    status, body = answer_for(f.read().split()[0])
            data = body.encode()
            self.send_response(status)
            self.send_header("Metadata-Flavor", "Google")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port-file", required=True)
    p.add_argument("--mode-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--lifetime", type=float, default=120)
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(args))
    serverutil.serve(server, args.port_file, args.lifetime)
    return 0


if __name__ == "__main__":
    sys.exit(main())
