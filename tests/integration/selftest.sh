#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The integration harness's self-test: run.sh, given fixture tests that fail in the middle
# (tests/integration/selftest/), must report each one FAIL, never run past the failing
# command, report the passing one ok, and exit non-zero. selftest.sh exits 0 when it does.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT

set +e
NDI_NO_FIXTURES=1 NDI_TESTS_DIR="$SRC/tests/integration/selftest" VERBOSE=1 \
    "$SRC/tests/integration/run.sh" /bin/true /bin/true >"$out" 2>&1
rc=$?
set -e

bad=0
no() {
    echo "harness self-test: $*" >&2
    bad=1
}
[ $rc -ne 0 ] || no "run.sh exited 0 although tests failed"
for t in t_assert_midway t_grep_midway t_subst_midway; do
    grep -q "^FAIL $t " "$out" || no "$t was not reported FAIL"
done
grep -q "^ok   t_passes " "$out" || no "t_passes was not reported ok"
! grep -q "after: reached" "$out" || no "a test ran past its failing command"
grep -qx "integration: 1 passed, 3 failed in [0-9]* s" "$out" || no "wrong totals"
if [ $bad -ne 0 ]; then
    sed 's/^/  | /' "$out" >&2
    exit 1
fi
echo "harness self-test: 3 failing fixtures reported FAIL, 1 passing reported ok, exit $rc"
