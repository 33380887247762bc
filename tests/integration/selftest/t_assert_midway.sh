# SPDX-License-Identifier: Apache-2.0
# Harness self-test fixture: a Python assertion in the middle of a test fails it.
echo before
python3 - <<PY
assert False, "the harness must see this"
PY
echo "after: reached although the assertion failed"
