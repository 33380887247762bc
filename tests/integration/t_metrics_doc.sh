# docs/metrics.md lists exactly the metrics the installer writes, with their labels: the
# names come from textfiles real installs wrote (a success, a failure, a wrong repository
# URL), not from the source. The shipped alert rules (deploy/) pass `promtool check rules`
# and their own `promtool test rules`, and fire, or stay quiet, on series made from those
# same files as node-exporter would serve them.
command -v promtool >/dev/null || fail "promtool not found (package prometheus; scripts/deps.sh)"
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
REL=var/lib/node_exporter/textfile_collector
prom="$T/root/$REL/nvidia-driver-installer.prom"
run_install() {
    expect_rc "$1" install --repo "$2" $(kernel_args) --metrics-file "/$REL/nvidia-driver-installer.prom"
    cp "$prom" "$T/$3.prom"
}
run_install 0 "file://$T/repo" ok
NVML_STANDIN_FAIL=init run_install 8 "file://$T/repo" failed
run_install 0 "file://$T/no-such-repo" notfound
# A new version while a process holds the driver (--when-busy defer): upgrade_pending.
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidiactl "$T/root/proc/4242/fd/3"
expect_rc 0 install --repo "file://$T/repo" $(kernel_args) --metrics-file "/$REL/nvidia-driver-installer.prom" \
    --when-busy defer --driver-version "$V_NEW"
cp "$prom" "$T/pending.prom"
rm -rf "$T/root/proc/4242"
grep -qx "nvidia_driver_installer_upgrade_pending{version=\"$V_NEW\",reason=\"driver_in_use\"} 1" "$T/pending.prom" ||
    fail "the pending upgrade did not show: $(cat "$T/pending.prom")"
# An index that states the package's kernel module flavour: driver_info's module_type.
echo 10de:2330 >"$T/prop.ids"
"$SRC/scripts/make-repo" add --repo "$T/repo-kmt" --key "$FIX/keys/key.pem" --kernel "$KERNEL" \
    --version "$V_OLD" --tag default --module-type proprietary --supported-pci-ids "$T/prop.ids" \
    "$FIX/spkg-$V_OLD.tar.zst" >/dev/null
run_install 0 "file://$T/repo-kmt" flavour
grep -q '^nvidia_driver_installer_driver_info{.*module_type="proprietary"' "$T/flavour.prom" ||
    fail "driver_info without module_type: $(cat "$T/flavour.prom")"
grep -qx 'nvidia_driver_installer_index_from_cache{reason="not_found"} 1' "$T/notfound.prom" ||
    fail "the wrong URL did not show: $(cat "$T/notfound.prom")"

# The doc's table against the files: metric names, label names and the label values the doc
# enumerates (stage, reason), both ways (a good install runs every stage).
compare() {
    python3 "$SRC/tests/tools/metrics-doc.py" "$1" Series "$T/ok.prom" "$T/failed.prom" "$T/notfound.prom" \
        "$T/flavour.prom" "$T/pending.prom"
}
compare "$SRC/docs/metrics.md" >"$T/compare.out" 2>&1 || fail "docs/metrics.md: $(cat "$T/compare.out")"

# Seen red: a doc missing one metric, and a doc listing one the installer never writes.
grep -v '^| `nvidia_driver_installer_exit_code`' "$SRC/docs/metrics.md" >"$T/missing.md"
compare "$T/missing.md" >"$T/compare.out" 2>&1 && fail "a metric missing from the doc went unnoticed"
grep -q "written but not in .*: nvidia_driver_installer_exit_code" "$T/compare.out" ||
    fail "missing metric: $(cat "$T/compare.out")"
sed 's/^| `nvidia_driver_installer_success` |/| `nvidia_driver_installer_succes` |/' \
    "$SRC/docs/metrics.md" >"$T/extra.md"
compare "$T/extra.md" >"$T/compare.out" 2>&1 && fail "a misspelt metric in the doc went unnoticed"
grep -q "but never written: nvidia_driver_installer_succes$" "$T/compare.out" ||
    fail "extra metric: $(cat "$T/compare.out")"
sed 's/`stage` = `host`, `index`,/`stage` = `host`,/' "$SRC/docs/metrics.md" >"$T/stage.md"
compare "$T/stage.md" >"$T/compare.out" 2>&1 && fail "an undocumented stage went unnoticed"
sed 's/`stage` = `host`,/`stage` = `host`, `verify`,/' "$SRC/docs/metrics.md" >"$T/stage.md"
compare "$T/stage.md" >"$T/compare.out" 2>&1 && fail "a documented stage never written went unnoticed"
grep -q "documented but never written: \['verify'\]" "$T/compare.out" || fail "stage: $(cat "$T/compare.out")"

# The rules, and their own unit tests.
RULES=$SRC/deploy/nvidia-driver-installer-alerts.yaml
promtool check rules "$RULES" >"$T/promtool.out" 2>&1 || fail "promtool check rules: $(cat "$T/promtool.out")"
(cd "$SRC/deploy" && promtool test rules nvidia-driver-installer-alerts.test.yaml) >"$T/promtool.out" 2>&1 ||
    fail "promtool test rules: $(cat "$T/promtool.out")"

# series_test FILE ALERT EXPECTED...: a promtool unit test whose input is FILE's samples as
# node-exporter serves them (plus instance and job), held for 90 minutes; ALERT is expected
# to fire at 85 minutes with the labels EXPECTED (key=value...) and annotations (@key=value),
# or not at all without any.
series_test() {
    python3 - "$RULES" "$@" >"$T/real.test.yaml" <<'EOF'
import json, re, sys
rules, prom, alert, expected = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
series = []
for line in open(prom):
    if line.startswith("#") or not line.strip():
        continue
    name_labels, value = line.rstrip("\n").rsplit(" ", 1)
    m = re.match(r"^([^{]+)(?:\{(.*)\})?$", name_labels)
    labels = (m.group(2) + "," if m.group(2) else "") + 'instance="gpu-a:9100",job="node-exporter"'
    series.append({"series": "%s{%s}" % (m.group(1), labels), "values": "%sx90" % value})
exp = []
if expected:
    labels = ["instance=gpu-a:9100", "job=node-exporter"] + [e for e in expected if e[0] != "@"]
    exp = [{"exp_labels": dict(kv.split("=", 1) for kv in labels),
            "exp_annotations": dict(kv[1:].split("=", 1) for kv in expected if kv[0] == "@")}]
# JSON is YAML: promtool reads it.
print(json.dumps({"rule_files": [rules], "evaluation_interval": "1m", "tests": [{
    "interval": "1m", "input_series": series,
    "alert_rule_test": [{"eval_time": "85m", "alertname": alert, "exp_alerts": exp}]}]},
    indent=1))
EOF
    promtool test rules "$T/real.test.yaml" >"$T/promtool.out" 2>&1
}
series_test "$T/failed.prom" NvidiaDriverInstallFailed severity=critical \
    "@summary=NVIDIA driver install failed on gpu-a:9100 (exit 8)" \
    "@description=The last install on gpu-a:9100 exited 8: the node has no working driver and GPU pods stay pending. The exit code's class is in docs/exit-codes.md; the installer container's log names the cause and the fix." ||
    fail "the failed install's series: $(cat "$T/promtool.out")"
series_test "$T/notfound.prom" NvidiaDriverRepositoryNotFound severity=warning reason=not_found \
    "@summary=NVIDIA driver repository not found from gpu-a:9100" \
    "@description=Every mirror answered that it has no index.json: NVIDIA_DRIVER_REPO in the DaemonSet is probably wrong. The node installed from its cached index, so new kernels and driver versions will not reach it until the URL is fixed." ||
    fail "the wrong URL's series: $(cat "$T/promtool.out")"
for a in NvidiaDriverInstallFailed NvidiaDriverRepositoryNotFound NvidiaDriverIndexUnverified \
    NvidiaDriverMirrorsUnreachable; do
    series_test "$T/ok.prom" "$a" || fail "$a fired on a good install: $(cat "$T/promtool.out")"
done
# Seen red: the failed install's series do not pass for a good one.
series_test "$T/failed.prom" NvidiaDriverInstallFailed && fail "promtool expected no alert and passed"
true
