#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the integration tests against the real binary: run.sh BINARY FAKEKERNEL.so [TEST...]
# VERBOSE=1 shows the output of passing tests too; NDI_FAIL_LINES=N the last N lines (40) of
# a failing one. KUBECTL=PATH runs t_manifest and t_runbooks with that kubectl (/usr/bin
# comes first on PATH here), e.g. Debian 12's 1.20.2 unpacked beside a newer one.
# Each tests/integration/t_*.sh runs in a subshell with `set -e`, in a fresh scratch
# directory; the run fails if any test fails.
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
FIX=$WORK/fixtures
# Built beside the fake kernel (tests/tools/crashpoint.c).
CRASHPOINT=$(dirname "$FAKEKERNEL")/crashpoint.so
export BIN SRC FIX FAKEKERNEL CRASHPOINT
trap 'rm -rf "$WORK"' EXIT

. "$SRC/tests/integration/lib.sh"

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
    KERNEL_RELEASE=$OTHER_KERNEL "$SRC/scripts/make-standin-driver" "$V_NEW" "$FIX/odrv" 4
    sign_modules "$FIX/odrv/kernel"
    "$SRC/scripts/make-repo" pack "$FIX/odrv" "$FIX/opkg.tar.zst"
}

# The harness's self-test (tests/integration/selftest/) runs fixture tests that need none.
[ -n "${NDI_NO_FIXTURES:-}" ] || build_fixtures

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
    mapfile -t tests < <(cd "$TESTS_DIR" && ls t_*.sh | sed 's/\.sh$//')
fi

pass=0
failed=()
start=$(date +%s)
for name in "${tests[@]}"; do
    T="$WORK/$name"
    mkdir -p "$T"
    t0=$(date +%s%N)
    # Not `if ( set -e; ... )`: bash ignores errexit in a subshell whose status a
    # condition tests, so a failing command in the middle of a test would not fail it.
    # The test runs as a command of its own and its status is read afterwards.
    set +e
    (
        set -e
        shopt -s inherit_errexit
        export T
        cd "$T"
        . "$TESTS_DIR/$name.sh"
    ) >"$T.log" 2>&1
    rc=$?
    set -e
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1))
        printf 'ok   %-40s %5d ms\n' "$name" $((($(date +%s%N) - t0) / 1000000))
        [ -z "${VERBOSE:-}" ] || sed 's/^/     | /' "$T.log"
    else
        failed+=("$name")
        printf 'FAIL %-40s (exit %d)\n' "$name" $rc
        sed 's/^/     | /' "$T.log" | tail -"${NDI_FAIL_LINES:-40}"
    fi
done
echo "integration: $pass passed, ${#failed[@]} failed in $(($(date +%s) - start)) s"
[ ${#failed[@]} -eq 0 ]
