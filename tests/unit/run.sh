#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# make unit: each unit test program (cmocka) run in turn, under $RUN_TARGET when set (qemu
# for arm64), its output read for cmocka's summary, and one total line at the end:
#
#   unit: 43 programs, 812 tests passed, 0 failed
#
# A program that exits non-zero without saying which tests failed (it crashed, or a
# sanitizer stopped it) counts as one failure. Exit 1 when anything failed. QUIET=1 (make
# -s) shows a program's output only when it failed; otherwise every program's, under its
# name, as before.
programs=0 passed=0 failed=0 skipped=0
bad=()
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT
for t in "$@"; do
    programs=$((programs + 1))
    [ "${QUIET:-0}" = 1 ] || echo "== $t"
    # shellcheck disable=SC2086 # RUN_TARGET is a command and its arguments
    if [ "${QUIET:-0}" = 1 ]; then
        $RUN_TARGET "$t" >"$log" 2>&1
        rc=$?
    else
        $RUN_TARGET "$t" 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
    fi
    # cmocka's summary: "[  PASSED  ] N test(s).", "[  FAILED  ] N test(s), listed
    # below:", "[  SKIPPED ] N test(s)." (a program may run more than one group).
    read -r p f s < <(awk '$4 ~ /^[0-9]+$/ && $5 ~ /^test\(s\)/ {
            n[$2] += $4 } END { print n["PASSED"] + 0, n["FAILED"] + 0, n["SKIPPED"] + 0 }' "$log")
    if [ "$f" -gt 0 ] || [ "$rc" -ne 0 ]; then
        bad+=("$t")
        if [ "${QUIET:-0}" = 1 ]; then
            echo "== $t"
            cat "$log"
        fi
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        echo "unit: $t exited with status $rc without cmocka's list of failed tests"
    fi
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done
echo "unit: $programs programs, $passed tests passed, $failed failed$(
    [ "$skipped" -eq 0 ] || echo ", $skipped skipped")${bad[*]:+ (in ${bad[*]})}"
[ "$failed" -eq 0 ]
