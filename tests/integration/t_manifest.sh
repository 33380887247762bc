# daemonset-preloaded.yaml: valid against the Kubernetes schemas (offline, kubernetes-models),
# with the scheduling, tolerations, privilege, mounts and env the issue asks for, and every
# flag and variable it passes accepted by the binary's own parser (the config command).
command -v node >/dev/null || fail "node is needed (scripts/deps.sh installs nodejs)"
(cd "$SRC/tests/k8s" && { [ -d node_modules/kubernetes-models ] || npm ci --no-audit --no-fund --silent; })
check() { node "$SRC/tests/k8s/check-manifest.mjs" "$1"; }
check "$SRC/daemonset-preloaded.yaml" >"$T/manifest.json"
cat "$T/manifest.json"

# The binary parses exactly what the manifest gives it, and knows every variable.
python3 - "$T/manifest.json" >"$T/cmd" <<'PY'
import json, shlex, sys
m = json.load(open(sys.argv[1]))
assert m["args"][0] == "install", m["args"]
env = " ".join(shlex.quote("%s=%s" % kv) for kv in m["env"].items())
print("env -i PATH=/usr/bin:/bin %s \"$BIN\" config %s" % (env, " ".join(map(shlex.quote, m["args"][1:]))))
PY
set +e
eval "$(cat "$T/cmd")" >"$T/out" 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 0 "config under the manifest's env: $(cat "$T/err")"
python3 - "$T/out" "$T/manifest.json" <<'PY'
import json, sys
c, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert c["environment_unknown"] == [], c
assert sorted(c["environment_read"]) == sorted(m["env"]), (c["environment_read"], m["env"])
assert c["root"] == "/root" and c["log_format"] == "json", c
assert c["repos"] == [m["env"]["NVIDIA_DRIVER_REPO"]], c
PY

# The checks can fail: a misspelt variable, a lost Bidirectional, a missing toleration.
sed 's/NVIDIA_DRIVER_VERSION$/NVIDIA_DRIVR_VERSION/' "$SRC/daemonset-preloaded.yaml" >"$T/typo.yaml"
check "$T/typo.yaml" >"$T/typo.json"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(" ".join("%s=%s" % kv for kv in m["env"].items()))' \
    "$T/typo.json" >"$T/typo.env"
set +e
env -i PATH=/usr/bin:/bin $(cat "$T/typo.env") "$BIN" config >/dev/null 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 2 "a misspelt variable"
expect_err "unknown environment variable NVIDIA_DRIVR_VERSION"
sed 's/mountPropagation: Bidirectional/mountPropagation: HostToContainer/' \
    "$SRC/daemonset-preloaded.yaml" >"$T/noprop.yaml"
check "$T/noprop.yaml" >/dev/null 2>&1 && fail "HostToContainer passed the manifest check"
python3 - "$SRC/daemonset-preloaded.yaml" "$T/notol.yaml" <<'PY'
import sys
text = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(text.replace("        - operator: Exists\n", "", 1))
PY
check "$T/notol.yaml" >/dev/null 2>&1 && fail "a manifest without the catch-all toleration passed"
sed 's/priorityClassName: system-node-critical/priorityClassName: 5/; s/maxUnavailable: 1/maxUnavailable: {a: b}/' \
    "$SRC/daemonset-preloaded.yaml" >"$T/schema.yaml"
check "$T/schema.yaml" >/dev/null 2>&1 && fail "a schema violation passed"
true
