# What the binary's messages and --help point a reader at exists where it runs: no path of
# the source tree (docs/, scripts/, tests/: a node has none), and each document it names
# under its DOCDIR is one of docs/, shipped by `make install` (DOCS_SHIPPED) and by the
# image (make image-rootfs installs DOCS_SHIPPED), which scripts/image-test.sh checks in
# the built image.
grep -aoE '(^|[^a-z/])(docs|scripts|tests)/[A-Za-z0-9_.-]+' "$BIN" >"$T/repo-paths" || true
[ ! -s "$T/repo-paths" ] || fail "the binary names paths of the source tree: $(sort -u "$T/repo-paths" | tr '\n' ' ')"
expect_rc 0 --help
docdir=$(sed -n 's|^Documentation: \(/[^ ]*\)/ .*|\1|p' "$T/out")
[ -n "$docdir" ] || fail "--help names no documentation directory: $(cat "$T/out")"
named=$( (grep -aoE "$docdir/[a-z-]+\.md" "$BIN" | sed "s|$docdir/||"
    sed -n 's|^Documentation: [^(]*(\(.*\))\.$|\1|p' "$T/out" | tr ',' '\n') | tr -d ' ' | sort -u)
[ "$(echo "$named" | wc -w)" -ge 4 ] || fail "too few documents named: $named"
# DOCS_SHIPPED, its continuation lines joined.
shipped=$(awk '/^DOCS_SHIPPED := / { on = 1; sub(/^DOCS_SHIPPED := /, "") }
    on { more = sub(/\\$/, ""); printf "%s ", $0; if (!more) exit }' "$SRC/Makefile" |
    tr -s ' \t' ' ')
[ "$(echo "$shipped" | wc -w)" -ge 10 ] || fail "DOCS_SHIPPED read as: $shipped"
grep -qE '^[[:space:]]+scripts/image-rootfs .* \$\(DOCS_SHIPPED\)$' "$SRC/Makefile" ||
    fail "make image-rootfs does not put DOCS_SHIPPED into the image"
for d in $named; do
    [ -f "$SRC/docs/$d" ] || fail "the binary names $docdir/$d; docs/$d does not exist"
    [[ " $shipped " == *" docs/$d "* ]] || fail "$d is named but not in the Makefile's DOCS_SHIPPED"
done
# make install puts them there.
make -s -C "$SRC" BUILD="$(dirname "$BIN")" DESTDIR="$T/dest" install-docs >/dev/null
for d in $named; do
    cmp -s "$SRC/docs/$d" "$T/dest$docdir/$d" || fail "make install did not install $d"
done
# The shipped documents are read beside each other: every other document of docs/ that one
# of them links to is shipped too (exit-codes.md points at design.md for the reasons).
for d in $shipped; do
    for l in $(grep -oE '[a-z-]+\.md' "$SRC/$d" | sort -u); do
        [ -f "$SRC/docs/$l" ] || continue
        [[ " $shipped " == *" docs/$l "* ]] || fail "$d links $l, which is not shipped (DOCS_SHIPPED)"
    done
done
