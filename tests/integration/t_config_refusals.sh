# The environment is validated where it is read, and `config` is install's pre-flight check:
# each refusal exits 2 and names the variable; config names every problem, not the first.
mkroot "$T/root"
good=(--repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem")
refused() { # WANT VAR=VALUE COMMAND...: exit 2 and WANT on stderr
    local want=$1 kv=$2
    shift 2
    set +e
    env "$kv" "$BIN" --root "$T/root" "$@" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
    assert_eq "$RC" 2 "$kv $*: $(cat "$T/err")"
    expect_err "$want"
}
# Booleans: only 1/0, true/false, yes/no.
refused "NVIDIA_SKIP_MODULES: 'on' is not 1/0, true/false or yes/no" NVIDIA_SKIP_MODULES=on install "${good[@]}"
refused "NVIDIA_SKIP_VERIFY: 'enabled'" NVIDIA_SKIP_VERIFY=enabled config "${good[@]}"
# An empty required path is refused, never replaced by the default.
for v in ROOT_MOUNT_DIR NVIDIA_INSTALL_DIR_HOST NVIDIA_CACHE_DIR; do
    refused "$v is set but empty" "$v=" install "${good[@]}"
done
# Numbers within their limits, written once (the table's).
refused "NVIDIA_FETCH_RETRIES: '101' is not a number from 0 to 100" NVIDIA_FETCH_RETRIES=101 status
# A drain on a node left schedulable cannot end: what it evicts comes back (kubectl drain
# and NVIDIA's drain_manager.go always cordon first).
NVIDIA_UPGRADE_CORDON=no refused \
    "(NVIDIA_UPGRADE_DRAIN): yes with --upgrade-cordon no cannot finish: the pods it evicts come back to the node while it is schedulable; set --upgrade-cordon yes, as kubectl drain always cordons" \
    NVIDIA_UPGRADE_DRAIN=yes config "${good[@]}"
# A DRA driver list the agent could not use: refused by config, and by an agent whose
# upgrades are off (the list is read only when they are on; a bad one is refused all the same).
refused "(NVIDIA_UPGRADE_DRA_DRIVERS): 'GPU.nvidia.com' is not a DRA driver's name" \
    NVIDIA_UPGRADE_DRA_DRIVERS=GPU.nvidia.com config "${good[@]}"
refused "(NVIDIA_UPGRADE_DRA_DRIVERS): the list ends with a comma" \
    NVIDIA_UPGRADE_DRA_DRIVERS=gpu.nvidia.com, agent --upgrades off --listen 127.0.0.1:0
assert_eq "$(grep -c DRA_DRIVERS "$T/err")" 1 "the refusal said once: $(cat "$T/err")"
# A relative file:// URL.
refused "repository 'file://relative/repo' is a relative file:// URL" NVIDIA_DRIVER_REPO=file://relative/repo install
# The registry options: a value of another word, and, at config, files that are not there.
refused "(NVIDIA_REGISTRY_GCE_METADATA): 'maybe' is not auto, yes or no" \
    NVIDIA_REGISTRY_GCE_METADATA=maybe install "${good[@]}"
refused "(NVIDIA_REGISTRY_AUTH): '$T/no-auth.json': No such file or directory" \
    NVIDIA_REGISTRY_AUTH="$T/no-auth.json" config "${good[@]}"
refused "(NVIDIA_REGISTRY_HOSTS): '$T/no-certs.d' is not a directory" \
    NVIDIA_REGISTRY_HOSTS="$T/no-certs.d" config "${good[@]}"
refused "'oci://h/Repo': the repository name 'Repo' has an upper-case letter" NVIDIA_DRIVER_REPO=oci://h/Repo config \
    --repo-key "$FIX/keys/pub.pem"
# install refuses a near miss of a known variable, and only warns about other unknown ones.
refused "unknown environment variable NVIDIA_DRIVER_VERSON; did you mean NVIDIA_DRIVER_VERSION?" \
    NVIDIA_DRIVER_VERSON=550 install "${good[@]}"
new_repo "$T/repo" "$V_NEW:default"
set +e
NVIDIA_FUTURE_KNOB=1 NVIDIA_VISIBLE_DEVICES=all NVIDIA_MIG_CONFIG_DEVICES=all NVIDIA_REQUIRE_CUDA=x \
    "$BIN" --root "$T/root" install "${good[@]}" --skip-modules --skip-verify --kernel-release "$KERNEL" \
    --dry-run >"$T/out" 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 0 "install with an unknown variable: $(cat "$T/err")"
expect_err "unknown environment variable ignored (variable=NVIDIA_FUTURE_KNOB)"
grep -q "NVIDIA_VISIBLE_DEVICES\|NVIDIA_MIG_\|NVIDIA_REQUIRE_" "$T/err" && fail "warned about the toolkit's variables"
# config refuses every unknown variable (the toolkit's excepted).
refused "unknown environment variable NVIDIA_FUTURE_KNOB" NVIDIA_FUTURE_KNOB=1 config "${good[@]}"
NVIDIA_VISIBLE_DEVICES=all NVIDIA_DISABLE_REQUIRE=1 "$BIN" --root "$T/root" config "${good[@]}" >/dev/null 2>"$T/err" ||
    fail "config refused the toolkit's variables: $(cat "$T/err")"

# config: every problem, each named, in one run.
mkdir -p "$T/keys"
printf -- '-----BEGIN PUBLIC KEY-----\nREPLACE-WITH-YOUR-REPOSITORY-PUBLIC-KEY\n-----END PUBLIC KEY-----\n' >"$T/keys/placeholder.pem"
set +e
env -i PATH=/usr/bin:/bin NVIDIA_DRIVER_REPO_KEY="$T/keys/placeholder.pem,$T/keys/absent.pem" \
    NVIDIA_MODULE_CERT="$T/keys/absent.crt" NVIDIA_MODULE_ARGS="nvidia.NVreg_X=1,nvidia-bogus.x=1,noequals" \
    NVIDIA_DRIVR_REPO=x "$BIN" --root "$T/root" config >"$T/out" 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 2 "config with many problems"
expect_err "no repository configured"
expect_err "NVIDIA_DRIVER_REPO_KEY): '$T/keys/placeholder.pem' is the manifest's placeholder, not a key"
expect_err "NVIDIA_DRIVER_REPO_KEY): repository key '$T/keys/absent.pem'"
expect_err "NVIDIA_MODULE_CERT): .*absent.crt"
expect_err "NVIDIA_MODULE_ARGS): 'nvidia-bogus.x=1' names 'nvidia_bogus', which is not in the set being loaded"
expect_err "NVIDIA_MODULE_ARGS): .*noequals"
expect_err "unknown environment variable NVIDIA_DRIVR_REPO; did you mean NVIDIA_DRIVER_REPO?"
expect_err "7 problem(s) in the configuration"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); assert c["module_args"][0] == "nvidia.NVreg_X=1", c' "$T/out"
# The same configuration, mended, passes.
"$BIN" --root "$T/root" config "${good[@]}" --module-cert "$FIX/keys/modkey.crt" \
    --module-arg nvidia.NVreg_X=1 >/dev/null 2>"$T/err" || fail "config refused a sound configuration: $(cat "$T/err")"
# The command line's list replaces the environment's, commas split as in the variable.
NVIDIA_HOST_MOUNT=/opt/a "$BIN" --root "$T/root" config "${good[@]}" --host-mount /opt/b,/opt/c >"$T/out" 2>/dev/null
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); assert c["host_mounts"] == ["/opt/b", "/opt/c"], c' "$T/out"
# mirror does not read NVIDIA_DRIVER_VERSION, nor says it does.
"$BIN" mirror --help | grep -- "--driver-version" | grepq NVIDIA_DRIVER_VERSION && fail "mirror advertises NVIDIA_DRIVER_VERSION"
true
