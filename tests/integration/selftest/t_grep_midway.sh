# SPDX-License-Identifier: Apache-2.0
# Harness self-test fixture: a bare failing grep in the middle of a test fails it.
echo present >"$T/file"
grep -q absent "$T/file"
echo "after: reached although grep failed"
