# scripts/check-layers (make lint) on a copy of the tree: the tree as it is passes, and each
# rule fails on the break it exists for: a stage's inner header included from cmd/, an
# include of a folder above, a cycle by includes, a cycle by a call alone (a declaration
# written by hand, seen only in the objects), a cycle between two files of one folder, a
# function over 80 lines, one that takes more than 6 parameters, a file over 1,000 lines,
# and a face that includes a header of its own folder, does not declare what another
# folder calls, or declares what only its own folder calls.
CHECK=$SRC/scripts/check-layers
OBJS=$(dirname "$BIN")
[ -d "$OBJS/installer" ] || fail "no objects under $OBJS/installer"

# fresh: a copy of the sources and objects to break one way. The objects are hard links:
# one is only ever replaced (rm, then written anew), never written through.
fresh() {
    rm -rf "$T/tree"
    mkdir -p "$T/tree/build"
    cp -a "$SRC/installer" "$T/tree/installer"
    cp -al "$OBJS/installer" "$T/tree/build/installer"
}
# expect_red WHAT PATTERN: the check fails and names PATTERN.
expect_red() {
    local what=$1 pattern=$2
    "$CHECK" --src "$T/tree/installer" --build "$T/tree/build" >"$T/out" 2>&1 &&
        fail "check-layers passed $what"
    grep -q -- "$pattern" "$T/out" || fail "$what: $(cat "$T/out")"
}

fresh
"$CHECK" --src "$T/tree/installer" --build "$T/tree/build" >"$T/out" 2>&1 ||
    fail "the tree as it is: $(cat "$T/out")"
[ ! -s "$T/out" ] || fail "a passing check printed: $(cat "$T/out")"

# cmd/ sees a stage only through its face.
fresh
sed -i '0,/^#include "cmd\/cmd.h"/s//#include "cmd\/cmd.h"\n#include "expose\/cdi.h"/' \
    "$T/tree/installer/cmd/status.c"
expect_red "an inner header from cmd/" \
    'cmd/status.c: includes "expose/cdi.h", inside expose/: include its face, "expose/expose.h"'

# A stage includes only what is below it.
fresh
sed -i '0,/^#include "host\/probe.h"/s//#include "host\/probe.h"\n#include "expose\/expose.h"/' \
    "$T/tree/installer/host/probe.c"
expect_red "an upward include" 'host/probe.c: includes "expose/expose.h", a folder above its own'

# A cycle by includes: util/log.c uses util/str.h; str.c including log.h closes it.
fresh
sed -i '0,/^#include "util\/str.h"/s//#include "util\/str.h"\n#include "util\/log.h"/' \
    "$T/tree/installer/util/str.c"
expect_red "an include cycle" 'a cycle between util/log, .*util/str -> util/log (util/str.c includes util/log.h)'

# A cycle by a call alone: str.o calls now_ns (util/log.c) through a declaration written by
# hand, so no include shows it; the object does.
fresh
cat >>"$T/tree/installer/util/str.c" <<'EOF'

unsigned long long str_probe_now(void);
extern unsigned long long now_ns(void);
unsigned long long str_probe_now(void)
{
	return now_ns();
}
EOF
rm "$T/tree/build/installer/util/str.o"
cc -std=gnu11 -D_GNU_SOURCE -I"$T/tree/installer" -c -o "$T/tree/build/installer/util/str.o" \
    "$T/tree/installer/util/str.c"
expect_red "a call cycle" 'util/str -> util/log (calls now_ns)'

# Two files of one folder that call each other are two modules in a cycle: util/strx.c, with
# no header of its own, includes util/str.h and calls str_is_utf8, and str.c calls back
# through a declaration written by hand.
fresh
cat >"$T/tree/installer/util/strx.c" <<'EOF'
#include <stdbool.h>
#include "util/str.h"
int strx_probe(void);
int strx_probe(void)
{
	return str_is_utf8("x") ? 1 : 0;
}
EOF
cat >>"$T/tree/installer/util/str.c" <<'EOF'

int str_probe_back(void);
extern int strx_probe(void);
int str_probe_back(void)
{
	return strx_probe();
}
EOF
rm "$T/tree/build/installer/util/str.o"
for f in str strx; do
    cc -std=gnu11 -D_GNU_SOURCE -I"$T/tree/installer" -c -o "$T/tree/build/installer/util/$f.o" \
        "$T/tree/installer/util/$f.c"
done
expect_red "two files of one folder in a cycle" \
    'a cycle between util/str, util/strx: util/str -> util/strx (calls strx_probe); util/strx'

# A function over 80 lines.
fresh
{
    printf '\nint str_probe_long(int x);\nint str_probe_long(int x)\n{\n'
    for i in $(seq 1 80); do printf '\tx += %d;\n' "$i"; done
    printf '\treturn x;\n}\n'
} >>"$T/tree/installer/util/str.c"
expect_red "a long function" 'str_probe_long is 84 lines (at most 80)'

# A function that takes more than 6 parameters.
fresh
cat >>"$T/tree/installer/util/str.c" <<'EOF'

int str_probe_wide(int a, int b, int c, int d, int e, int f, int g);
int str_probe_wide(int a, int b, int c, int d, int e, int f, int g)
{
	return a + b + c + d + e + f + g;
}
EOF
expect_red "a long parameter list" 'str_probe_wide takes 7 parameters (at most 6: pass a record)'

# A file over 1,000 lines.
fresh
for i in $(seq 1 1000); do printf '/* line %d */\n' "$i"; done >>"$T/tree/installer/util/str.c"
expect_red "a long file" 'util/str.c: [0-9]* lines (at most 1000: split it along its seams)'

# The faces rule, on kube/: a face that includes a header of its own folder ...
fresh
sed -i '0,/^#include "util\/err.h"/s//#include "util\/err.h"\n#include "kube\/internal.h"/' \
    "$T/tree/installer/kube/kube.h"
expect_red "a face including its folder" 'kube/kube.h: includes "kube/internal.h"'

# ... one that misses what another folder calls (agent/ and cmd/ call kube_name_ok) ...
fresh
grep -q '^bool kube_name_ok(const char \*s);$' "$T/tree/installer/kube/kube.h" ||
    fail "kube_name_ok is not declared in kube/kube.h as the test expects"
sed -i '/^bool kube_name_ok(const char \*s);$/d' "$T/tree/installer/kube/kube.h"
echo 'bool kube_name_ok(const char *s);' >>"$T/tree/installer/kube/internal.h"
expect_red "an undeclared symbol" 'kube/kube.h: does not declare kube_name_ok, which .* uses'

# ... and one that declares what only its own folder calls.
fresh
echo 'unsigned kube_backoff_ms(unsigned attempt);' >>"$T/tree/installer/kube/kube.h"
expect_red "an internal symbol in the face" \
    'kube/kube.h: declares kube_backoff_ms, which nothing outside kube/ uses'

# Without the objects, the call edges cannot be read: the check fails, it does not pass.
fresh
rm "$T/tree/build/installer/util/log.o"
expect_red "missing objects" 'log.o is missing'
