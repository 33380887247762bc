# plain build: the manifests' variables against the binary's option table and parser
# Every variable both manifests give the installer and the agent, the ones they offer
# commented out included (tests/k8s/check-manifest.mjs --env takes them in), is an option of
# the binary (--help-options) for that command; one offered commented out shows the binary's
# default (where it has one), so that uncommenting it changes nothing; and the binary's own
# parser takes each container's whole set (the config command: no unknown variable, every
# value valid). Broken once each: a misspelt optional variable, a default that is not the
# binary's, a value the parser refuses.
command -v node >/dev/null || fail "node is needed (scripts/deps.sh installs nodejs)"
k8s_node_modules
"$BIN" --help-options >"$T/options.tsv"
# The files and directories the variables name are the pod's (ConfigMap, Secret, host
# paths): stand-ins here, of the kind the parser checks (a key, a certificate, a directory).
cp "$FIX/keys/pub.pem" "$T/repo.pem"
cp "$FIX/keys/modkey.crt" "$T/cert.crt"
mkdir -p "$T/dir"

# envcheck PROFILE FILE: the checks above on FILE; the first problem on stderr, exit 1.
envcheck() {
    node "$SRC/tests/k8s/check-manifest.mjs" "$1" "$2" --env >"$T/env.json" || return 1
    python3 - "$T/env.json" "$T/options.tsv" "$BIN" "$T" <<'PY'
import json, subprocess, sys
env_json, tsv, binary, scratch = sys.argv[1:]
options = {}
for line in open(tsv, encoding="utf-8"):
    name, arg, var, default, kind, cmds, *_ = line.rstrip("\n").split("\t")
    if var:
        options[var] = dict(name=name, arg=arg, default=default, kind=kind, cmds=set(cmds.split(",")))
BOOL = {"off": "no", "on": "yes"}
for ds in json.load(open(env_json))["daemonsets"]:
    for cmd in ("install", "agent"):
        env = ds[cmd]
        for var, e in env.items():
            if not var.startswith("NVIDIA_"):
                continue
            where = "%s: %s's %s" % (ds["name"], cmd, var)
            o = options.get(var)
            if o is None:
                sys.exit("%s is no option of the binary" % where)
            # The agent hands its environment to the installer it runs for an upgrade.
            if not o["cmds"] & ({"install"} if cmd == "install" else {"agent", "install"}):
                sys.exit("%s is not an option of %s (only %s)" % (where, cmd, ",".join(sorted(o["cmds"]))))
            d = o["default"]
            if e["optional"] and d.startswith("`") and d.endswith("`") and e["value"] != d.strip("`"):
                sys.exit("%s is offered as %r, not the binary's default %s" % (where, e["value"], d))
            if e["optional"] and o["kind"] == "bool" and d in BOOL and e["value"] != BOOL[d]:
                sys.exit("%s is offered as %r, not the binary's default %s" % (where, e["value"], d))
        given = {k: v["value"] for k, v in env.items()}
        for var in given:
            arg = options.get(var, {}).get("arg")
            if arg == "FILE" and var.endswith("_KEY"):
                given[var] = scratch + "/repo.pem"
            elif arg == "FILE" and var.endswith("_CERT"):
                given[var] = scratch + "/cert.crt"
            elif arg == "DIR" and var != "ROOT_MOUNT_DIR":
                given[var] = scratch + "/dir"
        given["PATH"] = "/usr/bin:/bin"
        given["NVIDIA_INSTALLER_LOG_FORMAT"] = "text"
        r = subprocess.run([binary, "config"], env=given, capture_output=True, text=True)
        if r.returncode != 0:
            err = [l for l in r.stderr.splitlines() if l.startswith("ERROR")]
            sys.exit("%s: %s's variables: config exit %d: %s" % (ds["name"], cmd, r.returncode, err))
        unknown = json.loads(r.stdout)["environment_unknown"]
        if unknown:
            sys.exit("%s: %s's unknown variables %s" % (ds["name"], cmd, unknown))
PY
}
envcheck gke "$SRC/daemonset-preloaded.yaml" 2>"$T/err" || fail "daemonset-preloaded.yaml: $(cat "$T/err")"
envcheck generic "$SRC/daemonset-generic.yaml" 2>"$T/err" || fail "daemonset-generic.yaml: $(cat "$T/err")"
# The new options are offered, where the docs send readers to them.
for v in NVIDIA_NODE_CONDITION NVIDIA_CONDITION_HEARTBEAT NVIDIA_STARTUP_TAINT NVIDIA_HEALTH_TAINT \
    NVIDIA_UPGRADE_WAIT_FOR NVIDIA_UPGRADE_DRAIN NVIDIA_UPGRADE_MAX_UNAVAILABLE; do
    node "$SRC/tests/k8s/check-manifest.mjs" generic "$SRC/daemonset-generic.yaml" --env |
        python3 -c 'import json,sys; d=json.load(sys.stdin)["daemonsets"][0]["agent"]; sys.exit(sys.argv[1] not in d)' "$v" ||
        fail "the generic manifest's agent does not offer $v"
done

# Broken once each.
edit() {
    python3 -c 'import sys; t = open(sys.argv[1]).read(); assert sys.argv[2] in t, sys.argv[2]
open(sys.argv[4], "w").write(t.replace(sys.argv[2], sys.argv[3], 1))' "$@"
}
rejects() { # FILE MESSAGE WHAT
    ! envcheck generic "$1" 2>"$T/err" || fail "$3 passed"
    grep -qF "$2" "$T/err" || fail "$3 refused for another reason: $(cat "$T/err")"
    echo "REJECT $3: $(cat "$T/err")" >&2
}
edit "$SRC/daemonset-generic.yaml" "# - name: NVIDIA_UPGRADE_DRAIN_TIMEOUT" \
    "# - name: NVIDIA_UPGRADE_DRAIN_TIMOUT" "$T/typo.yaml"
rejects "$T/typo.yaml" "agent's NVIDIA_UPGRADE_DRAIN_TIMOUT is no option of the binary" "a misspelt optional variable"
edit "$SRC/daemonset-generic.yaml" "# - name: NVIDIA_CONDITION_HEARTBEAT
            #   value: \"60\"" "# - name: NVIDIA_CONDITION_HEARTBEAT
            #   value: \"30\"" "$T/default.yaml"
rejects "$T/default.yaml" "NVIDIA_CONDITION_HEARTBEAT is offered as '30', not the binary's default" "another default"
edit "$SRC/daemonset-generic.yaml" "#   value: app=checkpointer" "#   value: app in (" "$T/value.yaml"
rejects "$T/value.yaml" "agent's variables: config exit 2" "a selector the parser refuses"
