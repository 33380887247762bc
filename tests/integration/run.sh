#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the integration tests against the real binary: run.sh BINARY FAKEKERNEL.so [TEST...]
# VERBOSE=1 shows the output of passing tests too; NDI_FAIL_LINES=N the last N lines (40) of
# a failing one. KUBECTL=PATH runs t_manifest and t_runbooks with that kubectl (/usr/bin
# comes first on PATH here), e.g. Debian 12's 1.20.2 unpacked beside a newer one.
# Each tests/integration/t_*.sh runs in a subshell with `set -e`, in a fresh scratch
# directory; the run fails if any test fails. NDI_JOBS=N (2) tests run at once; a test whose
# leading comment block has a line "# serial: WHY" runs alone, after the others (see
# docs/testing.md, "Tests that run alone"); one with "# plain build: WHY" is not run for
# the ASan build. Each test's lines are printed whole, in the order
# the tests started: those that share the machine, then those that run alone.
set -euo pipefail

# Debian's python3 first: a version manager's shim on PATH costs a fork chain per call.
export PATH="/usr/bin:/bin:$PATH"
# Servers are on 127.0.0.1 and the proxy tests set their own: a proxy of the machine's
# would stand between the installer and the test servers.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
BIN=$(realpath "${1:?usage: run.sh BINARY FAKEKERNEL.so [TEST...]}")
FAKEKERNEL=$(realpath "${2:?usage: run.sh BINARY FAKEKERNEL.so [TEST...]}")
shift 2
if [ -n "${KUBECTL:-}" ]; then
    # A path, made absolute (each test runs in its own directory), or a command on PATH.
    case $KUBECTL in */*) KUBECTL=$(realpath -s "$KUBECTL") ;; esac
    export KUBECTL
fi
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# Where the t_*.sh files are: this directory, or the self-test's fixtures.
TESTS_DIR=${NDI_TESTS_DIR:-$SRC/tests/integration}
WORK=$(mktemp -d /tmp/ndi-it.XXXXXX)
# Built beside the fake kernel (tests/tools/crashpoint.c).
CRASHPOINT=$(dirname "$FAKEKERNEL")/crashpoint.so
# NDI_SANITIZED=1 when BIN is the ASan build (make asan): the crash tests take fewer kill
# points there (docs/testing.md, "The sanitizer pass"). grep reads all of ldd's output (with
# -q leaving at the first match, ldd could die of SIGPIPE and fail the pipeline).
# (selftest.sh sets it itself, for a BIN that is no ASan build.)
NDI_SANITIZED=${NDI_SANITIZED:-}
if [ -z "$NDI_SANITIZED" ] && ldd "$BIN" | grep libasan >/dev/null; then NDI_SANITIZED=1; fi
export BIN SRC FAKEKERNEL CRASHPOINT NDI_SANITIZED
# Tests still running when the runner stops early (interrupted, or a runner error) are
# stopped with what they started, before their scratch directories go.
declare -A index_of=()
status=()
kill_tree() {
    local c
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
    kill "$1" 2>/dev/null || true
}
cleanup() {
    local pid
    [ -z "${ticker:-}" ] || kill_tree "$ticker"
    for pid in "${!index_of[@]}"; do
        [ -n "${status[${index_of[$pid]}]:-}" ] || kill_tree "$pid"
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

. "$SRC/tests/integration/lib.sh"

JOBS=${NDI_JOBS:-2}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || {
    echo "run.sh: NDI_JOBS must be a whole number of tests at once, 1 or more, not '$JOBS'" >&2
    exit 2
}

# Fixtures shared by all tests: a signing key pair, an untrusted one, three stand-in drivers.
build_fixtures() {
    mkdir -p "$FIX/keys"
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$FIX/keys/key.pem" 2>/dev/null
    openssl pkey -in "$FIX/keys/key.pem" -pubout -out "$FIX/keys/pub.pem"
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$FIX/keys/other.pem" 2>/dev/null
    openssl pkey -in "$FIX/keys/other.pem" -pubout -out "$FIX/keys/other-pub.pem"
    # Module signing: a key pair the tests pin, and one they do not.
    "$SRC/tests/tools/make-module-key" "Test modkey" "$FIX/keys/modkey"
    "$SRC/tests/tools/make-module-key" "Test othermodkey" "$FIX/keys/othermodkey"
    for v in "$V_OLD" "$V_NEW" "$V_BRANCH_OLD"; do
        "$SRC/scripts/make-standin-driver" "$v" "$FIX/drv-$v" 512
        "$SRC/scripts/make-repo" pack "$FIX/drv-$v" "$FIX/pkg-$v.tar.zst"
    done
    # Packages whose modules are signed with the pinned module key, and one built for
    # another kernel.
    for v in "$V_OLD" "$V_NEW"; do
        cp -a "$FIX/drv-$v" "$FIX/sdrv-$v"
        sign_modules "$FIX/sdrv-$v/kernel"
        "$SRC/scripts/make-repo" pack "$FIX/sdrv-$v" "$FIX/spkg-$v.tar.zst"
    done
    # The kernel's own modules mkkernel puts in a host root, for both kernels.
    for k in "$KERNEL" "$OTHER_KERNEL"; do
        mkdir -p "$FIX/kmod/$k"
        for m in drm drm_kms_helper nouveau; do stub_kmod "$m" "$k" "$FIX/kmod/$k/$m.ko"; done
    done
    KERNEL_RELEASE=$OTHER_KERNEL "$SRC/scripts/make-standin-driver" "$V_NEW" "$FIX/odrv" 4
    sign_modules "$FIX/odrv/kernel"
    "$SRC/scripts/make-repo" pack "$FIX/odrv" "$FIX/opkg.tar.zst"
}

# The fixtures are data, the same for every binary under test: they are built once for the
# inputs that make them and kept in build/fixtures/KEY (NDI_FIXTURES_CACHE: another parent),
# where the plain and the ASan suites and later runs find them. KEY is a digest of those
# inputs: the scripts and test tools that build them, lib.sh (the versions, sign_modules),
# build_fixtures itself, and the versions of the tools they call.
fixtures_key() {
    {
        cat "$SRC/scripts/make-standin-driver" "$SRC/scripts/make-repo" \
            "$SRC/scripts/make-signing-key" "$SRC/tests/tools/make-module-key" \
            "$SRC/tests/integration/lib.sh" "$SRC"/tests/standin/*
        declare -f build_fixtures
        echo "$SIGN_FILE"
        cc --version
        openssl version
        python3 --version
        zstd --version
    } 2>&1 | sha256sum | cut -c1-16
}

# What the fixtures hold, to the byte: recorded when they are built, compared before a run
# uses them and after it (a test that changed them fails the run: other runs share them).
fixtures_manifest() {
    (cd "$1" && find . ! -name MANIFEST -printf '%p %y %m %s %l\n' | LC_ALL=C sort &&
        find . -type f ! -name MANIFEST -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
}
# fixtures_intact DIR: DIR is a whole set, as its manifest recorded it.
fixtures_intact() {
    [ -f "$1/MANIFEST" ] && fixtures_manifest "$1" >"$WORK/manifest" &&
        cmp -s "$WORK/manifest" "$1/MANIFEST"
}

# Sets FIX to a whole set of fixtures for this tree, building it if there is none.
use_fixtures() {
    local cache=${NDI_FIXTURES_CACHE:-$SRC/build/fixtures} key
    key=$(fixtures_key)
    FIX=$cache/$key
    if fixtures_intact "$FIX"; then
        touch "$FIX" # in use: kept while other sets age out
        echo "integration: fixtures $FIX (reused)"
        return 0
    fi
    [ ! -e "$FIX" ] || echo "integration: fixtures $FIX differ from their manifest: built again"
    mkdir -p "$cache"
    # Built aside and renamed into place, so that a run never sees half of them; leftovers
    # of killed builds and sets for other inputs go after a day.
    find "$cache" -mindepth 1 -maxdepth 1 -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
    local t0=$SECONDS tmp
    tmp=$(mktemp -d "$cache/.build-$key.XXXXXX")
    FIX=$tmp build_fixtures
    fixtures_manifest "$tmp" >"$tmp/MANIFEST"
    rm -rf "$FIX"
    mv -T "$tmp" "$FIX" 2>/dev/null || rm -rf "$tmp" # another run's, built as this one
    echo "integration: fixtures $FIX (built in $((SECONDS - t0)) s)"
}

# The harness's self-test (tests/integration/selftest/) runs fixture tests that need none.
FIX=$WORK/fixtures
[ -n "${NDI_NO_FIXTURES:-}" ] || use_fixtures
export FIX

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
    mapfile -t tests < <(cd "$TESTS_DIR" && ls t_*.sh | sed 's/\.sh$//')
fi

# has_mark NAME MARK: the test's leading comment block has a line "# MARK: WHY".
has_mark() {
    awk -v m="# $2" '!/^#/ { exit } index($0, m) == 1 && substr($0, length(m) + 1, 1) ~ /^(:| |)$/ {
        found = 1; exit } END { exit !found }' "$TESTS_DIR/$1.sh"
}
# "# serial": the test must not share the machine.
runs_alone() { has_mark "$1" serial; }
# "# plain build": the test checks what the binary's memory safety does not touch (a
# document, a manifest, another memory checker), or runs again, only slower, code that other
# tests run under ASan (its WHY names them): the ASan build leaves it to the plain one.
if [ -n "$NDI_SANITIZED" ]; then
    kept=()
    plain_only=()
    for name in "${tests[@]}"; do
        if has_mark "$name" "plain build"; then plain_only+=("$name"); else kept+=("$name"); fi
    done
    [ ${#plain_only[@]} -eq 0 ] ||
        echo "integration: ASan build: ${plain_only[*]} left to the plain build (# plain build)"
    tests=(${kept[@]+"${kept[@]}"})
fi
order=()
shared=${#tests[@]}
if [ "$JOBS" -gt 1 ]; then
    alone=()
    for name in "${tests[@]}"; do
        if runs_alone "$name"; then alone+=("$name"); else order+=("$name"); fi
    done
    shared=${#order[@]}
    order+=(${alone[@]+"${alone[@]}"})
    echo "integration: ${#order[@]} tests, $JOBS at a time; $((${#order[@]} - shared)) of them alone, after the others"
else
    order=("${tests[@]}")
fi

# Each test's wrapper says on this FIFO that it ended ("I STATUS"): the runner reads the
# ends as they come (`wait -n` can miss a job that ended while the runner was busy). A
# ticker writes "tick" there every 5 s, so that the runner also notices a wrapper that died
# without a word; the runner's reads never time out (`read -t` can cut a line in two).
mkfifo "$WORK/.ended"
exec {ended}<>"$WORK/.ended"
(
    exec </dev/null >/dev/null 2>&1
    while sleep 5 && kill -0 $$; do echo tick >&"$ended"; done
) &
ticker=$!

# start I: runs test order[I] in the background. Its output goes to $T.log, its time (ms) to
# $T.ms, its status to $T.rc, and then "I STATUS" to the FIFO.
start_test() {
    local name=${order[$1]}
    local T="$WORK/$name"
    mkdir -p "$T"
    (
        set +e
        t0=$(date +%s%N)
        # Not `if ( set -e; ... )`: bash ignores errexit in a subshell whose status a
        # condition tests, so a failing command in the middle of a test would not fail it.
        # The test runs as a command of its own and its status is read afterwards.
        (
            set -e
            shopt -s inherit_errexit
            export T
            cd "$T"
            . "$TESTS_DIR/$name.sh"
        ) >"$T.log" 2>&1 {ended}>&-
        rc=$?
        echo $((($(date +%s%N) - t0) / 1000000)) >"$T.ms"
        echo "$rc" >"$T.rc"
        echo "$1 $rc" >&"$ended"
    ) &
    index_of[$!]=$1
    pid_of[$1]=$!
}

# A wrapper that is gone without a word (killed from outside): its test failed.
reap_silent() {
    local i rc
    for i in "${!pid_of[@]}"; do
        [ -z "${status[$i]:-}" ] && ! kill -0 "${pid_of[$i]}" 2>/dev/null &&
            [ ! -e "$WORK/${order[$i]}.rc" ] || continue
        rc=0
        wait "${pid_of[$i]}" 2>/dev/null || rc=$?
        [ "$rc" -ne 0 ] || rc=1
        echo "run.sh: the wrapper of ${order[$i]} ended without its status" >>"$WORK/${order[$i]}.log"
        status[$i]=$rc
        running=$((running - 1))
    done
}

# report I: the test's lines, whole: ok or FAIL with its time, and its log (the tail of it
# when it failed, all of it with VERBOSE).
pass=0
failed=()
report() {
    local name=${order[$1]} rc=${status[$1]}
    local T="$WORK/$name" ms
    ms=$(cat "$T.ms" 2>/dev/null || echo 0)
    if [ "$rc" -eq 0 ]; then
        pass=$((pass + 1))
        printf 'ok   %-40s %5d ms\n' "$name" "$ms"
        [ -z "${VERBOSE:-}" ] || sed 's/^/     | /' "$T.log"
    else
        failed+=("$name")
        printf 'FAIL %-40s %5d ms (exit %d)\n' "$name" "$ms" "$rc"
        sed 's/^/     | /' "$T.log" | tail -"${NDI_FAIL_LINES:-40}"
    fi
}

pid_of=()
next=0
shown=0
running=0
start=$(date +%s)
while [ "$shown" -lt ${#order[@]} ]; do
    # The shared tests, JOBS at a time; then each of the others with the machine to itself.
    while [ "$next" -lt ${#order[@]} ] &&
        { [ "$next" -lt "$shared" ] && [ "$running" -lt "$JOBS" ] || [ "$running" -eq 0 ]; }; do
        start_test "$next"
        next=$((next + 1))
        running=$((running + 1))
    done
    read -r i rc <&"$ended"
    if [ "$i" = tick ]; then
        reap_silent
    elif [ -n "${pid_of[$i]:-}" ] && [ -z "${status[$i]:-}" ]; then
        wait "${pid_of[$i]}" 2>/dev/null || true
        status[$i]=$rc
        running=$((running - 1))
    fi
    while [ "$shown" -lt ${#order[@]} ] && [ -n "${status[$shown]:-}" ]; do
        report "$shown"
        shown=$((shown + 1))
    done
done
if [ -z "${NDI_NO_FIXTURES:-}" ] && ! fixtures_intact "$FIX"; then
    failed+=("(fixtures)")
    echo "FAIL the shared fixtures in $FIX changed during the run: a test wrote into \$FIX"
fi
echo "integration: $pass passed, ${#failed[@]} failed in $(($(date +%s) - start)) s"
[ ${#failed[@]} -eq 0 ]
