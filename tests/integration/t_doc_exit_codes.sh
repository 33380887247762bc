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
# The wait (--wait-for-package, on in both DaemonSets) in the exit-3 row and among the
# points where a signal ends a run; the tools that build and publish linked to the sections
# that give their exit codes, each section saying them.
python3 - "$SRC/docs" <<'PY' || fail "docs/exit-codes.md and the wait or the tools' codes"
import os, re, sys
docs = sys.argv[1]
text = open(os.path.join(docs, "exit-codes.md")).read()
row3 = next(l for l in text.splitlines() if l.startswith("| 3 |"))
assert "--wait-for-package" in row3 and "--wait-for-package-max" in row3, "exit 3: no wait"
stopped = text[text.index("**130, 143: stopped.**"):].split("\n\n")[0]
assert "--wait-for-package" in stopped, "130/143: the wait not named"

def section(doc, anchor):
    lines = open(os.path.join(docs, doc)).read().splitlines()
    for i, l in enumerate(lines):
        m = re.match(r"(#+) (.*)", l)
        slug = m and re.sub(r"[^a-z0-9 -]", "", m.group(2).lower()).replace(" ", "-")
        if slug == anchor:
            end = next((j for j in range(i + 1, len(lines))
                        if re.match(r"#{1,%d} " % len(m.group(1)), lines[j])), len(lines))
            return "\n".join(lines[i:end])
    raise AssertionError("%s has no section #%s" % (doc, anchor))

for tool in ("scripts/supply", "make-repo publish", "fetch-cos-artifacts"):
    m = re.search(r"`%s`[^`]*?\]\(([\w-]+\.md)#([\w-]+)\)" % re.escape(tool), text)
    assert m, "%s: no link to its exit codes" % tool
    sec = section(m.group(1), m.group(2))
    assert re.search(r"\bExit( status:)? 0\b", sec), "%s: %s#%s says no exit codes" % (
        (tool,) + m.groups())
PY
