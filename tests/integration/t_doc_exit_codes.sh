# docs/exit-codes.md renders every exit code of installer/util/err.h as a row of its table
# (a row after the table's end renders as text: rows 8 and 9 once did), and --help names
# every code.
CHECK="$SRC/tests/tools/exit-codes-doc.py"
python3 "$CHECK" "$SRC/docs/exit-codes.md" "$SRC/installer/util/err.h"
# The check fails on a row that falls out of the table, and on a code the table lacks.
python3 - "$SRC/docs/exit-codes.md" "$T/split.md" "$T/short.md" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
i = next(n for n, l in enumerate(lines) if l.startswith("| 8 |"))
split = lines[:i] + [""] + lines[i:]
open(sys.argv[2], "w").write("\n".join(split) + "\n")
open(sys.argv[3], "w").write("\n".join(lines[:i] + lines[i + 1:]) + "\n")
PY
python3 "$CHECK" "$T/split.md" "$SRC/installer/util/err.h" 2>"$T/why" && fail "a row outside the table passed"
grep -q "exit code 8 has no row" "$T/why" || fail "$(cat "$T/why")"
python3 "$CHECK" "$T/short.md" "$SRC/installer/util/err.h" 2>/dev/null && fail "a missing row passed"
# --help lists the same codes.
expect_rc 0 --help
codes=$(sed -n 's/^Exit codes: //p' "$T/out" | grep -o '[0-9]\+ [a-z]' | cut -d' ' -f1 | tr '\n' ' ')
want=$(sed -n 's/^\s*EXIT_[A-Z_]* *= *\([0-9]*\),.*/\1/p' "$SRC/installer/util/err.h" | tr '\n' ' ')
assert_eq "$codes" "$want" "exit codes in --help"
