# SPDX-License-Identifier: Apache-2.0
# serial: the harness self-test's fixture of a test that runs alone
# Harness self-test fixture: a test marked "# serial" starts once every test that shares
# the machine has finished (each writes its time, $T.ms, when it ends).
for d in "$(dirname "$T")"/t_*/; do
    n=$(basename "$d")
    [ "$n" = t_serial_alone ] || [ -e "$(dirname "$T")/$n.ms" ] || fail "$n is still running"
done
echo "alone: every other test started so far has finished"
