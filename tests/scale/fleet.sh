#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A simulated node-pool scale-up: N installers at once (default 64), each with its own host
# root, against one server on 127.0.0.1 with limited bandwidth and a share of requests
# failing at random (503s and TCP resets halfway through a body). Every installer must
# finish with a whole install. Prints, and writes to OUT.json: retries, the spread of
# finishing times, peak concurrent requests, and how jitter spread the first retries.
#
#   tests/scale/fleet.sh BINARY [N] [FAIL_RATE] [RATE_MIB_S] [OUT.json]
set -euo pipefail
export PATH="/usr/bin:/bin:$PATH"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
BIN=$(realpath "${1:?usage: fleet.sh BINARY [N] [FAIL_RATE] [RATE_MIB_S] [OUT.json]}")
N=${2:-64}
FAIL=${3:-0.10}
RATE=${4:-32}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${5:-$SRC/build/fleet.json}
W=$(mktemp -d /tmp/ndi-fleet.XXXXXX)
trap 'rm -rf "$W"; kill $(jobs -p) 2>/dev/null || true' EXIT
V=550.90.07
KERNEL=6.1.0-57-amd64

# One repository: a stand-in driver with 2 MiB of incompressible firmware.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/key.pem" 2>/dev/null
openssl pkey -in "$W/key.pem" -pubout -out "$W/pub.pem"
"$SRC/scripts/make-standin-driver" "$V" "$W/drv" 1024 >/dev/null
"$SRC/scripts/make-repo" pack "$W/drv" "$W/pkg.tar.zst"
"$SRC/scripts/make-repo" add --repo "$W/srv/repo" --key "$W/key.pem" --version "$V" \
    --kernel "$KERNEL" --tag default "$W/pkg.tar.zst" >/dev/null
size=$(stat -c %s "$W/pkg.tar.zst")

python3 "$SRC/tests/tools/httpd.py" --dir "$W/srv" --port-file "$W/port" --log "$W/http.log" \
    --lifetime 600 --rate $((RATE * 1048576)) --fail-rate "$FAIL" --seed 7 &
for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.05; done
URL="http://127.0.0.1:$(cat "$W/port")/repo"

for i in $(seq "$N"); do
    mkdir -p "$W/node$i/etc"
    printf 'ID=cos\nVERSION_ID=117\nBUILD_ID=17800.66.78\n' >"$W/node$i/etc/os-release"
done
t0=$(date +%s%N)
pids=()
for i in $(seq "$N"); do
    (
        s=$(date +%s%N)
        set +e
        "$BIN" --root "$W/node$i" install --repo "$URL" --repo-key "$W/pub.pem" \
            --kernel-release "$KERNEL" --skip-modules --fetch-timeout 300 --fetch-retries 10 \
            2>"$W/node$i.err"
        echo "$? $(((s - t0) / 1000000)) $((($(date +%s%N) - t0) / 1000000))" >"$W/node$i.result"
    ) &
    pids+=($!)
done
wait "${pids[@]}"
wall=$((($(date +%s%N) - t0) / 1000000))

python3 - "$W" "$N" "$size" "$wall" "$FAIL" "$RATE" "$OUT" "$V" <<'PY'
import glob, json, os, re, statistics, sys
w, n, size, wall, fail, rate, out, version = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
    int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]), sys.argv[7], sys.argv[8]
ok, ends, retries, first_waits, bad = 0, [], 0, [], []
for i in range(1, n + 1):
    rc, start, end = map(int, open("%s/node%d.result" % (w, i)).read().split())
    err = open("%s/node%d.err" % (w, i)).read()
    smi = "%s/node%d/home/kubernetes/bin/nvidia/bin/nvidia-smi" % (w, i)
    whole = os.access(smi, os.X_OK) and os.popen(smi).read().find(version) >= 0
    if rc == 0 and whole:
        ok += 1
    else:
        bad.append("node%d: exit %d %s" % (i, rc, err.strip().splitlines()[-1:] or ""))
    ends.append(end)
    retries += len(re.findall(r"retry=yes\)", err))
    waits = [int(m) for m in re.findall(r"waiting before the next attempt \(ms=(\d+)\)", err)]
    if waits:
        first_waits.append(waits[0])
log = [json.loads(l) for l in open(w + "/http.log")]
served = sum(e["bytes"] for e in log if e["path"].endswith(".tar.zst"))
ends.sort()
res = {
    "installers": n, "succeeded": ok, "fail_rate": fail, "bandwidth_mib_s": rate,
    "package_bytes": size, "requests": len(log),
    "requests_503": sum(1 for e in log if e["status"] == 503),
    "retries": retries, "peak_concurrent_requests": max(e.get("active", 0) for e in log),
    "bytes_served": served, "bytes_fetched_twice": served - n * size,
    "finish_ms": {"first": ends[0], "median": int(statistics.median(ends)), "last": ends[-1]},
    "wall_ms": wall,
    "first_retry_wait_ms": ({"count": len(first_waits), "min": min(first_waits),
                             "max": max(first_waits), "stdev": int(statistics.pstdev(first_waits)),
                             "distinct": len(set(first_waits))} if first_waits else None),
}
os.makedirs(os.path.dirname(out), exist_ok=True)
json.dump(res, open(out, "w"), indent=2)
print("fleet: %d/%d installers finished with a whole install" % (ok, n))
print("fleet: %d requests, %d answered 503, %d retries in all; peak %d requests in flight" % (
    res["requests"], res["requests_503"], retries, res["peak_concurrent_requests"]))
print("fleet: %.1f MiB served for %.1f MiB of packages (%.1f MiB fetched twice after resets)" % (
    served / 2**20, n * size / 2**20, (served - n * size) / 2**20))
print("fleet: finished after %d ms (first), %d ms (median), %d ms (last)" % (
    ends[0], res["finish_ms"]["median"], ends[-1]))
if first_waits:
    print("fleet: first retry waited %d-%d ms (stdev %d ms, %d distinct values over %d installers):"
          " jitter spreads the retries instead of a synchronised wave" % (
              min(first_waits), max(first_waits), res["first_retry_wait_ms"]["stdev"],
              len(set(first_waits)), len(first_waits)))
for b in bad:
    print("fleet: FAILED " + b)
sys.exit(0 if ok == n else 1)
PY
