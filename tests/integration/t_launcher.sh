# The driver's programs run with no environment wherever the install dir is reached: GKE's
# device plugin mounts it at /usr/local/nvidia in the pod and adds no LD_LIBRARY_PATH
# (GoogleCloudPlatform/container-engine-accelerators: cmd/nvidia_gpu/nvidia_gpu.go, flags
# host-path and container-path; pkg/gpu/nvidia/manager.go, Envs(): MPS variables only), and
# NVIDIA's nvidia-smi, like the stand-in's, loads libnvidia-ml.so.1 by name with no RUNPATH.
# Each dynamically linked program of bin/ becomes the installer's static launcher, and the
# program itself, byte for byte, moves to bin/.real/; scripts, static programs, files without
# an execute bit and links stay. The launcher puts the version's lib64 first on
# LD_LIBRARY_PATH, keeps the caller's value after it, and changes nothing else.
mkroot "$T/root"
cp -a "$FIX/drv-$V_NEW" "$T/drv"
cat >"$T/show-env.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	const char *v = getenv("LD_LIBRARY_PATH");
	(void)argc;
	printf("argv0=%s\nLD_LIBRARY_PATH=%s\nnvml=%s\nLD_PRELOAD=%s\n", argv[0], v ? v : "(unset)",
	       dlopen("libnvidia-ml.so.1", RTLD_NOW) ? "found" : "missing",
	       getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "(unset)");
	return 3;
}
EOF
cc -O1 -o "$T/drv/bin/show-env" "$T/show-env.c" -ldl
echo 'int main(void) { return 0; }' >"$T/static.c"
cc -static -O1 -o "$T/drv/bin/static-tool" "$T/static.c"
printf '#!/bin/sh\necho script\n' >"$T/drv/bin/tool.sh"
chmod 755 "$T/drv/bin/tool.sh"
install -m 0644 "$T/drv/bin/show-env" "$T/drv/bin/not-executable"
ln -s nvidia-smi "$T/drv/bin/smi-link"
"$SRC/scripts/make-repo" pack "$T/drv" "$T/pkg.tar.zst"
mkdir -p "$T/repo"
"$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$KERNEL" --tag default "$T/pkg.tar.zst" >/dev/null
expect_rc 0 install --repo "file://$T/repo" $(install_args)
d=$(idir)
v=$(realpath "$d/.current")

# No environment at all, from the root and from another directory, by the top-level link,
# by the version's own path and by a relative path: it runs and finds libnvidia-ml.
for p in "$d/bin/nvidia-smi" "$v/bin/nvidia-smi" "$d/bin/smi-link"; do
    (cd / && env -i "$p") >"$T/smi" 2>&1 || fail "$p: exit $?: $(cat "$T/smi")"
    grep -q "Driver Version: $V_NEW" "$T/smi" || fail "$p: $(cat "$T/smi")"
done
mkdir -p "$T/elsewhere"
(cd "$T/elsewhere" && env -i ../root/$IDIR_REL/bin/nvidia-smi) | grepq "Driver Version: $V_NEW" ||
    fail "nvidia-smi by a relative path"
(cd "$d/bin" && env -i ./nvidia-smi) | grepq "Driver Version: $V_NEW" || fail "./nvidia-smi"

# LD_LIBRARY_PATH: the version's lib64 alone, or first before the caller's; argv[0] and the
# rest of the environment as given; the program's own exit status.
env_of() {
    local rc=0
    (cd "$T/elsewhere" && env -i "$@") >"$T/env" 2>&1 || rc=$?
    assert_eq "$rc" 3 "show-env's exit status"
}
env_of "$d/bin/show-env"
assert_eq "$(sed -n 's/^LD_LIBRARY_PATH=//p' "$T/env")" "$v/lib64" "LD_LIBRARY_PATH, none given"
grep -qx "nvml=found" "$T/env" || fail "libnvidia-ml not found: $(cat "$T/env")"
grep -qx "argv0=$d/bin/show-env" "$T/env" || fail "argv[0] changed: $(cat "$T/env")"
env_of LD_LIBRARY_PATH=/opt/own LD_PRELOAD=/opt/pre.so "$d/bin/show-env"
assert_eq "$(sed -n 's/^LD_LIBRARY_PATH=//p' "$T/env")" "$v/lib64:/opt/own" "LD_LIBRARY_PATH, caller's kept"
grep -qx "LD_PRELOAD=/opt/pre.so" "$T/env" || fail "LD_PRELOAD changed: $(cat "$T/env")"
env_of LD_LIBRARY_PATH= "$d/bin/show-env"
assert_eq "$(sed -n 's/^LD_LIBRARY_PATH=//p' "$T/env")" "$v/lib64" "LD_LIBRARY_PATH, empty given"

# The files: originals byte for byte under bin/.real, the launcher in their place, the rest
# as packed.
launcher=$(dirname "$BIN")/libexec/nvidia-driver-installer/launcher
for f in nvidia-smi show-env; do
    cmp "$T/drv/bin/$f" "$v/bin/.real/$f" || fail "bin/.real/$f is not NVIDIA's file"
    cmp "$launcher" "$v/bin/$f" || fail "bin/$f is not the launcher"
    assert_eq "$(stat -c %a "$v/bin/$f")" 755 "bin/$f mode"
done
for f in static-tool tool.sh not-executable; do
    cmp "$T/drv/bin/$f" "$v/bin/$f" || fail "bin/$f was changed"
    [ ! -e "$v/bin/.real/$f" ] || fail "bin/$f was wrapped"
done
assert_eq "$(readlink "$v/bin/smi-link")" nvidia-smi "bin/smi-link"
assert_eq "$(ls -A "$v/bin/.real" | tr '\n' ' ')" "nvidia-smi show-env " "bin/.real"
assert_eq "$(stat -c %a "$v/bin/.real")" 755 "bin/.real mode"

# A re-run changes nothing (the launcher is static: never wrapped twice).
before=$(snapshot "$v")
expect_rc 0 install --repo "file://$T/repo" $(install_args)
assert_eq "$(snapshot "$v")" "$before" "the version after a re-run"

# As in a GKE pod: the install dir bind-mounted at /usr/local/nvidia in a root of its own
# (the host's libc and loader only), no environment; with /proc, then without it (a chroot
# into a host root, as the GPU Operator's validator makes, may lack one).
unshare -m bash -c '
    set -e
    T=$1 d=$2
    c=$T/ctr ch=$(command -v chroot)
    mkdir -p "$c/usr/local/nvidia" "$c/proc" "$c/lib64" "$c/lib/x86_64-linux-gnu"
    mount --bind "$d" "$c/usr/local/nvidia"
    cp -L /lib64/ld-linux-x86-64.so.2 "$c/lib64/"
    cp -L /lib/x86_64-linux-gnu/libc.so.6 "$c/lib/x86_64-linux-gnu/"
    env -i "$ch" "$c" /usr/local/nvidia/bin/nvidia-smi >"$T/pod-noproc" 2>&1 || echo "exit $?" >>"$T/pod-noproc"
    mount --rbind /proc "$c/proc"
    env -i "$ch" "$c" /usr/local/nvidia/bin/nvidia-smi >"$T/pod" 2>&1 || echo "exit $?" >>"$T/pod"
    env -i LD_LIBRARY_PATH=/opt/own "$ch" "$c" /usr/local/nvidia/bin/show-env >"$T/pod-env" 2>&1 || true
' _ "$T" "$d"
grep -q "Driver Version: $V_NEW" "$T/pod" || fail "nvidia-smi in the pod: $(cat "$T/pod")"
grep -q "Driver Version: $V_NEW" "$T/pod-noproc" || fail "nvidia-smi without /proc: $(cat "$T/pod-noproc")"
vid=$(basename "$v")
assert_eq "$(sed -n 's/^LD_LIBRARY_PATH=//p' "$T/pod-env")" \
    "/usr/local/nvidia/.versions/$vid/lib64:/opt/own" "LD_LIBRARY_PATH in the pod"

# The program gone: one line naming it, exit 127 (as a shell says "not found").
rm "$v/bin/.real/show-env"
set +e
env -i "$d/bin/show-env" >"$T/out" 2>"$T/err"
rc=$?
set -e
assert_eq "$rc" 127 "exit status without the program"
assert_eq "$(cat "$T/err")" \
    "$d/bin/show-env: $v/bin/.real/show-env is missing: this is the driver's launcher, which runs the program kept in .real/ beside it; mount the install dir's bin/ whole, or the program itself from its usr/bin/" \
    "the launcher's message"

# At a path longer than PATH_MAX (reached by a relative path from deep inside, as a deep
# mount can be): one line saying so, exit 126, and not that /proc is missing, which it is
# not (the kernel refuses to show /proc/self/exe for such a path).
long=$(printf 'd%.0s' $(seq 250))
(
    mkdir "$T/deep" && cd "$T/deep"
    for _ in $(seq 17); do mkdir "$long" && cd "$long"; done
    cp -a "$v" ver
    set +e
    env -i ./ver/bin/nvidia-smi >"$T/out" 2>"$T/err"
    echo $? >"$T/rc"
)
assert_eq "$(cat "$T/rc")" 126 "exit status at a path past PATH_MAX"
assert_eq "$(cat "$T/err")" \
    "./ver/bin/nvidia-smi: its own path is longer than the 4095 bytes a path may have (PATH_MAX): reach the driver's install dir by a shorter path" \
    "the launcher's message at a path past PATH_MAX"
rm -rf "$T/deep"

# A package with a bin/.real of its own is refused (exit 5); an installer without its
# launcher beside it says where it looked (exit 1). Neither publishes anything.
cp -a "$FIX/drv-$V_OLD" "$T/drv2"
mkdir "$T/drv2/bin/.real"
cp "$T/drv2/bin/nvidia-smi" "$T/drv2/bin/.real/"
"$SRC/scripts/make-repo" pack "$T/drv2" "$T/pkg2.tar.zst"
mkdir -p "$T/repo2"
"$SRC/scripts/make-repo" add --repo "$T/repo2" --key "$FIX/keys/key.pem" --version "$V_OLD" \
    --kernel "$KERNEL" --tag default "$T/pkg2.tar.zst" >/dev/null
expect_rc 5 install --repo "file://$T/repo2" $(install_args)
expect_err "package has 'bin/.real', a name the installer keeps for the driver's programs"
mkdir -p "$T/lonely"
cp "$BIN" "$T/lonely/"
new_repo "$T/repo3" "$V_OLD:default"
BIN=$T/lonely/$(basename "$BIN") expect_rc 1 install --repo "file://$T/repo3" $(install_args)
expect_err "helpers: no $T/lonely/libexec/nvidia-driver-installer or $T/lonely/../libexec/nvidia-driver-installer: the installer's image is incomplete"
expect_err "fix: ship the build's libexec/nvidia-driver-installer beside the binary"
assert_eq "$(installed_version)" "$V_NEW" "the installed version after both refusals"
