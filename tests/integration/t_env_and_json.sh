# The DaemonSet configures by environment; --log-format json gives one JSON object a line.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_OLD" "$V_NEW:default"
start_httpd "$T/srv"
dead="http://127.0.0.1:$(dead_port)/repo"
set +e
ROOT_MOUNT_DIR="$T/root" NVIDIA_DRIVER_REPO="$dead, $HTTP/repo" \
    NVIDIA_DRIVER_REPO_KEY="$FIX/keys/other-pub.pem,$FIX/keys/pub.pem" \
    NVIDIA_DRIVER_VERSION="$V_OLD" NVIDIA_INSTALL_DIR_HOST=/opt/nvidia \
    NVIDIA_CACHE_DIR=/var/cache/ndi NVIDIA_KERNEL_RELEASE="$KERNEL" NVIDIA_SKIP_MODULES=true \
    NVIDIA_FETCH_RETRIES=1 NVIDIA_INSTALLER_LOG_FORMAT=json \
    "$BIN" install >"$T/out" 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 0 "install configured by environment"
[ -x "$T/root/opt/nvidia/bin/nvidia-smi" ] || fail "NVIDIA_INSTALL_DIR_HOST ignored"
ls "$T/root/var/cache/ndi/packages/"*.pkg >/dev/null || fail "NVIDIA_CACHE_DIR ignored"
python3 - "$T/err" "$V_OLD" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines, "no log"
for l in lines:
    assert {"ts", "level", "stage", "msg"} <= set(l), l
done = [l for l in lines if l["msg"] == "driver installed"]
assert done and done[0]["version"] == sys.argv[2] and isinstance(done[0]["duration_ms"], int), done
PY
# Command-line options override the environment.
ROOT_MOUNT_DIR="$T/root" NVIDIA_INSTALL_DIR_HOST=/opt/nvidia "$BIN" status --install-dir /nowhere \
    >/dev/null 2>&1 && fail "--install-dir did not override the environment"
# Errors in JSON mode are JSON too, with the fix and the exit code.
set +e
ROOT_MOUNT_DIR="$T/root" "$BIN" --log-format json install --repo "file://$T/none" \
    --repo-key "$FIX/keys/pub.pem" --skip-modules --fetch-retries 0 --cache-dir /x 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 4 "json error exit"
python3 -c '
import json, sys
l = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert l["level"] == "error" and l["exit_code"] == 4 and l["fix"], l' "$T/err"
