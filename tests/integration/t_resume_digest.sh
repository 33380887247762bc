# A digest failure after a resumed download is not blamed on the mirror that served the
# tail: the file is fetched again from byte 0 (from that mirror) before any mirror is
# retired, and the log names who served the bad bytes. A corrupt partial file left by an
# earlier run is discarded and fetched again in the same run.
mkroot "$T/root"
big_package_repo 2
sha=$(sha256sum "$T/srv/$pkg" | cut -c1-64)
cache="$T/root/var/cache/nvidia-driver-installer/packages"
mkdir -p "$cache"

# 1. A corrupt .part from an earlier run, one mirror: installed in this run.
head -c 1000000 /dev/urandom >"$cache/$sha.part"
start_httpd "$T/srv"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
assert_eq "$(installed_version)" "$V_NEW" "installed over a corrupt partial file"
expect_err "resuming partial download"
expect_err "failed verification after resuming at byte 1000000"
expect_err "bad bytes came from a partial download left by an earlier run"
want=$((size - 1000000 + size))
# The server logs a request after its last byte: wait for the count, not for time.
served_all() { [ "$(served_bytes .tar.zst)" = "$want" ]; }
wait_for "the server to log the tail, then the whole file ($want bytes)" 30 served_all
assert_eq "$(served_bytes .tar.zst)" "$want" "the tail, then the whole file"
echo "resume-digest: a corrupt 1000000-byte .part refetched in the same run, $want bytes fetched for a $size-byte package"

# 1b. A .part as long as the package (a run killed before it renamed it) but corrupt: the
# same, though not a byte came from the mirror before.
expect_rc 0 uninstall
rm -rf "$T/root/var/cache"
mkdir -p "$cache"
head -c "$size" /dev/urandom >"$cache/$sha.part"
expect_rc 0 install --repo "$HTTP/repo" $(install_args)
expect_err "failed verification after resuming at byte $size"
assert_eq "$(installed_version)" "$V_NEW" "installed over a whole but corrupt partial file"

# 2. Mirror a serves a corrupt copy and is cut off midway; mirror b serves the rest. b is
# not retired for a's bytes: it serves the whole file, and the log names a.
expect_rc 0 uninstall
rm -rf "$T/root/var/cache"
for m in a b; do
    mkdir -p "$T/srv/$m"
    cp -a "$T/srv/repo/." "$T/srv/$m/"
done
# a's copy is bad near its start and near its end.
for at in 4096 $((size - 5000)); do
    printf 'XXXXXXXXXXXXXXXX' | dd of="$T/srv/a/${pkg#repo/}" bs=1 seek=$at conv=notrunc 2>/dev/null
done
cut=$((size / 2))
http_log_reset
printf '[{"path": "/a/%s", "action": "truncate", "at": %d, "times": 1}]\n' "${pkg#repo/}" "$cut" >"$HTTP_FAULTS"
expect_rc 0 install --repo "$HTTP/a" --repo "$HTTP/b" $(install_args)
assert_eq "$(installed_version)" "$V_NEW" "installed from mirror b"
expect_err "failed verification after resuming at byte $cut"
expect_err "bad bytes came from $HTTP/a"
# The server logs a request after its last byte: wait for the line, not for time.
wait_for "b to serve the whole file" 30 grep -q "\"path\": \"/b/${pkg#repo/}\", \"range\": null" "$HTTP_LOG"

# 3. A good partial file and a mirror whose copy is corrupt: after the whole file from byte
# 0 fails too, that mirror is retired and named as the one that served every byte.
expect_rc 0 uninstall
rm -rf "$T/root/var/cache"
mkdir -p "$cache"
head -c 1000000 "$T/srv/$pkg" >"$cache/$sha.part"
echo '[]' >"$HTTP_FAULTS"
expect_rc 5 install --repo "$HTTP/a" $(install_args)
expect_err "failed verification after resuming at byte 1000000"
expect_err "$HTTP/a/.*sha256 mismatch.*this mirror served every byte"
