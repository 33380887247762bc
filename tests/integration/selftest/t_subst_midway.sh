# SPDX-License-Identifier: Apache-2.0
# Harness self-test fixture: a failing command inside a command substitution fails the test.
x=$(false; echo "after: reached inside the substitution")
echo "$x"
