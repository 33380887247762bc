# The metrics textfile against its real consumers (Debian's packages): `promtool check
# metrics` (the exposition format, plus Prometheus's lint: names, HELP/TYPE, unit suffixes)
# finds no problem, and prometheus-node-exporter's textfile collector, alone, serves our
# series with node_textfile_scrape_error 0 and the values the installer meant; after a
# failed install (exit 8) it serves the failure. A broken line fails both consumers.
command -v promtool >/dev/null || fail "promtool not found (package prometheus; scripts/deps.sh)"
command -v prometheus-node-exporter >/dev/null ||
    fail "prometheus-node-exporter not found (package prometheus-node-exporter; scripts/deps.sh)"
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
# The DaemonSet's path: the host's node-exporter textfile directory.
REL=var/lib/node_exporter/textfile_collector
DIR="$T/root/$REL"
prom="$DIR/nvidia-driver-installer.prom"
expect_rc 0 install --repo "$R" $(kernel_args) --metrics-file "/$REL/nvidia-driver-installer.prom"

# promtool: no problem at all (it prints one line per problem and exits 1 or 3).
promcheck() { promtool check metrics <"$1" >"$T/promtool.out" 2>&1; }
promcheck "$prom" || fail "promtool: $(cat "$T/promtool.out")"
[ ! -s "$T/promtool.out" ] || fail "promtool says: $(cat "$T/promtool.out")"

# node-exporter with the textfile collector alone, on a port of 127.0.0.1 the kernel picks:
# socket-activate.py binds it and hands it over (--web.systemd-socket), so no test beside
# this one can take it before the exporter serves, nor find the exporter on a port it
# chose as dead. It stops when the test ends (trap), or by itself (timeout, a backstop).
timeout 600 "$SRC/tests/tools/socket-activate.py" "$T/exporter.port" \
    prometheus-node-exporter --web.systemd-socket \
    --collector.disable-defaults --collector.textfile --collector.textfile.directory="$DIR" \
    >"$T/exporter.log" 2>&1 &
exporter=$!
trap 'kill $exporter 2>/dev/null || true' EXIT
# Waits until it answers; an exporter that exits fails at once.
answers() {
    curl -sf --max-time 2 -o "$T/scrape" "http://127.0.0.1:$port/metrics" && return 0
    kill -0 $exporter 2>/dev/null || fail "node-exporter exited: $(cat "$T/exporter.log")"
    return 1
}
# Its port, written once the socket listens (a connection then waits in the backlog until
# the exporter serves).
has_port() {
    [ -s "$T/exporter.port" ] && return 0
    kill -0 $exporter 2>/dev/null || fail "socket-activate.py exited: $(cat "$T/exporter.log")"
    return 1
}
wait_for "socket-activate.py to write the exporter's port" 60 has_port
port=$(cat "$T/exporter.port")
wait_for "node-exporter to answer on 127.0.0.1:$port" 60 answers
scrape() { curl -sf --max-time 5 -o "$T/scrape" "http://127.0.0.1:$port/metrics" || fail "scrape"; }
# series NAME_AND_LABELS VALUE: the scrape has exactly this sample.
series() { grep -qxF "$1 $2" "$T/scrape" || fail "scrape lacks '$1 $2': $(grep -E "nvidia|textfile" "$T/scrape")"; }

scrape
series node_textfile_scrape_error 0
series nvidia_driver_installer_success 1
series nvidia_driver_installer_exit_code 0
series "nvidia_driver_installer_driver_info{kernel=\"$KERNEL\",version=\"$V_OLD\"}" 1
for r in not_found unreachable unverified; do
    series "nvidia_driver_installer_index_from_cache{reason=\"$r\"}" 0
done
for stage in host index download unpack kernel devices publish expose; do
    grep -qE "^nvidia_driver_installer_stage_duration_seconds\{stage=\"$stage\"\} [0-9.e+-]+$" "$T/scrape" ||
        fail "no duration for $stage: $(grep stage_duration "$T/scrape")"
done
ts=$(sed -n 's/^nvidia_driver_installer_last_run_timestamp_seconds \(.*\)$/\1/p' "$T/scrape")
python3 -c 'import sys,time; t=float(sys.argv[1]); assert abs(time.time()-t) < 600, t' "$ts" ||
    fail "last_run_timestamp_seconds: '$ts'"
# HELP and TYPE come through as written.
grep -qx "# TYPE nvidia_driver_installer_success gauge" "$T/scrape" || fail "TYPE lost"

# A failed install (NVML does not answer: exit 8) is what the next scrape serves.
NVML_STANDIN_FAIL=init expect_rc 8 install --repo "$R" $(kernel_args) \
    --metrics-file "/$REL/nvidia-driver-installer.prom"
promcheck "$prom" && [ ! -s "$T/promtool.out" ] || fail "promtool after a failure: $(cat "$T/promtool.out")"
scrape
series node_textfile_scrape_error 0
series nvidia_driver_installer_success 0
series nvidia_driver_installer_exit_code 8

# A label value with a quote and a backslash (a --kernel-release typed in a DaemonSet) is
# escaped, not a line that makes both consumers drop every series of the file; the install
# fails early (exit 2 for the key), and the file says so.
weird='6.1"x\y'
expect_rc 2 install --repo "$R" --repo-key /dev/null --kernel-release "$weird" \
    --metrics-file "/$REL/nvidia-driver-installer.prom"
promcheck "$prom" && [ ! -s "$T/promtool.out" ] || fail "promtool on an escaped label: $(cat "$T/promtool.out")"
scrape
series node_textfile_scrape_error 0
series nvidia_driver_installer_exit_code 2
grep -qF 'kernel="6.1\"x\\y"' "$T/scrape" || fail "label value: $(grep driver_info "$T/scrape")"

# Seen red: a broken line (an unescaped quote in a label value) fails promtool, and the
# exporter reports the scrape error; without it, all is well again.
sed 's/version="\([^"]*\)"/version="\1"x"/' "$prom" >"$DIR/broken.prom"
grep -q 'x"' "$DIR/broken.prom" || fail "the broken copy is not broken"
promcheck "$DIR/broken.prom" && fail "promtool accepted a broken line"
scrape
series node_textfile_scrape_error 1
rm "$DIR/broken.prom"
scrape
series node_textfile_scrape_error 0
kill $exporter
wait $exporter 2>/dev/null || true
trap - EXIT
