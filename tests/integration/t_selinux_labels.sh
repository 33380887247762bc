# SELinux labels on what containers read (installer/host/selinux.h): with the host's
# selinuxfs saying SELinux is on (a fake one: enforce, mls, context under the host root),
# every entry of the install dir (the dir, its links, the versions, the helpers the CDI spec
# names) carries system_u:object_r:container_file_t:s0 as security.selinux, a new version
# carries it before it is made current, a policy without levels gets the context without
# one, an entry relabelled behind our back is named by doctor (fail when enforcing, warn
# when permissive, the fix chcon or a re-run) and put back by the next install; a hard link
# in it to a host file (/etc/shadow) is left unlabelled, the host's file too, and doctor
# warns with the fix (remove it), while the installer's own links are labelled; without
# selinuxfs nothing is labelled and doctor says SELinux is disabled. The kernel's own answers
# (a policy that lacks the type, a confined process refused) are the VM's (tests/vm, selinux);
# that a staged version is labelled before it can be made current is test_selinux's.
FAKE_KERNEL=1
mkroot "$T/root" rhel 9.4 --gpu 10de:2330
mkkernel "$T/root"
echo "include /etc/ld.so.conf.d/*.conf" >"$T/root/etc/ld.so.conf"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
R="file://$T/repo"
D=$(idir)
CTX=system_u:object_r:container_file_t:s0
MCTX=system_u:object_r:modules_object_t:s0
doc() { expect_rc "$1" doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"; }
line() { grep -E "^\[$1 *\] $2" "$T/out" || fail "no [$1] '$2' line: $(cat "$T/out")"; }
# The entries of the install dir whose security.selinux is not $1 (none: "-"), or $2 for a
# version's drivers/ and what it holds (default: $1), one per line.
mislabelled() {
    python3 - "$D" "$1" "${2:-$1}" <<'EOF'
import os, re, sys
top, ctr, mod = sys.argv[1], sys.argv[2], sys.argv[3]
def label(p):
    try:
        return os.getxattr(p, "security.selinux", follow_symlinks=False).rstrip(b"\0").decode()
    except OSError:
        return "-"
out = [] if label(top) == ctr else [top]
for dp, dns, fns in os.walk(top):
    for n in dns + fns:
        p = os.path.join(dp, n)
        rel = os.path.relpath(p, top)
        want = mod if re.match(r"\.versions/[^/]+/drivers(/|$)", rel) else ctr
        if label(p) != want:
            out.append("%s (%s, not %s)" % (rel, label(p), want))
print("\n".join(out))
EOF
}

# No selinuxfs: nothing labelled.
expect_rc 0 install --repo "$R" $(kernel_args)
[ "$(mislabelled - | sed -n 1p)" = "" ] || fail "labels without SELinux: $(mislabelled - | sed -n 1,3p)"
doc 0
line ok "selinux +disabled: no labels needed"
! grep -q "selinux labels" "$T/out" || fail "a labels line without SELinux"

# SELinux enforcing, a policy with levels: the next run labels everything, and says so.
mkdir -p "$T/root/sys/fs/selinux"
echo 1 >"$T/root/sys/fs/selinux/enforce"
echo 1 >"$T/root/sys/fs/selinux/mls"
: >"$T/root/sys/fs/selinux/context"
expect_rc 0 install --repo "$R" $(kernel_args)
grep -q '"SELinux: what containers read is published with the container label".*"mode":"enforcing".*"label":"system_u:object_r:container_file_t:s0"' "$T/err" ||
    grep -q "SELinux: what containers read is published with the container label.*mode=enforcing.*label=$CTX" "$T/err" ||
    fail "no SELinux line in the log: $(grep -i selinux "$T/err")"
left=$(mislabelled "$CTX" "$MCTX")
[ -z "$left" ] || fail "not labelled $CTX: $left"
[ -x "$D/.helpers/nvidia-cdi-hook" ] || [ -n "$(ls "$D/.helpers")" ] || fail "no helpers to check"
# The selinuxfs context file was asked (the kernel answers EINVAL for an unknown type),
# the modules' context last.
[ "$(tr -d '\0' <"$T/root/sys/fs/selinux/context")" = "$MCTX" ] || fail "the policy was not asked: $(cat -v "$T/root/sys/fs/selinux/context")"
doc 0
line ok "selinux +enforcing; containers read what we publish as $CTX"
line ok "selinux labels +every entry of the install dir carries its label"

# Relabelled behind our back (restorecon with the host's file contexts, a copy): doctor
# names it and fails while enforcing, the fix a re-run or chcon; permissive only warns.
lib=$(cd "$D/lib64" && ls libcuda.so.* | sed -n 1p)
setfattr -h -n security.selinux -v "system_u:object_r:user_home_t:s0" "$D/.current/lib64/$lib"
setfattr -h -n security.selinux -v "system_u:object_r:container_file_t:s0:c1,c2" "$D/bin"
doc 9
line fail "selinux labels +2 of [0-9]+ entries of the install dir lack their label \($CTX; drivers/ $MCTX\): containers, and the kernel for drivers/, are refused them: .*(lib64/$lib is system_u:object_r:user_home_t:s0|bin is system_u:object_r:container_file_t:s0:c1,c2)"
grep -q "fix: re-run install (it labels them), or: chcon -R -h $CTX /home/kubernetes/bin/nvidia && chcon -R -h $MCTX /home/kubernetes/bin/nvidia/.versions/\*/drivers" "$T/out" ||
    fail "no fix for the labels: $(cat "$T/out")"
echo 0 >"$T/root/sys/fs/selinux/enforce"
doc 0
line ok "selinux +permissive"
line warn "selinux labels +2 of [0-9]+ entries .*: once enforcing, containers, and the kernel for drivers/, would be refused them"
echo 1 >"$T/root/sys/fs/selinux/enforce"
expect_rc 0 install --repo "$R" $(kernel_args)
left=$(mislabelled "$CTX" "$MCTX")
[ -z "$left" ] || fail "a re-run left these unlabelled: $left"
doc 0
line ok "selinux labels"

# A hard link in the install dir to a file of the host's (/etc/shadow): the installer made
# no such link, so the run labels neither it nor the host's file (containers may read what
# carries the container label), and doctor names it with the fix; the links the installer
# makes itself (a version's usr/bin/ to its bin/) carry the label, as every check above saw.
[ "$(find "$D/.versions" -path '*/usr/bin/*' -type f -links +1 | wc -l)" -gt 0 ] ||
    fail "no hard link of the installer's own to check: $(ls -lR "$D/.current/" | sed -n 1,20p)"
printf 'root:*:19000:0:99999:7:::\n' >"$T/root/etc/shadow"
setfattr -h -n security.selinux -v system_u:object_r:shadow_t:s0 "$T/root/etc/shadow"
ln "$T/root/etc/shadow" "$D/.current/lib64/libshadow.so.1"
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "a hard link to a file that is not the installer's is left unlabelled (containers must not read it): remove it (path=lib64/libshadow.so.1 entries=1)"
shadow=$(getfattr --only-values -h -n security.selinux "$T/root/etc/shadow" | tr -d '\0')
[ "$shadow" = system_u:object_r:shadow_t:s0 ] || fail "the host's /etc/shadow was labelled $shadow through a hard link in the install dir"
left=$(mislabelled "$CTX" "$MCTX" | grep -v "lib64/libshadow.so.1 " || true)
[ -z "$left" ] || fail "not labelled $CTX beside the foreign link: $left"
doc 0
line warn "selinux links +1 entry of the install dir is a hard link to a file that is not the installer's, left unlabelled: .*lib64/libshadow.so.1"
grep -q "fix: remove it: the installer makes no such link, and containers must not read the file it names" "$T/out" ||
    fail "no fix for the foreign link: $(cat "$T/out")"
line ok "selinux labels"
rm "$D/.current/lib64/libshadow.so.1"
doc 0
! grep -q "selinux links" "$T/out" || fail "a links line without a foreign link: $(cat "$T/out")"

# An upgrade left pending (a process holds the driver): the staged version is labelled
# before it is ever current; then made current by the next run.
export NVIDIA_DRIVER_REPO=$R NVIDIA_DRIVER_REPO_KEY=$FIX/keys/pub.pem
leave_pending "$V_NEW"
staged=$(cd "$D/.versions" && ls -d "$V_NEW"-*)
[ "$(readlink "$D/.current")" != ".versions/$staged" ] || fail "the pending version is current"
left=$(mislabelled "$CTX" "$MCTX")
[ -z "$left" ] || fail "the staged version is not labelled: $left"
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
[ "$(installed_version)" = "$V_NEW" ] || fail "not upgraded: $(installed_version)"
left=$(mislabelled "$CTX" "$MCTX")
[ -z "$left" ] || fail "the upgrade left these unlabelled: $left"

# A policy without levels (no MCS): the context has none.
echo 0 >"$T/root/sys/fs/selinux/mls"
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
left=$(mislabelled system_u:object_r:container_file_t system_u:object_r:modules_object_t)
[ -z "$left" ] || fail "not relabelled without a level: $left"
