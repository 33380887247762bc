# make-repo switches index.json and index.json.sig together, by one rename of the link both
# go through (repository-format.md, "Publishing"), but a node asks for them one after the
# other. Here a publish falls between the two requests: the server publishes a new driver
# when it is asked for the signature, then answers with the new signature. The node, which
# read the index from before, reads it again and takes the new pair whole; it never judges
# an index beside another index's signature (without the second read: exit 5, "signature
# does not verify").
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_OLD"
"$SRC/scripts/make-repo" stage --to "$T/stage" --version "$V_NEW" --kernel "$KERNEL" \
    "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
cat >"$T/server.py" <<'PY'
import os, subprocess, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
sys.path.insert(0, os.path.join(os.environ["SRC"], "tests", "tools"))
import serverutil
T = os.environ["T"]
published = []

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        if self.path == "/repo/index.json.sig" and not published:
            published.append(subprocess.run(
                [os.path.join(os.environ["SRC"], "scripts", "make-repo"), "publish", "--repo",
                 T + "/srv/repo", "--key", os.environ["KEY"], T + "/stage"],
                stdout=subprocess.DEVNULL).returncode)
        with open(T + "/requests", "a") as f:
            f.write("%s %s\n" % (self.path, published))
        try:
            with open(T + "/srv" + self.path, "rb") as f:
                body = f.read()
        except FileNotFoundError:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

serverutil.serve(ThreadingHTTPServer(("127.0.0.1", 0), Handler), T + "/port", 120)
PY
SRC=$SRC T=$T KEY=$FIX/keys/key.pem python3 "$T/server.py" &
wait_for "the server to write its port" 60 test -s "$T/port"
url="http://127.0.0.1:$(cat "$T/port")/repo"

expect_rc 0 list-versions --repo "$url" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_err "the index changed while it was read; judging the new one"
expect_out "^$V_NEW "
expect_out "^$V_OLD "
assert_eq "$(cat "$T/requests")" "/repo/index.json []
/repo/index.json.sig [0]
/repo/index.json [0]" "the requests"
