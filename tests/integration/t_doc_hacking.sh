# docs/hacking.md's folder table names every .c and .h of installer/ in its folder's row,
# its rows come in check-layers' ORDER, and the order its rules state is that ORDER; the
# check fails on a file the table misses, on two rows swapped, on a folder left out of the
# stated order, and on a folder check-layers adds.
CHECK="$SRC/tests/tools/hacking-doc.py"
DOC="$SRC/docs/hacking.md"
LAYERS="$SRC/scripts/check-layers"
python3 "$CHECK" "$DOC" "$SRC/installer" "$LAYERS" 2>"$T/why" || fail "the tree: $(cat "$T/why")"

# expect_red WHAT PATTERN DOC SRC LAYERS: the check fails and names PATTERN.
expect_red() {
    local what=$1 pattern=$2
    shift 2
    python3 "$CHECK" "$@" 2>"$T/why" && fail "the check passed $what"
    grep -q -- "$pattern" "$T/why" || fail "$what: $(cat "$T/why")"
}

# A new file the table does not name (a header named by its .c counts: kmods.h is).
mkdir -p "$T/src"
cp -a "$SRC/installer/." "$T/src/"
touch "$T/src/kernel/kprobe.c"
expect_red "a file the table misses" \
    'installer/kernel/kprobe.c is not named in the `kernel/` row' \
    "$DOC" "$T/src" "$LAYERS"
rm "$T/src/kernel/kprobe.c"
touch "$T/src/util/probe.h"
expect_red "a header without a .c" 'installer/util/probe.h is not named' "$DOC" "$T/src" "$LAYERS"

# Two rows swapped.
python3 - "$DOC" "$T/swapped.md" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")
i = next(n for n, l in enumerate(lines) if l.startswith("| `host/` |"))
j = next(n for n, l in enumerate(lines) if l.startswith("| `source/` |"))
lines[i], lines[j] = lines[j], lines[i]
open(sys.argv[2], "w").write("\n".join(lines))
PY
expect_red "rows out of order" "the table's rows are in the order util < source < host" \
    "$T/swapped.md" "$SRC/installer" "$LAYERS"

# The stated order without kube and agent.
sed 's/kernel < expose < kube < agent < cmd\./kernel < expose < cmd./' "$DOC" >"$T/stated.md"
cmp -s "$DOC" "$T/stated.md" && fail "no order sentence to change"
expect_red "a stated order that is not ORDER" \
    'the rules state the order util < host < source < stage < kernel < expose < cmd;' \
    "$T/stated.md" "$SRC/installer" "$LAYERS"

# check-layers gains a folder: the table has no row for it, the stated order differs.
sed 's/^ORDER = \["util", /ORDER = ["util", "probe", /' "$LAYERS" >"$T/check-layers"
mkdir "$T/src/probe"
expect_red "a folder without a row" 'installer/probe/ has no row' "$DOC" "$T/src" "$T/check-layers"
grep -q "check-layers' ORDER is util < probe < host" "$T/why" || fail "the order: $(cat "$T/why")"
