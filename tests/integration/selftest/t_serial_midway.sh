# SPDX-License-Identifier: Apache-2.0
# serial: the harness self-test's fixture of a failing test that runs alone
# Harness self-test fixture: a test that runs alone and fails in the middle fails the run.
false
echo "after: reached although false failed"
