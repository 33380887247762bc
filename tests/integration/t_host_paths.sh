# Host-path options are judged by where they resolve inside --root, before anything
# changes: the host's root and its system directories are refused (exit 2) however they
# are spelled, through links too; an install dir holding real directories is taken over
# only when it is provably an earlier NVIDIA install, and what is not the driver's is kept;
# --metrics-file never replaces a file that is not ours; links planted at the installer's
# own names are never followed; the published tree is readable whatever the umask.
mkroot "$T/root"
new_repo "$T/repo" "$V_NEW:default"
R="file://$T/repo"
# A host with something in each system directory, to see that nothing moves.
mkdir -p "$T/root/usr/local/bin" "$T/root/lib64" "$T/root/bin" "$T/root/share" \
    "$T/root/var/lib/dpkg" "$T/root/home/kubernetes/bin"
echo tool >"$T/root/usr/local/bin/tool"
echo lib >"$T/root/lib64/libc.so.6"
echo sh >"$T/root/bin/sh"
echo kubelet >"$T/root/home/kubernetes/bin/kubelet"
echo 'root:x:0:0::/root:/bin/sh' >"$T/root/etc/passwd"
host=$(snapshot "$T/root")

nrefused=0
refused() { # OPTION VALUE...: install and uninstall refuse each VALUE, nothing changes
    local opt=$1 v
    shift
    for v in "$@"; do
        nrefused=$((nrefused + 1))
        expect_rc 2 install --repo "$R" $(install_args) "$opt" "$v"
        expect_err "$opt"
        expect_rc 2 uninstall --skip-modules "$opt" "$v"
        assert_eq "$(snapshot "$T/root")" "$host" "the host after $opt '$v'"
    done
}
refused --install-dir // /. /// /./ /usr/local /usr//local/. /var/lib /etc /lib64 /bin \
    /home/kubernetes/bin /proc/nvidia
expect_rc 2 install --repo "$R" $(install_args) --install-dir //
expect_err "ERROR install: --install-dir '//' resolves to '/', the host's root"
refused --cache-dir / /var/cache /usr/./share
refused --cdi-dir // /etc /var/run/
refused --host-mount / /usr/local
refused --metrics-file //x.prom /etc/x.prom /etc/passwd /usr/local/lib/nvidia.txt
echo "host-paths: $nrefused spellings refused by install and uninstall, the host unchanged"
# The environment is judged the same way.
NVIDIA_INSTALL_DIR_HOST=/./ expect_rc 2 install --repo "$R" $(install_args)
expect_err "resolves to '/'"
assert_eq "$(snapshot "$T/root")" "$host" "the host after NVIDIA_INSTALL_DIR_HOST=/./"

# A path through a link to /, and a default install dir that is itself a link to /.
ln -s / "$T/root/home/kubernetes/bin/nvidia"
expect_rc 2 install --repo "$R" $(install_args)
expect_err "ERROR install: --install-dir '/home/kubernetes/bin/nvidia' resolves to '/', the host's root"
expect_rc 2 uninstall --skip-modules
expect_rc 2 install --repo "$R" $(install_args) --install-dir /home/kubernetes/bin/nvidia/usr/local
expect_err "resolves to '/usr/local', a system directory"
expect_rc 9 doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_out "\[fail\] host paths    --install-dir"
rm "$T/root/home/kubernetes/bin/nvidia"
# A dangling link would be created through: refused.
ln -s /nowhere/at/all "$T/root/home/kubernetes/bin/nvidia"
expect_rc 2 install --repo "$R" $(install_args)
expect_err "is a link to a place that does not exist"
rm "$T/root/home/kubernetes/bin/nvidia"
assert_eq "$(snapshot "$T/root")" "$host" "the host after the link cases"

# An install dir of someone else's: real bin/ and lib64/ that are no NVIDIA install.
mkdir -p "$T/root/opt/tool/bin" "$T/root/opt/tool/lib64"
echo mine >"$T/root/opt/tool/bin/tool"
echo mine >"$T/root/opt/tool/lib64/libtool.so.1"
before=$(snapshot "$T/root")
expect_rc 2 install --repo "$R" $(install_args) --install-dir /opt/tool
expect_err "install dir '/opt/tool' holds a directory 'bin' that is not an NVIDIA driver install"
assert_eq "$(snapshot "$T/root")" "$before" "someone else's install dir"
# A file at one of our names is not ours either.
mkdir -p "$T/root/opt/other"
echo mine >"$T/root/opt/other/share"
expect_rc 2 install --repo "$R" $(install_args) --install-dir /opt/other
expect_err "holds a file 'share' that is not ours"

# An earlier NVIDIA install (GKE's layout: real directories and a .cache marker) is taken
# over: the driver's files go, the operator's own file is kept and named.
g="$T/root/opt/gke"
mkdir -p "$g/bin" "$g/lib64" "$g/drivers" "$g/firmware/nvidia/535.104.05"
echo old >"$g/bin/nvidia-smi"
echo old >"$g/lib64/libcuda.so.535.104.05"
ln -s libcuda.so.535.104.05 "$g/lib64/libcuda.so.1"
echo old >"$g/lib64/libnvidia-ml.so.1"
echo old >"$g/drivers/nvidia.ko"
echo old >"$g/firmware/nvidia/535.104.05/gsp_ga10x.bin"
echo mine >"$g/bin/my-health-check"
echo cache >"$g/.cache"
expect_rc 0 install --repo "$R" $(install_args) --install-dir /opt/gke
expect_err "earlier install taken over; files that are not the driver's were kept (name=bin"
[ -L "$g/bin" ] && [ -L "$g/lib64" ] && [ -L "$g/firmware" ] || fail "the links are not in place"
assert_eq "$(cat "$g/.taken-over/bin/my-health-check")" mine "the operator's file"
assert_eq "$(cd "$g/.taken-over" && find . | sort | tr '\n' ' ')" ". ./bin ./bin/my-health-check " \
    "what was kept"
assert_eq "$(cat "$g/.cache")" cache "GKE's marker"
"$g/bin/nvidia-smi" | grepq "Driver Version: $V_NEW"

# Links planted at the installer's own names: .versions (an install would rename the new
# version through it) and the lock. Replaced, never followed.
d=$(idir)
mkdir -p "$d" "$T/root/etc/victim" "$T/root/run"
ln -s /etc/victim "$d/.versions"
rm -f "$T/root/run/nvidia-driver-installer.lock"
ln -s /etc/passwd "$T/root/run/nvidia-driver-installer.lock"
victim=$(snapshot "$T/root/etc/victim"; cat "$T/root/etc/passwd")
expect_rc 0 install --repo "$R" $(install_args)
assert_eq "$(snapshot "$T/root/etc/victim"; cat "$T/root/etc/passwd")" "$victim" "the host's /etc after planted links"
[ -d "$d/.versions" ] && [ ! -L "$d/.versions" ] || fail ".versions is not our directory"
[ -f "$T/root/run/nvidia-driver-installer.lock" ] && [ ! -L "$T/root/run/nvidia-driver-installer.lock" ] ||
    fail "the lock is not our file"
expect_err "a link planted at the lock's name was removed, not followed"

# Links planted at the cache's own names (its index, its record, its packages directory,
# a partial download) point at the host's /etc: replaced or confined, never followed out.
c="$T/root/var/cache/nvidia-driver-installer"
rm -rf "$c" "$d"
mkdir -p "$c" "$T/root/etc/victim2"
ln -s /etc/passwd "$c/index.json"
ln -s /etc/passwd "$c/index.json.sig"
ln -s /etc/passwd "$c/index-fetched"
ln -s /etc/victim2 "$c/packages"
victim=$(snapshot "$T/root/etc/victim2"; cat "$T/root/etc/passwd")
expect_rc 0 install --repo "$R" $(install_args)
assert_eq "$(snapshot "$T/root/etc/victim2"; cat "$T/root/etc/passwd")" "$victim" "the host's /etc after links in the cache"
[ ! -L "$c/index.json" ] && [ -f "$c/index.json" ] || fail "the cache's index is not its own file"
"$(idir)/bin/nvidia-smi" | grepq "Driver Version: $V_NEW"

# --metrics-file: another program's file is never replaced; ours is, run after run.
mkdir -p "$T/root/var/lib/node_exporter"
echo 'other_metric 1' >"$T/root/var/lib/node_exporter/other.prom"
expect_rc 2 install --repo "$R" $(install_args) --metrics-file /var/lib/node_exporter/other.prom
expect_err "exists and is not a metrics file of ours"
assert_eq "$(cat "$T/root/var/lib/node_exporter/other.prom")" "other_metric 1" "another program's metrics"
expect_rc 0 install --repo "$R" $(install_args) --metrics-file /var/lib/node_exporter/nvidia.prom
expect_rc 0 install --repo "$R" $(install_args) --metrics-file /var/lib/node_exporter/nvidia.prom
grep -q "^nvidia_driver_installer_success 1" "$T/root/var/lib/node_exporter/nvidia.prom"

# A umask of 077 does not make the published tree private.
rm -rf "$d"
umask 077
expect_rc 0 install --repo "$R" $(install_args)
umask 022
assert_eq "$(stat -c %a "$d/.current/" "$d/.current/lib64/" "$d/.versions")" "755
755
755" "directory modes under umask 077"
lib=$(readlink -f "$d/lib64/libcuda.so.1")
[ "$(($(stat -c '0%a' "$lib") & 0044))" = 36 ] || fail "libcuda is not readable by all: $(stat -c %a "$lib")"
