# coverage answers "does this repository serve this node image" with the decision install
# makes: for each case, `coverage --os ID --os-build B --kernel R` is compared with
# `install --dry-run` on a fake root with that os-release, kernel and GPUs (same exit, same
# version and package, or the same one-line reason). Then the table, --json against
# docs/json.md, and the usage refusals.
mkroot "$T/root"
R=(--repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --fetch-timeout 20)
add() {
    "$SRC/scripts/make-repo" add --repo "$T/repo" --key "$FIX/keys/key.pem" "$@" >/dev/null
}
# 535.261.03 (default): a generic package, one for COS, one for one COS build, and one
# for Ubuntu on another kernel. 550.90.07: only GPU 10de:2330; x86_64 and aarch64.
# 535.183.01: Ubuntu only. 560.1.1: aarch64 only.
add --version "$V_OLD" --kernel "$KERNEL" --tag default "$FIX/pkg-$V_OLD.tar.zst"
add --version "$V_OLD" --kernel "$KERNEL" --os cos "$FIX/pkg-$V_OLD.tar.zst"
add --version "$V_OLD" --kernel "$KERNEL" --os cos --os-build 17800.66.78 "$FIX/pkg-$V_OLD.tar.zst"
add --version "$V_OLD" --kernel 6.1.0-99-amd64 --os ubuntu "$FIX/pkg-$V_OLD.tar.zst"
echo 10de:2330 >"$T/ids"
add --version "$V_NEW" --kernel "$KERNEL" --pci-ids "$T/ids" "$FIX/pkg-$V_NEW.tar.zst"
add --version "$V_NEW" --kernel "$KERNEL" --arch aarch64 "$FIX/pkg-$V_NEW.tar.zst"
add --version "$V_BRANCH_OLD" --kernel "$KERNEL" --os ubuntu "$FIX/pkg-$V_BRANCH_OLD.tar.zst"
add --version 560.1.1 --kernel "$KERNEL" --arch aarch64 "$FIX/pkg-$V_NEW.tar.zst"

# The answer of a command: "rc=N version path", or "rc=N reason" (the error without its
# "ERROR cmd: [select: ]" prefix and its exit suffix, with the first GPU's place as GPU1).
answer() {
    if [ "$RC" = 0 ]; then
        python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print("rc=0", o["driver_version"], o["package"]["path"])' "$T/out"
    else
        # A GPU is named by its PCI address on a node, by its place among --gpu here.
        echo "rc=$RC $(sed -n 's/^ERROR [a-z-]*: \(select: \)\{0,1\}//p' "$T/err" |
            sed -e 's/ (exit [0-9]*)$//' -e 's/ at \(--gpu #1\|0000:00:04\.0\);/ at GPU1;/')"
    fi
}

# same NAME WANT OS BUILD KERNEL REQUEST [GPU...]: coverage and install --dry-run on a
# root with that image agree, and the answer starts with WANT (BUILD "-": none), under the
# --kernel-module-type KMT.
n=0
KMT=auto
same() {
    local name=$1 want=$2 os=$3 build=$4 kernel=$5 request=$6 cov inst_a
    shift 6
    local gpus=() gpuargs=() b=()
    for g in "$@"; do gpus+=(--gpu "$g"); gpuargs+=(--gpu "$g"); done
    n=$((n + 1))
    local root=$T/root-$n
    mkdir -p "$root/etc"
    if [ "$build" = - ]; then
        printf 'ID=%s\nVERSION_ID=1\n' "$os" >"$root/etc/os-release"
    else
        mkroot "$root" "$os" "$build"
        b=(--os-build "$build")
    fi
    local k=4
    for g in "$@"; do
        add_pci "$root" "0000:00:0$k.0" "${g%%:*}" "${g##*:}" 0x030200
        k=$((k + 1))
    done
    "$BIN" --root "$root" install "${R[@]}" --kernel-release "$kernel" --skip-modules \
        --kernel-module-type "$KMT" --dry-run --json --driver-version "$request" \
        >"$T/out" 2>"$T/err" && RC=0 || RC=$?
    inst_a=$(answer)
    "$BIN" coverage "${R[@]}" --os "$os" "${b[@]}" --kernel "$kernel" --driver-version "$request" \
        --kernel-module-type "$KMT" "${gpuargs[@]}" --json >"$T/out" 2>"$T/err" && RC=0 || RC=$?
    cov=$(answer)
    echo "coverage: $name: $cov"
    [ "$cov" = "$inst_a" ] || fail "$name: coverage answers '$cov', install --dry-run '$inst_a'"
    case "$cov" in "$want"*) ;; *) fail "$name: expected '$want...', got '$cov'" ;; esac
    # The text form answers the same, with the runbook's exact command line.
    [ "$request" = default ] && [ "$KMT" = auto ] || return 0
    "$BIN" coverage --repo "${R[1]}" --repo-key "$FIX/keys/pub.pem" --os "$os" "${b[@]}" \
        --kernel "$kernel" "${gpuargs[@]}" >"$T/out" 2>"$T/err" && RC=0 || RC=$?
    [ "rc=$RC" = "${cov%% *}" ] || fail "$name: text form exits $RC, --json ${cov%% *}"
}

same "exact os build" "rc=0 $V_OLD packages/$KERNEL/x86_64/nvidia-$V_OLD-cos-17800.66.78.tar.zst" \
    cos 17800.66.78 "$KERNEL" default 10de:2330
same "os-only package" "rc=0 $V_OLD packages/$KERNEL/x86_64/nvidia-$V_OLD-cos.tar.zst" \
    cos 18000.0.0 "$KERNEL" default
same "generic package" "rc=0 $V_OLD packages/$KERNEL/x86_64/nvidia-$V_OLD.tar.zst" \
    ubuntu - "$KERNEL" default
same "wrong kernel" "rc=3 the default driver $V_OLD has no package for kernel $OTHER_KERNEL" \
    cos 17800.66.78 "$OTHER_KERNEL" default
same "wrong arch" "rc=3 driver 560.1.1 has no package for kernel $KERNEL" \
    cos 17800.66.78 "$KERNEL" 560.1.1
same "GPU not supported" "rc=3 driver $V_NEW does not support GPU 10de:1db4" \
    cos 17800.66.78 "$KERNEL" "$V_NEW" 10de:1db4
same "latest with an unsupported GPU" "rc=0 $V_OLD" cos 17800.66.78 "$KERNEL" latest 10de:1db4
same "latest" "rc=0 $V_NEW packages/$KERNEL/x86_64/nvidia-$V_NEW.tar.zst" \
    cos 17800.66.78 "$KERNEL" latest 10de:2330
same "branch" "rc=0 $V_OLD" cos 17800.66.78 "$KERNEL" 535
same "branch on ubuntu" "rc=0 $V_OLD packages/$KERNEL/x86_64/nvidia-$V_OLD.tar.zst" \
    ubuntu - "$KERNEL" 535
same "exact version" "rc=0 $V_BRANCH_OLD packages/$KERNEL/x86_64/nvidia-$V_BRANCH_OLD-ubuntu.tar.zst" \
    ubuntu - "$KERNEL" "$V_BRANCH_OLD"
same "exact version, other os" "rc=3 driver $V_BRANCH_OLD has no package for kernel $KERNEL" \
    cos 17800.66.78 "$KERNEL" "$V_BRANCH_OLD"
same "no such branch" "rc=3 no driver in the repository matches version '570'" \
    cos 17800.66.78 "$KERNEL" 570

# Kernel module flavours: one driver of a branch where NVIDIA recommends the open modules
# (560 and later) in both flavours, each with its GPUs. coverage takes the flavour install
# takes, and refuses what install refuses, for each policy.
R=(--repo "file://$T/repo-kmt" --repo-key "$FIX/keys/pub.pem" --fetch-timeout 20)
printf '10de:1db1\n10de:2330\n' >"$T/proprietary.ids"
printf '10de:2330\n10de:2901\n' >"$T/open.ids"
for t in proprietary open; do
    "$SRC/scripts/make-repo" add --repo "$T/repo-kmt" --key "$FIX/keys/key.pem" --version 575.1.1 \
        --tag default --kernel "$KERNEL" --module-type $t --supported-pci-ids "$T/$t.ids" \
        "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
done
P575=packages/$KERNEL/x86_64/nvidia-575.1.1
same "hopper, auto, 575: open" "rc=0 575.1.1 $P575-open.tar.zst" ubuntu - "$KERNEL" default 10de:2330
same "volta, auto: proprietary" "rc=0 575.1.1 $P575-proprietary.tar.zst" ubuntu - "$KERNEL" default 10de:1db1
same "hopper and volta, auto: proprietary" "rc=0 575.1.1 $P575-proprietary.tar.zst" \
    ubuntu - "$KERNEL" default 10de:2330 10de:1db1
same "blackwell, auto: open" "rc=0 575.1.1 $P575-open.tar.zst" ubuntu - "$KERNEL" default 10de:2901
KMT=open
same "volta, open: refused" "rc=3" ubuntu - "$KERNEL" default 10de:1db1
KMT=proprietary
same "hopper, proprietary" "rc=0 575.1.1 $P575-proprietary.tar.zst" ubuntu - "$KERNEL" default 10de:2330
same "blackwell, proprietary: refused" "rc=3" ubuntu - "$KERNEL" default 10de:2901
KMT=auto
expect_rc 0 coverage "${R[@]}"
expect_out "^$KERNEL  *x86_64  *any  *any  *575.1.1  *open  *default$"
expect_out "^$KERNEL  *x86_64  *any  *any  *575.1.1  *proprietary  *default$"
R=(--repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --fetch-timeout 20)

# What is closest, in the one line a script logs: the kernels for that OS build, the
# versions that have that kernel.
expect_rc 3 coverage "${R[@]}" --os ubuntu --kernel 6.1.0-77-amd64
[ "$(grep -c "^ERROR" "$T/err")" = 1 ] || fail "not one ERROR line: $(cat "$T/err")"
expect_err "packages exist for kernels: $KERNEL, 6.1.0-99-amd64; versions with a package for kernel 6.1.0-77-amd64: none"
expect_rc 3 coverage "${R[@]}" --os cos --os-build 17800.66.78 --kernel "$KERNEL" --arch arm64 --driver-version "$V_OLD"
expect_err "packages exist for kernels: none for cos build 17800.66.78 on aarch64; versions with a package for kernel $KERNEL: 560.1.1, $V_NEW"
# --arch: the pool's architecture, amd64/arm64 spelt either way.
expect_rc 0 coverage "${R[@]}" --os cos --kernel "$KERNEL" --arch aarch64 --driver-version latest
expect_out "'latest' is driver 560.1.1, package packages/$KERNEL/aarch64/nvidia-560.1.1.tar.zst"
expect_rc 0 coverage "${R[@]}" --os cos --kernel "$KERNEL" --driver-version latest --json
python3 "$SRC/tests/tools/json-contract.py" "$SRC/docs/json.md" '`coverage --os ID --kernel R --json`' "$T/out"
expect_rc 3 coverage "${R[@]}" --os cos --kernel "$OTHER_KERNEL" --json
python3 "$SRC/tests/tools/json-contract.py" "$SRC/docs/json.md" '`coverage --os ID --kernel R --json`' "$T/out"
python3 - "$T/out" "$KERNEL" <<'EOF' || fail "coverage --json: $(cat "$T/out")"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["served"] is False and o["package"] is None, o
assert o["kernels"] == [sys.argv[2]], o["kernels"]
assert o["versions_for_kernel"] == [], o
assert "has no package for kernel" in o["reason"], o["reason"]
EOF

# The table: every package, by kernel, architecture, OS and build.
expect_rc 0 coverage "${R[@]}"
[ "$(grep -c "^$KERNEL " "$T/out")" = 7 ] || fail "table: $(cat "$T/out")"
expect_out "^6.1.0-99-amd64  *x86_64  *ubuntu  *any  *$V_OLD  *-  *default$"
expect_out "^$KERNEL  *x86_64  *ubuntu  *any  *$V_BRANCH_OLD  *-  *-$"
expect_out "^$KERNEL  *x86_64  *cos  *17800.66.78  *$V_OLD  *-  *default$"
expect_out "^8 package(s): 2 kernel(s), 4 version(s)$"
expect_rc 0 coverage "${R[@]}" --json
python3 "$SRC/tests/tools/json-contract.py" "$SRC/docs/json.md" '`coverage --json`' "$T/out"
python3 - "$T/out" "$KERNEL" <<'EOF' || fail "coverage --json: $(cat "$T/out")"
import json, sys
o = json.load(open(sys.argv[1]))
k = sys.argv[2]
# By kernel, arch, OS, build (absent first), then the newest version first.
rows = [(p["kernel"], p["arch"], p["os"], p["os_build"], p["driver_version"]) for p in o["packages"]]
assert rows == [(k, "aarch64", None, None, "560.1.1"), (k, "aarch64", None, None, "550.90.07"),
                (k, "x86_64", None, None, "550.90.07"), (k, "x86_64", None, None, "535.261.03"),
                (k, "x86_64", "cos", None, "535.261.03"),
                (k, "x86_64", "cos", "17800.66.78", "535.261.03"),
                (k, "x86_64", "ubuntu", None, "535.183.01"),
                ("6.1.0-99-amd64", "x86_64", "ubuntu", None, "535.261.03")], rows
assert o["kernels"] == [k, "6.1.0-99-amd64"], o["kernels"]
v = {d["version"]: d for d in o["versions"]}
assert v["550.90.07"]["supported_pci_ids"] == ["10de:2330"], v
assert v["535.261.03"]["supported_pci_ids"] is None and v["535.261.03"]["tags"] == ["default"], v
EOF

# Usage: half a node image, a malformed GPU id, a malformed request.
expect_rc 2 coverage "${R[@]}" --kernel "$KERNEL"
expect_err "a node image is named by --os and --kernel together"
expect_rc 2 coverage "${R[@]}" --os cos --kernel "$KERNEL" --gpu 10de-2330
expect_err "--gpu '10de-2330' is not a PCI id like 10de:2330"
expect_rc 2 coverage "${R[@]}" --os cos --kernel "$KERNEL" --driver-version v1
# An unreachable repository is not "not served": exit 4, as install.
expect_rc 4 coverage --repo "file://$T/nothing" --repo-key "$FIX/keys/pub.pem" --fetch-timeout 2 \
    --fetch-retries 0 --os cos --kernel "$KERNEL"

# Hostile file:// repositories: a FIFO or a directory at index.json (also named through
# file://localhost and %-escapes), a FIFO at its signature: refused at once with exit 4,
# naming the file and the fix; never waited on (libcurl's file:// opens with a blocking
# open: the old run hung there, past --fetch-timeout; hence the timeout). A mirror whose
# index a copy left half-written does not verify (exit 5).
bounded() {
    set +e
    timeout 60 "$BIN" --root "$T/root" coverage --repo-key "$FIX/keys/pub.pem" --fetch-timeout 5 \
        --fetch-retries 0 "$@" >"$T/out" 2>"$T/err"
    RC=$?
    set -e
}
mkdir -p "$T/hostile/fifo" "$T/hostile/dir y/index.json" "$T/hostile/sig"
mkfifo "$T/hostile/fifo/index.json"
cp "$T/repo/index.json" "$T/hostile/sig/"
mkfifo "$T/hostile/sig/index.json.sig"
for url in "file://$T/hostile/fifo" "file://localhost$T/hostile/fifo" "file://$T/hostile/dir%20y" \
    "file://$T/hostile/sig"; do
    bounded --repo "$url"
    [ "$RC" = 4 ] || { cat "$T/err"; fail "$url: exit $RC, expected 4"; }
    expect_err "is not a regular file: Invalid argument; fix: a file:// mirror holds the repository's files themselves"
done
mkdir -p "$T/hostile/torn"
head -c 300 "$T/repo/index.json" >"$T/hostile/torn/index.json"
cp "$T/repo/index.json.sig" "$T/hostile/torn/"
bounded --repo "file://$T/hostile/torn"
[ "$RC" = 5 ] || { cat "$T/err"; fail "a half-written index: exit $RC, expected 5"; }
expect_err "signature does not verify"
