# SPDX-License-Identifier: Apache-2.0
# Harness self-test fixture: tests run side by side when NDI_JOBS > 1. This one waits until
# t_passes, started after it, has finished, so it ends last; run.sh still reports it
# before t_passes, in the order the tests started. Alone (NDI_JOBS=1) it just passes.
if [ "$JOBS" -gt 1 ]; then
    wait_for "t_passes, beside this test, to finish" 30 test -e "$(dirname "$T")/t_passes.ms"
fi
echo "concurrent: done"
