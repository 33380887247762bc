# CDI spec directories and files judged by what they resolve to, not by their names:
#   --cdi-dir /run/cdi on a host where /var/run links to /run (every systemd host), and
#     /var/run/cdi/ with its slash: the spec the runtimes read in /var/run/cdi is ours,
#     so re-runs keep it, status names no conflict, --cdi-replace sets nothing aside and
#     uninstall puts nothing back;
#   another producer's spec that is a link (nvidia-ctk's, kept elsewhere, linked into
#     /etc/cdi) is found as the CDI library finds it: ours is withdrawn, status names
#     theirs, --cdi-replace sets the link aside and uninstall puts back that and only that;
#   what no runtime reads as a spec (a FIFO, a link to one) holds nothing up.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
mkdir -p "$T/root/run" "$T/root/var" "$T/root/etc/cdi" "$T/root/opt/ctk"
ln -s /run "$T/root/var/run"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
spec="$T/root/run/cdi/nvidia-driver-installer.json"
hook=/home/kubernetes/bin/nvidia/.helpers/nvidia-cdi-hook
aside=.replaced-by-nvidia-driver-installer

conflict() {
    expect_rc 0 status --json "$@"
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cdi_conflict"])' "$T/out"
}

# Three runs, each way of naming the directory: the spec stays, no conflict is seen.
for dir in /run/cdi /var/run/cdi/ /run/cdi; do
    expect_rc 0 install --repo "$R" $(kernel_args) --cdi-dir "$dir"
    grep -q "another producer" "$T/err" && fail "--cdi-dir $dir: our own spec taken for another's: $(cat "$T/err")"
    [ -f "$spec" ] || fail "--cdi-dir $dir: no spec after the run"
    assert_eq "$(conflict --cdi-dir "$dir")" None "status cdi_conflict with --cdi-dir $dir"
done
# --cdi-replace finds nothing to set aside; uninstall leaves no spec naming the hook it removed.
expect_rc 0 install --repo "$R" $(kernel_args) --cdi-dir /run/cdi --cdi-replace
grep -q "set aside" "$T/err" && fail "--cdi-replace set our own spec aside: $(cat "$T/err")"
ls "$T/root/run/cdi" | grepq -- "$aside" && fail "something set aside: $(ls "$T/root/run/cdi")"
expect_rc 0 uninstall --cdi-dir /run/cdi
[ -z "$(ls -A "$T/root/run/cdi")" ] || fail "uninstall left or put back: $(ls -A "$T/root/run/cdi")"

# Not specs: a FIFO, and a link to one. Nothing waits on them, nothing takes them for a conflict.
mkfifo "$T/root/etc/cdi/fifo.json" "$T/root/opt/ctk/fifo"
ln -s /opt/ctk/fifo "$T/root/etc/cdi/to-fifo.yaml"
expect_rc 0 install --repo "$R" $(kernel_args) --cdi-dir /run/cdi
[ -f "$spec" ] || fail "no spec beside a FIFO"
grep -q "another producer" "$T/err" && fail "a FIFO taken for a spec: $(cat "$T/err")"

# nvidia-ctk's spec, kept elsewhere and linked into /etc/cdi: the runtime reads it, so do we.
cat >"$T/root/opt/ctk/nvidia.yaml" <<'YAML'
---
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    deviceNodes:
    - path: /dev/nvidia0
YAML
ln -s /opt/ctk/nvidia.yaml "$T/root/etc/cdi/nvidia.yaml"
expect_rc 0 install --repo "$R" $(kernel_args) --cdi-dir /run/cdi
expect_err "another producer's CDI spec declares our kind: not writing ours"
expect_err "spec=/etc/cdi/nvidia.yaml"
[ ! -e "$spec" ] || fail "our spec stayed beside a linked spec of our kind"
assert_eq "$(conflict --cdi-dir /run/cdi)" /etc/cdi/nvidia.yaml "status cdi_conflict"
# --cdi-replace sets the link aside (their file stays where it is); ours serves the kind.
expect_rc 0 install --repo "$R" $(kernel_args) --cdi-dir /run/cdi --cdi-replace
expect_err "another producer's CDI spec set aside"
[ -L "$T/root/etc/cdi/nvidia.yaml$aside" ] && [ -f "$T/root/opt/ctk/nvidia.yaml" ] ||
    fail "set aside: $(ls -la "$T/root/etc/cdi")"
[ -f "$spec" ] || fail "no spec of ours after --cdi-replace"
# A spec set aside by an earlier installer, of no record: named by uninstall, not put back.
echo "kind: nvidia.com/gpu" >"$T/root/etc/cdi/old.yaml$aside"
expect_rc 0 uninstall --cdi-dir /run/cdi
assert_eq "$(readlink "$T/root/etc/cdi/nvidia.yaml")" /opt/ctk/nvidia.yaml "their link, put back"
[ ! -e "$T/root/etc/cdi/old.yaml" ] || fail "an unrecorded spec was put back"
expect_err "a CDI spec set aside stays set aside"
expect_err "spec=/etc/cdi/old.yaml$aside"
[ ! -e "$spec" ] || fail "our spec left after uninstall"
grep -rqs "$hook" "$T/root/etc/cdi" "$T/root/run/cdi" && fail "a spec naming the removed hook is left"
true
