# NVIDIA's compute-domain daemon starting the IMEX daemon from our install dir, each step
# restated from its source (NVIDIA/k8s-dra-driver-gpu at 2240711; the stand-ins of
# tests/standin/imex.c in place of NVIDIA's programs):
# - the package: build-driver-package of the stand-in driver of 550 (IMEX's first branch)
#   with --imex, NVIDIA's IMEX .deb (its stand-in, tests/packaging/make-imex-deb), published
#   with 535 (no IMEX) and installed by the installer on a fake node;
# - the programs as the DRA driver's CDI spec mounts them: nvcdi's executable locator
#   (tests/tools/nvcdi-shape.py restates it: the first of ROOT/{usr/local/sbin,
#   usr/local/bin,usr/sbin,usr/bin,sbin,bin}/NAME, the plugin's own PATH first, nvidia-imex
#   and nvidia-imex-ctl among the names: the DRA driver's vendored toolkit v1.19.0,
#   pkg/nvcdi/driver-nvml.go:246-261, pkg/lookup/path.go:36-51) with ROOT the install dir,
#   each file bind-mounted alone (ro, nosuid, nodev) at its path without ROOT in a container's root
#   (a chroot in a private mount namespace), /imexd the per-domain directory of the
#   kubelet plugin (cmd/compute-domain-kubelet-plugin/computedomain.go:160-180, rw);
# - the daemon's own steps (cmd/compute-domain-daemon/main.go): imexd.cfg rendered from the
#   plugin's copy of the template (462-490) with the pod's IP, nodes.cfg (DNS names, the
#   default mode, dnsnames.go:191-215; IPs with the gate off, 492-525), "nvidia-imex -c
#   /imexd/imexd.cfg" run by PATH (45-50, 286; process.go start), the startup probe's check
#   polled (433-456: exit 0 and exactly "READY\n"), /etc/hosts and SIGUSR1 when a peer
#   joins (384-431, dnsnames.go:145-188), a restart with the new nodes.cfg in IP mode
#   (349-377), SIGTERM and its exit (process.go stop). What our code decides ends where the
#   daemon starts: the programs found and mounted, runnable from the mounts, and ready (its
#   exit 0 on SIGTERM is the stand-in's). The /etc/hosts rewrite, SIGUSR1's re-read and the IP-mode restart are
#   restatements of the daemon's steps that only the stand-in answers (it re-reads,
#   restarts and logs as tests/standin/imex.c is written to): not proofs of our code.
# Refused as a real container would: the installed 535 has no IMEX (the locator finds
# nothing and the daemon's exec fails); a locator that looked in bin/ only mounts, for a
# dynamically linked program, our launcher alone (exit 127, its message), while usr/bin/
# holds the real program.
[ "$(id -u)" = 0 ] || fail "needs root (mount namespaces, chroot)"
command -v dpkg-deb >/dev/null || fail "dpkg-deb is needed (make-imex-deb)"

FAKE_KERNEL=1
mkroot "$T/root" debian 12 --gpu 10de:2330
mkkernel "$T/root"
ARCH=$(dpkg --print-architecture)
deb=$("$SRC/tests/packaging/make-imex-deb" "$ARCH" "$V_NEW" "$T/debs")
dpkg-deb -x "$deb" "$T/imexdeb"

new_signed_repo "$T/repo" "$V_OLD:default"
run_source "$FIX/drv-$V_NEW"
mkdir -p "$T/mods"
cp "$FIX/drv-$V_NEW/kernel/"*.ko "$T/mods/"
"$SRC/scripts/build-driver-package" --kernel "$KERNEL" --source "$T/src" --os debian \
    --flavour proprietary --prebuilt-modules "$T/mods" --imex "$deb" \
    --sign-key "$FIX/keys/modkey.pem" --sign-cert "$FIX/keys/modkey.crt" --installer "$BIN" \
    --work "$T/work" --repo "$T/repo" --repo-key "$FIX/keys/key.pem" >"$T/bdp.out" 2>&1 ||
    fail "build-driver-package: $(tail -n 5 "$T/bdp.out")"
grep -q "IMEX $V_NEW packed: bin/nvidia-imex, bin/nvidia-imex-ctl" "$T/bdp.out" ||
    fail "build-driver-package said nothing of IMEX: $(cat "$T/bdp.out")"
# The index says which package carries IMEX (make-repo add reads it from the package).
python3 - "$T/repo/index.json" "$V_OLD" "$V_NEW" <<'PY'
import json, sys
idx, old, new = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
imex = {d["version"]: [p.get("imex", False) for p in d["packages"]] for d in idx["drivers"]}
assert imex == {old: [False], new: [True]}, imex
PY
R="file://$T/repo"
INST=/home/kubernetes/bin/nvidia

# The container's side. PATH as a container image's default (the locator's default list).
PATH_CTR=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CHROOT=$(command -v chroot)
# The kubelet plugin's directory for this ComputeDomain, mounted at /imexd.
CD_DIR=$T/root/var/lib/kubelet/plugins/compute-domain.nvidia.com/domains/cd-0b9e
# The pod's IP: a random address of 127.0.0.0/8 (all loopback), so that runs at once (the
# plain and the ASan suites) do not meet on the command service's fixed port, 50005.
POD_IP=127.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1)).$((RANDOM % 250 + 2))
ipid=
cleanup() {
    local p
    # The namespace and its mounts go with its last process.
    for p in ${ipid:+"$ipid"} ${NS_PID:+"$NS_PID"}; do
        kill -KILL "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
}
# The daemon's log by a name of its own: a test ended by set -e inside a function runs
# this trap after the runner's local T is gone.
LOG=$T/imex.log
trap 'rc=$?; cleanup; [ $rc = 0 ] || { echo "--- the IMEX daemon"; tail -20 "$LOG"; }' EXIT
: >"$LOG"
hold_mount_ns
NS=$INST_WRAP
INST_WRAP=

# spec_for ROOT OUT: the DRA driver's spec for the driver root ROOT in the fake root (FS).
spec_for() {
    python3 "$SRC/tests/tools/nvcdi-shape.py" --fs "${3:-$T/root}" --driver-root "$1" \
        --hook "$1/.helpers/nvidia-cdi-hook" --gpus 1 --out "$2" 2>"$T/shape.err" ||
        fail "nvcdi-shape: $(cat "$T/shape.err")"
}
# imex_mounts SPEC: "HOST CONTAINER" of each IMEX program the spec mounts.
imex_mounts() {
    python3 - "$1" <<'PY'
import json, os, sys
for m in json.load(open(sys.argv[1]))["containerEdits"]["mounts"]:
    if os.path.basename(m["containerPath"]) in ("nvidia-imex", "nvidia-imex-ctl"):
        print(m["hostPath"], m["containerPath"])
PY
}
# ctr_root C FS MOUNTS [libc]: a container's root at C: the mounts of the file MOUNTS
# ("HOST CONTAINER" lines, HOST in the fake root FS), /imexd, /proc, an /etc/hosts as the
# kubelet writes it; with libc, the image's C library and loader (for a dynamically linked
# program).
ctr_root() {
    local c=$1 fs=$2 h p
    mkdir -p "$c/usr/bin" "$c/imexd" "$c/etc" "$c/proc" "$CD_DIR"
    printf '127.0.0.1\tlocalhost\n%s\tcompute-domain-daemon-pod\n' "$POD_IP" >"$c/etc/hosts"
    while read -r h p; do
        mkdir -p "$c$(dirname "$p")"
        : >"$c$p"
        $NS mount --bind -o ro,nosuid,nodev "$fs$h" "$c$p"
    done <"$3"
    $NS mount --bind -o nosuid,nodev "$CD_DIR" "$c/imexd"
    $NS mount --rbind /proc "$c/proc"
    if [ -n "${4:-}" ]; then
        mkdir -p "$c/lib64" "$c/lib/x86_64-linux-gnu"
        cp -L /lib64/ld-linux-x86-64.so.2 "$c/lib64/"
        cp -L /lib/x86_64-linux-gnu/libc.so.6 "$c/lib/x86_64-linux-gnu/"
    fi
}
# in_ctr C COMMAND...: COMMAND in the container C, found by PATH, no other environment.
in_ctr() {
    local c=$1
    shift
    $NS env -i PATH="$PATH_CTR" "$CHROOT" "$c" "$@"
}

# The kubelet plugin copies its template into the domain's directory as imexd.cfg.tmpl
# (computedomain.go:137, 224-233). Its settings (templates/compute-domain-daemon-config.
# tmpl.cfg, the comments left out), with the daemon's two fields.
write_template() {
    cat >"$CD_DIR/imexd.cfg.tmpl" <<'EOF'
LOG_LEVEL=4
LOG_FILE_NAME=
STATS_FILE_NAME=/var/log/nvidia-imex-stats.log
LOG_APPEND_TO_LOG=0
LOG_FILE_MAX_SIZE=1024
LOG_MAX_ROTATE_COUNT=10
LOG_USE_SYSLOG=0
DAEMONIZE=0
BIND_INTERFACE_IP=
SERVER_PORT=50000
IMEX_NODE_CONFIG_FILE={{ .IMEXDaemonNodesConfigPath }}
NETWORK_INTERFACE=
IMEX_WAIT_FOR_QUORUM=RECOVERY
IMEX_ENABLE_AUTH_ENCRYPTION=0
IMEX_AUTH_ENCRYPTION_MODE=SSL_TLS
IMEX_AUTH_SOURCE=
IMEX_SERVER_KEY=
IMEX_SERVER_CERT=
IMEX_SERVER_CERT_AUTH=
IMEX_CLIENT_KEY=
IMEX_CLIENT_CERT=
IMEX_CLIENT_CERT_AUTH=
IMEX_SECURITY_TARGET_OVERRIDE=
IMEX_GSS_SERVICE_NAME=host
IMEX_GSS_TIMEOUT_SEC=30
IMEX_GSS_RETRY_INTERVAL_SEC=5
IMEX_GSS_SEC_CONTEXT_LIFETIME_SEC=-1
IMEX_GSS_SHUTDOWN_ON_FAILURE=0
IMEX_CMD_ENABLED=1
IMEX_CMD_BIND_INTERFACE_IP={{ .IMEXCmdBindInterfaceIP }}
IMEX_CMD_PORT=50005
IMEX_CMD_UNIX_DOMAIN_PATH=
IMEX_NODE_DISCONNECTED_GRACE_TIME=-1
EOF
}
# The daemon's steps in its container C. writeIMEXConfig (main.go:462-490): the template
# rendered with the pod's IP and /imexd/nodes.cfg into /imexd/imexd.cfg.
cd_write_config() {
    $NS sed -e "s|{{ .IMEXCmdBindInterfaceIP }}|$POD_IP|" \
        -e 's|{{ .IMEXDaemonNodesConfigPath }}|/imexd/nodes.cfg|' \
        "$1/imexd/imexd.cfg.tmpl" >"$T/imexd.cfg"
    $NS cp "$T/imexd.cfg" "$1/imexd/imexd.cfg"
}
# DNS-names mode (the default; pkg/featuregates/featuregates.go:102-108): nodes.cfg holds
# compute-domain-daemon-0000 to MAX_NODES_PER_IMEX_DOMAIN - 1 (18 by default,
# cmd/compute-domain-controller/main.go:58), dnsnames.go:36-37, 191-215.
cd_write_dns_nodes() {
    local i
    for i in $(seq 0 17); do printf 'compute-domain-daemon-%04d\n' "$i"; done >"$T/nodes.cfg"
    $NS cp "$T/nodes.cfg" "$1/imexd/nodes.cfg"
}
# updateHostsFile (dnsnames.go:145-188): the lines without the prefix kept, then a comment
# and "IP<TAB>NAME" per daemon of the clique.
cd_update_hosts() {
    local c=$1 ip
    shift
    grep -v compute-domain-daemon- "$c/etc/hosts" >"$T/hosts" || true
    echo "# Compute Domain Daemon mappings" >>"$T/hosts"
    for ip in "$@"; do
        printf '%s\tcompute-domain-daemon-%04d\n' "${ip%=*}" "${ip#*=}"
    done >>"$T/hosts"
    cp "$T/hosts" "$c/etc/hosts"
}
# start (process.go): the command line by PATH, its output the container's log; $ipid.
cd_start() {
    $NS env -i PATH="$PATH_CTR" "$CHROOT" "$1" nvidia-imex -c /imexd/imexd.cfg >>"$LOG" 2>&1 &
    ipid=$!
}
# check (main.go:433-456): nvidia-imex-ctl -c /imexd/imexd.cfg -q, its output combined,
# ready when it exits 0 having printed exactly "READY\n". Leaves $T/check.out and CHECK_RC.
cd_check() {
    CHECK_RC=0
    in_ctr "$1" nvidia-imex-ctl -c /imexd/imexd.cfg -q >"$T/check.out" 2>&1 || CHECK_RC=$?
    [ "$CHECK_RC" = 0 ] && printf 'READY\n' | cmp -s - "$T/check.out"
}
# exited PID: the process is gone or a zombie (kill -0 still reaches a zombie).
exited() {
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -z "$st" ] || [ "$st" = Z ]
}
# cd_reap WHAT: waits (bounded) for the daemon's process to end; its exit status in DRC.
cd_reap() {
    wait_for "the IMEX daemon's process to end ($1)" 60 exited "$ipid"
    DRC=0
    wait "$ipid" || DRC=$?
    ipid=
}
# stop (process.go Stop): SIGTERM, then Wait; its exit status in DRC.
cd_stop() {
    kill -TERM "$ipid"
    cd_reap "$1"
}
log_count() { grep -c -- "$1" "$LOG" || true; }
log_grew() { [ "$(log_count "$1")" -gt "$2" ]; }
log_has_line() { grep -qx -- "$1" "$LOG"; }
# The probe polled until it passes, the daemon still running (else its log says why).
probe_ready() {
    kill -0 "$ipid" 2>/dev/null || fail "the IMEX daemon ended: $(tail -n 3 "$LOG")"
    cd_check "$1"
}
wait_ready() { wait_for "the startup probe's check to say READY ($1)" 60 probe_ready "$2"; }

# 1. The node on 535, which has no IMEX: the locator finds neither program, and the
# daemon's exec by PATH fails in its container, as the Go runtime's would ("executable
# file not found in $PATH"); the probe's check cannot run either.
expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(installed_version)" "$V_OLD" "the version installed first"
spec_for "$INST" "$T/spec-535.json"
assert_eq "$(imex_mounts "$T/spec-535.json")" "" "what the spec mounts of IMEX on 535"
C=$T/ctr-535
imex_mounts "$T/spec-535.json" >"$T/mounts-535"
ctr_root "$C" "$T/root" "$T/mounts-535"
write_template
cd_write_config "$C"
cd_write_dns_nodes "$C"
cd_start "$C"
cd_reap "its exec on 535"
assert_eq "$DRC" 127 "the daemon's exit without nvidia-imex"
grep -q "failed to run command 'nvidia-imex': No such file or directory" "$LOG" ||
    fail "the failed exec: $(cat "$LOG")"
! cd_check "$C" || fail "the check passed on 535"
assert_eq "$CHECK_RC" 127 "the check's exit without nvidia-imex-ctl"

# 2. The node switched to the version with IMEX: the spec mounts both programs from usr/bin/
# (the real files, hard links beside bin/: static programs are not wrapped, so a locator
# that looked in bin/ would find the same file here).
expect_rc 0 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
assert_eq "$(installed_version)" "$V_NEW" "the version with IMEX"
spec_for "$INST" "$T/spec.json"
want="$INST/usr/bin/nvidia-imex /usr/bin/nvidia-imex"
want="$want $INST/usr/bin/nvidia-imex-ctl /usr/bin/nvidia-imex-ctl "
assert_eq "$(imex_mounts "$T/spec.json" | tr '\n' ' ')" "$want" "what the spec mounts of IMEX"
for p in nvidia-imex nvidia-imex-ctl; do
    cmp -s "$T/root$INST/usr/bin/$p" "$T/imexdeb/usr/bin/$p" ||
        fail "usr/bin/$p is not NVIDIA's file"
    assert_eq "$(stat -c %i "$T/root$INST/usr/bin/$p")" "$(stat -c %i "$T/root$INST/bin/$p")" \
        "usr/bin/$p and bin/$p, one file"
done
C=$T/ctr
imex_mounts "$T/spec.json" >"$T/mounts"
ctr_root "$C" "$T/root" "$T/mounts"
cd_write_config "$C"
cd_write_dns_nodes "$C"
# Written through the container's /imexd: the plugin's directory holds it.
for l in "IMEX_CMD_BIND_INTERFACE_IP=$POD_IP" IMEX_NODE_CONFIG_FILE=/imexd/nodes.cfg; do
    grep -qx "$l" "$CD_DIR/imexd.cfg" || fail "imexd.cfg lacks $l: $(cat "$CD_DIR/imexd.cfg")"
done
! cd_check "$C" || fail "the check passed with no daemon"
[ "$CHECK_RC" != 127 ] || fail "nvidia-imex-ctl not found in the container: $(cat "$T/check.out")"
cd_update_hosts "$C" "$POD_IP=0"
cd_start "$C"
wait_ready "DNS-names mode" "$C"
grep -q "nvidia-imex: nodes: compute-domain-daemon-0000 .* compute-domain-daemon-0017$" "$LOG" ||
    fail "the daemon's nodes: $(cat "$LOG")"

# A restatement, not a proof of our code (the stand-in's behaviour, as written): a peer
# joins the clique, /etc/hosts gets its name (the stand-in does not read it), and the
# process, not fresh, gets SIGUSR1 (main.go:411-427) and re-reads its nodes.
n=$(log_count "SIGUSR1: nodes re-read")
cd_update_hosts "$C" "$POD_IP=0" "10.20.0.7=1"
kill -USR1 "$ipid"
wait_for "the daemon to re-read its nodes after SIGUSR1" 60 log_grew "SIGUSR1: nodes re-read" "$n"
wait_ready "after SIGUSR1" "$C"
# The re-read is a read: nodes.cfg changed under it, SIGUSR1 logs the new peers.
# Awaited as the whole line: the stand-in writes it in several writes.
printf '%s\n10.20.0.7\n10.20.0.9\n' "$POD_IP" >"$T/nodes.cfg"
$NS cp "$T/nodes.cfg" "$C/imexd/nodes.cfg"
kill -USR1 "$ipid"
wait_for "the daemon to log its new peers" 60 log_has_line "nvidia-imex: nodes: $POD_IP 10.20.0.7 10.20.0.9"

# IP mode (the gate off), a restatement too: the clique's IPs written to nodes.cfg and the
# daemon restarted (stop: SIGTERM, its exit 0; start again), ready with the new peers. The
# SIGTERM exit 0 is the stand-in's; the restart runs the same mounts again.
printf '%s\n10.20.0.7\n' "$POD_IP" >"$T/nodes.cfg"
$NS cp "$T/nodes.cfg" "$C/imexd/nodes.cfg"
cd_stop "SIGTERM, IP mode"
assert_eq "$DRC" 0 "the IMEX daemon's exit on SIGTERM"
! cd_check "$C" || fail "the check passed after the daemon stopped"
cd_start "$C"
wait_ready "restarted in IP mode" "$C"
tail -n 1 "$LOG" | grepq -x "nvidia-imex: nodes: $POD_IP 10.20.0.7" ||
    fail "the restarted daemon's nodes: $(tail -n 3 "$LOG")"
cd_stop "SIGTERM"
assert_eq "$DRC" 0 "the restarted IMEX daemon's exit on SIGTERM"
grep -q "nvidia-imex: signal 15: stopping" "$LOG" || fail "the stop: $(tail -n 3 "$LOG")"

# 3. A dynamically linked nvidia-imex (the same source, not static), packed alike and
# installed on another node: bin/NAME is our launcher, usr/bin/NAME the program. What the
# locator mounts (usr/bin) runs in a container with the image's C library; a locator that
# looked in bin/ only would mount the launcher alone, which says so and exits 127.
mkdir -p "$T/dyn"
for p in nvidia-imex nvidia-imex-ctl; do
    cc -std=gnu11 -O2 -D_GNU_SOURCE -o "$T/dyn/$p" "$SRC/tests/standin/imex.c"
done
readelf -l "$T/dyn/nvidia-imex" | grepq INTERP || fail "the dynamic build is static"
# Packed as build-driver-package packs IMEX (bin/, share/nvidia/imex/): --imex would refuse
# programs that are not NVIDIA's, and this one only has to be dynamic.
cp -a "$FIX/drv-$V_NEW" "$T/drv-dyn"
install -m 0755 "$T/dyn/nvidia-imex" "$T/dyn/nvidia-imex-ctl" "$T/drv-dyn/bin/"
mkdir -p "$T/drv-dyn/share/nvidia/imex"
cp "$T/imexdeb/etc/nvidia-imex/"*.cfg "$T/drv-dyn/share/nvidia/imex/"
"$SRC/scripts/make-repo" pack "$T/drv-dyn" "$T/imex-dyn.tar.zst"
mkdir -p "$T/repo-dyn"
"$SRC/scripts/make-repo" add --repo "$T/repo-dyn" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$KERNEL" --tag default "$T/imex-dyn.tar.zst" >/dev/null
mkroot "$T/root2"
"$BIN" --root "$T/root2" install --repo "file://$T/repo-dyn" $(install_args) >"$T/out" 2>"$T/err" ||
    fail "install on the second node: $(cat "$T/err")"
launcher=$(dirname "$BIN")/libexec/nvidia-driver-installer/launcher
cmp -s "$launcher" "$T/root2$INST/bin/nvidia-imex" || fail "bin/nvidia-imex is not the launcher"
spec_for "$INST" "$T/spec-dyn.json" "$T/root2"
C=$T/ctr-dyn
imex_mounts "$T/spec-dyn.json" >"$T/mounts-dyn"
grep -qx "$INST/usr/bin/nvidia-imex /usr/bin/nvidia-imex" "$T/mounts-dyn" ||
    fail "mounts: $(cat "$T/mounts-dyn")"
ctr_root "$C" "$T/root2" "$T/mounts-dyn" libc
cd_write_config "$C"
cd_write_dns_nodes "$C"
cd_start "$C"
wait_ready "a dynamically linked nvidia-imex" "$C"
cd_stop "SIGTERM, dynamically linked"
assert_eq "$DRC" 0 "the dynamic IMEX daemon's exit on SIGTERM"
# The same container with what a locator of bin/ alone would mount: the launcher.
C=$T/ctr-bin
printf '%s %s\n' "$INST/bin/nvidia-imex" /bin/nvidia-imex \
    "$INST/bin/nvidia-imex-ctl" /bin/nvidia-imex-ctl >"$T/bin-only"
ctr_root "$C" "$T/root2" "$T/bin-only" libc
cd_write_config "$C"
cd_start "$C"
cd_reap "the launcher alone"
assert_eq "$DRC" 127 "the launcher mounted alone"
tail -n 1 "$LOG" |
    grepq "^nvidia-imex: /bin/.real/nvidia-imex is missing: this is the driver.s launcher" ||
    fail "the launcher's message: $(tail -n 3 "$LOG")"
