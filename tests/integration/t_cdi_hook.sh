# The CDI hook against hostile images, run as the runtime runs it (the container's state on
# stdin, a bundle whose config.json names the root): a FIFO at /etc/ld.so.conf, and a link
# from it to /dev/zero, are refused at once; a file the configuration includes that never
# ends meets ldconfig's heap limit (a library bigger than it is still cached), one that
# blocks meets the hook's deadline
# (--timeout); the hook's end takes ldconfig with it; each ends with one line naming the
# cause. A plain image gets its ld cache. t_expose checks the spec's hook timeout.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args)
inst_dir="$T/root/home/kubernetes/bin/nvidia"
hook="$inst_dir/.helpers/nvidia-cdi-hook"
rootfs="$T/bundle/rootfs"
folder=/usr/local/nvidia/lib64

# A fresh image: the driver's libcuda where the spec mounts lib64, an /etc, a /dev/zero.
image() {
    rm -rf "$T/bundle"
    mkdir -p "$rootfs$folder" "$rootfs/etc/ld.so.conf.d" "$rootfs/dev"
    cp "$inst_dir/lib64/libcuda.so.1" "$rootfs$folder/"
    mknod "$rootfs/dev/zero" c 1 5
    echo '{"ociVersion": "1.0.2", "root": {"path": "rootfs"}}' >"$T/bundle/config.json"
    echo "{\"ociVersion\": \"1.0.2\", \"bundle\": \"$T/bundle\"}" >"$T/state.json"
}
# The guard only turns a hang of the old hook into a failure; the hook's own limits are
# the ones under test.
run_hook() {
    set +e
    timeout 60 "$hook" update-ldcache --folder "$folder" "$@" <"$T/state.json" >"$T/hout" 2>"$T/herr"
    HRC=$?
    set -e
    [ "$HRC" != 124 ] || fail "the hook did not end: $(cat "$T/herr")"
}
expect_hook() {
    local rc=$1 msg=$2
    [ "$HRC" = "$rc" ] || fail "hook: exit $HRC, want $rc: $(cat "$T/herr")"
    grep -q -- "$msg" "$T/herr" || fail "hook: stderr lacks '$msg': $(cat "$T/herr")"
}
# The processes whose root is the image's (a killed hook's ldconfig would be there).
in_image() {
    # find says 1 for the processes that end while it reads /proc.
    { find /proc -mindepth 2 -maxdepth 2 -name root -lname "$rootfs" 2>/dev/null || true; } | cut -d/ -f3
}
none_in_image() {
    local left
    left=$(in_image)
    [ -z "$left" ] || fail "process(es) left in the image: $left"
}

# A plain image: its ld cache finds the driver's library.
image
echo "include /etc/ld.so.conf.d/*.conf" >"$rootfs/etc/ld.so.conf"
run_hook
[ "$HRC" = 0 ] || fail "hook on a plain image: exit $HRC: $(cat "$T/herr")"
ldconfig -p -C "$rootfs/etc/ld.so.cache" | grepq "libcuda.so.1 .*=> $folder/libcuda.so.1" ||
    fail "the image's ld cache lacks libcuda.so.1: $(ldconfig -p -C "$rootfs/etc/ld.so.cache")"

# /etc/ld.so.conf a FIFO: refused without waiting for a writer.
image
mkfifo "$rootfs/etc/ld.so.conf"
run_hook
expect_hook 1 "the image's /etc/ld.so.conf is not a regular file"
[ "$(wc -l <"$T/herr")" = 1 ] || fail "more than one line: $(cat "$T/herr")"
none_in_image

# /etc/ld.so.conf a link to /dev/zero: refused before any read.
image
ln -s /dev/zero "$rootfs/etc/ld.so.conf"
run_hook
expect_hook 1 "the image's /etc/ld.so.conf is not a regular file"
# Too big to be a configuration.
image
head -c 70000 /dev/zero | tr '\0' '#' >"$rootfs/etc/ld.so.conf"
run_hook
expect_hook 1 "holds 70000 bytes, more than the 65536"

# A file it includes never ends: ldconfig's read of it fails at its heap limit, and the
# cache is written without it. The peak resident size of the hook and what it ran
# (getrusage of the waited-for tree) stays under the limit's reach.
image
echo "include /etc/ld.so.conf.d/*.conf" >"$rootfs/etc/ld.so.conf"
ln -s /dev/zero "$rootfs/etc/ld.so.conf.d/zz.conf"
# A library bigger than that limit is still cached: it is mapped, not read into the heap.
cp "$inst_dir/lib64/libnvidia-ml.so.1" "$rootfs$folder/"
truncate -s 600M "$rootfs$folder/libnvidia-ml.so.1"
peak=$(python3 - "$hook" "$folder" "$T/state.json" "$T/herr" <<'PY'
import resource, subprocess, sys
hook, folder, state, err = sys.argv[1:]
with open(state) as i, open(err, "w") as e:
    rc = subprocess.run([hook, "update-ldcache", "--folder", folder], stdin=i, stderr=e,
                        timeout=60).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
)
[ "${peak% *}" = 0 ] || fail "hook with an endless include: exit ${peak% *}: $(cat "$T/herr")"
[ "${peak#* }" -lt 300 ] || fail "hook with an endless include: peak ${peak#* } MiB resident"
echo "cdi-hook: an include that never ends: exit 0, peak ${peak#* } MiB resident (600 MiB library cached)"
ldconfig -p -C "$rootfs/etc/ld.so.cache" | grepq "libcuda.so.1 .*=> $folder/libcuda.so.1" &&
    ldconfig -p -C "$rootfs/etc/ld.so.cache" | grepq "libnvidia-ml.so.1 .*=> $folder/" ||
    fail "the ld cache after an endless include: $(ldconfig -p -C "$rootfs/etc/ld.so.cache")"
none_in_image

# A file it includes blocks: the deadline kills ldconfig and says so.
image
echo "include /etc/ld.so.conf.d/*.conf" >"$rootfs/etc/ld.so.conf"
mkfifo "$rootfs/etc/ld.so.conf.d/zz.conf"
run_hook --timeout 2
expect_hook 1 "ldconfig did not finish within 2 s, killed"
none_in_image

# The runtime kills the hook at the spec's timeout: its ldconfig goes with it.
"$hook" update-ldcache --folder "$folder" --timeout 600 <"$T/state.json" 2>/dev/null &
hook_pid=$!
# Opening the FIFO's other end returns once ldconfig has opened it: it is blocked there now.
exec 3>"$rootfs/etc/ld.so.conf.d/zz.conf"
ldc=$(in_image)
[ -n "$ldc" ] || fail "no ldconfig in the image while the FIFO is open"
kill -KILL "$hook_pid"
wait "$hook_pid" 2>/dev/null || true
timeout 30 tail --pid="$ldc" -f /dev/null || fail "ldconfig $ldc outlived its hook"
exec 3>&-
none_in_image

# Bad --timeout: usage.
run_hook --timeout 0
expect_hook 2 "usage: nvidia-cdi-hook"
true
