# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/packaging/run.sh and tests/vm/run.sh, which define fail(); never run
# alone.
#
# wait_port FILE PID WHAT: until the server PID (a python stand-in) has written its port to
# FILE; 60 s at most, for a python start at nice 19 beside a full make check. Fails naming
# WHAT when the server exits first or the 60 s pass, not later with an empty port.
wait_port() {
    local deadline=$(($(date +%s) + 60))
    until [ -s "$1" ]; do
        kill -0 "$2" 2>/dev/null || [ -s "$1" ] || fail "$3 exited before it wrote its port"
        [ "$(date +%s)" -lt "$deadline" ] || fail "$3 wrote no port in 60 s"
        sleep 0.1
    done
}
