# SPDX-License-Identifier: Apache-2.0
# Sourced by the test scripts that run under `set -o pipefail` (scripts/check-pipes lists
# them); never run alone.
#
# grepq [GREP-OPTIONS] PATTERN: grep -q at the end of a pipe, reading the pipe to its end.
#
# grep -q leaves at its first match. A writer that writes again after that gets EPIPE or
# dies of SIGPIPE, and under pipefail the pipeline then fails although the line was there
# (and `! WRITER | grep -q LINE` passes although it was). Whether the writer writes again
# after grep has left is the scheduler's choice: curl writes each piece of the body as it
# arrives, a program writes its stdio buffer each 4 KiB, so the test passes on an idle
# machine and fails on a loaded one (CI of stop 58: image-test's `curl /metrics | grep -q`
# failed with curl's exit 23). grepq keeps the pipe open until the writer is done, so the
# pipeline's status is the writer's and grep's, never the scheduler's.
grepq() {
    local rc=0
    grep -q "$@" || rc=$?
    cat >/dev/null
    return $rc
}
