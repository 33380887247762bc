# The ld cache step does no work a re-run does not need, in every host configuration: a
# warm re-run forks no ldconfig (the cache stays the same file, untouched), whether the
# host's /etc/ld.so.conf reads ld.so.conf.d or not (where it does not, no ldconfig run can
# list our libraries: one after the switch is all that helps), and one comes back as soon
# as the configuration starts reading ld.so.conf.d.
mkroot "$T/root"
new_repo "$T/repo" "$V_OLD:default"
cache=$T/root/etc/ld.so.cache
for conf in none include; do
    rm -f "$T/root/etc/ld.so.conf" "$cache" "$T/root/etc/ld.so.conf.d/nvidia.conf"
    [ "$conf" = none ] || echo "include /etc/ld.so.conf.d/*.conf" >"$T/root/etc/ld.so.conf"
    expect_rc 0 install --repo "file://$T/repo" $(install_args) -v
    [ -s "$cache" ] || fail "$conf: no ld cache after the install"
    before=$(stat -c '%i %Y.%y' "$cache")
    expect_rc 0 install --repo "file://$T/repo" $(install_args) -v
    expect_err "ld cache already current"
    grep -q "ld cache rebuilt" "$T/err" && fail "$conf: a warm re-run rebuilt the ld cache"
    assert_eq "$(stat -c '%i %Y.%y' "$cache")" "$before" "$conf: the ld cache after a warm re-run"
done
# The host's configuration starts reading ld.so.conf.d: the next run rebuilds the cache,
# which then lists the driver's libraries.
rm -f "$T/root/etc/ld.so.conf" "$cache"
expect_rc 0 install --repo "file://$T/repo" $(install_args)
echo "include /etc/ld.so.conf.d/*.conf" >"$T/root/etc/ld.so.conf"
expect_rc 0 install --repo "file://$T/repo" $(install_args) -v
expect_err "ld cache rebuilt"
ldconfig -r "$T/root" -p | grepq "libcuda.so.1 .*=> /home/kubernetes/bin/nvidia/lib64/libcuda.so.1" ||
    fail "the cache after the configuration changed: $(ldconfig -r "$T/root" -p | grep -i nvidia)"
# The switch and the rebuild in one clock tick, or a clock set back after the switch: the
# cache's time is not after .current's. The rebuild dates .current before the cache, so
# the next run finds the cache current (without that, every run rebuilt it).
cur=$T/root/home/kubernetes/bin/nvidia/.current
touch -h -d '+1 hour' "$cur"
expect_rc 0 install --repo "file://$T/repo" $(install_args) -v
expect_err "ld cache rebuilt"
[ "$(stat -c %Y "$cur")" -le "$(stat -c %Y "$cache")" ] || fail ".current is still dated after the cache"
expect_rc 0 install --repo "file://$T/repo" $(install_args) -v
expect_err "ld cache already current"
