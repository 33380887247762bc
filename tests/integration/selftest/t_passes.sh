# SPDX-License-Identifier: Apache-2.0
# Harness self-test fixture: a test whose commands all succeed passes, and a command whose
# failure is handled (|| true, if) does not fail it.
grep -q absent /dev/null || true
if false; then echo never; fi
[ -n "$T" ] && [ -d "$T" ]
