#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The integration harness's self-test: run.sh, given fixture tests that fail in the middle
# (tests/integration/selftest/), must report each one FAIL, never run past the failing
# command, report the passing ones ok, and exit non-zero; one test at a time and
# NDI_JOBS=2 at once, where each test's lines come whole, in the order the tests started,
# and a test marked "# serial" runs alone, after the others; with NDI_SANITIZED=1 (the ASan
# build), a test marked "# plain build" does not run. selftest.sh exits 0 when it does.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/tools/pipes.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT

bad=0
no() {
    echo "harness self-test (NDI_JOBS=$jobs): $*" >&2
    bad=1
}
# check JOBS EXPECTED-ORDER...: runs the fixtures with JOBS at once and checks the report;
# SANITIZED=1 in the environment: as for the ASan build.
check() {
    jobs=$1
    shift
    local rc passed=4
    [ -z "${SANITIZED:-}" ] || passed=3
    set +e
    NDI_SANITIZED=${SANITIZED:-} NDI_JOBS=$jobs NDI_NO_FIXTURES=1 NDI_TESTS_DIR="$SRC/tests/integration/selftest" VERBOSE=1 \
        "$SRC/tests/integration/run.sh" /bin/true /bin/true >"$out" 2>&1
    rc=$?
    set -e
    [ $rc -ne 0 ] || no "run.sh exited 0 although tests failed"
    for t in t_assert_midway t_grep_midway t_subst_midway t_serial_midway; do
        grep -q "^FAIL $t " "$out" || no "$t was not reported FAIL"
    done
    for t in t_passes t_concurrent t_serial_alone; do
        grep -q "^ok   $t " "$out" || no "$t was not reported ok"
    done
    ! grep -q "after: reached" "$out" || no "a test ran past its failing command"
    grep -qx "integration: $passed passed, 4 failed in [0-9]* s" "$out" || no "wrong totals"
    if [ -n "${SANITIZED:-}" ]; then
        ! grep -q "^[a-zA-Z]* *t_plain_build \|plain build: ran" "$out" || no "t_plain_build ran for the ASan build"
        grep -qx "integration: ASan build: t_plain_build left to the plain build (# plain build)" "$out" ||
            no "the ASan run did not say which test it left to the plain build"
    else
        grep -A1 "^ok   t_plain_build " "$out" | grepq "| plain build: ran" ||
            no "t_plain_build did not run for the plain build"
    fi
    [ "$(sed -n 's/^\(ok  \|FAIL\) \(t_[a-z_]*\) .*/\2/p' "$out" | tr '\n' ' ')" = "$* " ] ||
        no "the tests were not reported in the order they started: $*"
    # Each passing test's log follows its own ok line (VERBOSE): nothing interleaves.
    grep -A1 "^ok   t_concurrent " "$out" | grepq "| concurrent: done" ||
        no "t_concurrent's log does not follow its ok line"
    grep -A1 "^ok   t_serial_alone " "$out" | grepq "| alone: every other test" ||
        no "t_serial_alone's log does not follow its ok line"
    if [ $bad -ne 0 ]; then
        sed 's/^/  | /' "$out" >&2
        exit 1
    fi
    echo "harness self-test (NDI_JOBS=$jobs${SANITIZED:+, as ASan}): 4 failing fixtures reported FAIL, $passed passing reported ok, in order, exit $rc"
}

check 1 t_assert_midway t_concurrent t_grep_midway t_passes t_plain_build t_serial_alone t_serial_midway t_subst_midway
# t_concurrent ends after t_passes (it waits for it) and is still reported first; the two
# marked "# serial" run last, alone.
check 2 t_assert_midway t_concurrent t_grep_midway t_passes t_plain_build t_subst_midway t_serial_alone t_serial_midway
SANITIZED=1 check 2 t_assert_midway t_concurrent t_grep_midway t_passes t_subst_midway t_serial_alone t_serial_midway
