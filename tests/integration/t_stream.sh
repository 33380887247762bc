# serial: a time window: staging must be seen while a 3 s download runs, by a poll every 50 ms
# One pass: the package is unpacked into staging while it downloads, and nothing is
# published until the download's digest matched. Bytes that fail the digest leave no
# staging, no cache entry, and the installed driver as it was.
mkroot "$T/root"
# 3 MiB of incompressible firmware at 1 MB/s: about 3 s of download.
big_package_repo 3
start_httpd "$T/srv"
printf '[{"path": "/%s", "action": "slow", "rate": 1000000}]\n' "$pkg" >"$HTTP_FAULTS"
d=$(idir)

# watch PID: waits until staging holds a file while the installer still downloads; prints
# what it saw ("streamed", or "published-early" if .current appeared first).
watch_staging() {
    local pid=$1
    for _ in $(seq 80); do
        kill -0 "$pid" 2>/dev/null || break
        if [ -e "$d/.current" ]; then
            echo published-early
            return
        fi
        if [ -n "$(find "$d" -path "*/.staging-*" -type f 2>/dev/null | sed -n 1p)" ]; then
            echo streamed
            return
        fi
        sleep 0.05
    done
    echo none
}

"$BIN" --root "$T/root" install --repo "$HTTP/repo" $(install_args) >"$T/out" 2>"$T/err" &
pid=$!
seen=$(watch_staging "$pid")
# Still downloading when staging had members: the package's last byte was not yet sent.
grep -q "\"path\": \"/$pkg\"" "$HTTP_LOG" && fail "the download had finished before staging was seen"
wait "$pid" || fail "install failed: $(cat "$T/err")"
assert_eq "$seen" streamed "staging during the download"
expect_err "package unpacked and verified"
grep "package unpacked" "$T/err" | grepq "from=download" || fail "not unpacked from the download"
assert_eq "$(installed_version)" "$V_NEW" "installed"
cmp "$d/firmware/nvidia/$V_NEW/big.bin" "$T/drv/firmware/nvidia/$V_NEW/big.bin" ||
    fail "the streamed file differs"

# The mirror now serves other bytes than the index signed (the last byte changed): the
# members stream into staging, and all of it goes when the digest does not match.
expect_rc 0 uninstall
rm -rf "$T/root/var/cache/nvidia-driver-installer/packages"
mkdir -p "$d"
before=$(snapshot "$d")
python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[-1] ^= 0xFF; open(p, "wb").write(bytes(b))' "$T/srv/$pkg"
"$BIN" --root "$T/root" install --repo "$HTTP/repo" $(install_args) >"$T/out" 2>"$T/err" &
pid=$!
seen=$(watch_staging "$pid")
wait "$pid" && rc=0 || rc=$?
assert_eq "$rc" 5 "exit status for a digest mismatch"
assert_eq "$seen" streamed "staging during the bad download"
expect_err "sha256 mismatch"
assert_eq "$(snapshot "$d")" "$before" "install dir after the bad download"
[ -z "$(ls "$T/root/var/cache/nvidia-driver-installer/packages" | grep '\.pkg$')" ] ||
    fail "bad bytes entered the cache"
assert_eq "$(installed_version)" "" "nothing installed"
