# serial: 64 installers at once against one throttled server: it takes both cores, and its figures are the machine's own
# plain build: its failures and retries run under ASan in t_faults, t_resume and t_mirror_failover; 64 ASan installers add only time
# A node pool scaling up: 64 installers at once against one server throttled to 32 MiB/s
# that fails 10% of requests at random (503s, resets mid-body). All finish with a whole
# install (tests/scale/fleet.sh checks each node's nvidia-smi); the figures are printed.
"$SRC/tests/scale/fleet.sh" "$BIN" 64 0.10 32 "$T/fleet.json"
python3 - "$T/fleet.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
assert f["succeeded"] == 64, f
assert f["retries"] > 0, "no fault was injected"
assert f["peak_concurrent_requests"] > 8, "the installers did not run at once"
PY
