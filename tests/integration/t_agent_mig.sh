# A GPU layout change on a node with GPU work waits and is finished by the node agent's
# upgrade flow, as a driver upgrade is (docs/configuration.md, "GPU partitions (MIG)"): the
# pool's partition size arrives while a job holds the GPU, the installer (--when-busy
# defer, as the DaemonSets run it) leaves the layout pending with the GPU as it was; the
# agent takes the slot, cordons the node, waits while the GPU pod runs and while a process
# holds the GPU, then runs the installer (its daemons stopped for it), which makes the
# instances; the node is validated and uncordoned, the record gone, the CDI spec naming
# the MIG devices. Nothing is killed: the layout changes only once the work is gone.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
export NVIDIA_DRIVER_REPO=file://$T/repo NVIDIA_DRIVER_REPO_KEY=$FIX/keys/pub.pem
expect_rc 0 install --driver-version "$V_OLD" $(kernel_args)
mig=$T/root/proc/driver/nvidia/gpus/0000:00:04.0/standin-mig
[ ! -e "$mig" ] || fail "MIG touched without a layout"
# The pool asks for partitions while a job holds the GPU.
mkdir -p "$T/root/etc/nvidia" "$T/root/proc/4242/fd"
echo '{"GPUPartitionSize": "1g.10gb"}' >"$T/root/etc/nvidia/gpu_config.json"
ln -s /dev/nvidia0 "$T/root/proc/4242/fd/3"
echo trainer >"$T/root/proc/4242/comm"
expect_rc 0 install --when-busy defer --driver-version "$V_OLD" $(kernel_args)
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["reason"]=="mig_layout" and p["mig_layout"]=="all-1g.10gb", p' "$(idir)/.pending.json"
[ ! -s "$mig" ] || ! grep -q '^gi ' "$mig" || fail "instances made while the job runs: $(cat "$mig")"

cat >"$T/cluster.json" <<EOF
{"nodes": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-1",
   "labels": {"nvidia.com/gpu.present": "true"}}, "spec": {}}],
 "pods": [
  {"metadata": {"name": "train", "namespace": "ml"}, "spec": {"nodeName": "gpu-node-1",
   "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
   "status": {"phase": "Running"}}]}
EOF
kube_stub "$T/cluster.json"
dlog=$T/daemons.log
start_agent --node-name gpu-node-1 --kube-sa-dir "$KUBE_SA"
trap 'rc=$?; kill "$apid" 2>/dev/null || true; [ $rc = 0 ] || tail -25 "$T/agent.log"' EXIT
agent_said() { grep -q -- "$1" "$T/agent.log"; }
wait_for "the agent's start" 30 agent_said "agent: watching the node"
wait_for "the node cordoned and waiting" 30 upgrade_node_has 'state == "waiting" and unsched and slot == "gpu-node-1"'
upgrade_node_has '"1 GPU pod(s) and 1 process(es)" in rec["reason"]' || fail "the reason: $(cat "$KUBE_STATE")"
# The job's process ends; its pod is still there: the layout still waits.
rm -rf "$T/root/proc/4242"
wait_for "the reason updated" 30 upgrade_node_has '"1 GPU pod(s) and 0 process(es)" in rec["reason"]'
! grep -q '^gi ' "$mig" 2>/dev/null || fail "instances made while a GPU pod runs"
kube_api DELETE /api/v1/namespaces/ml/pods/train >/dev/null
wait_for "the layout made and the node back" 30 upgrade_node_has 'state == "done" and not unsched and slot == ""'
assert_eq "$(grep -c '^gi ' "$mig")" 7 "GPU instances after the agent's run"
[ ! -e "$(idir)/.pending.json" ] || fail "still pending: $(cat "$(idir)/.pending.json")"
agent_said "driver upgrade: the installer ended (what=activation how=exit 0)" || fail "no activation run"
python3 -c 'import json,sys; n=[d["name"] for d in json.load(open(sys.argv[1]))["devices"]]; assert "0:6" in n and "0" not in n, n' \
    "$T/root/var/run/cdi/nvidia-driver-installer.json"
assert_eq "$(installed_version)" "$V_OLD" "the version (a layout changes no driver)"
kill -0 "$apid" || fail "the agent is gone"
# The installer's layout run asked the agent to stop its daemons before judging the GPUs busy
# (the persistence daemon holds them open, and is no workload).
agent_said "an installer holds the daemons stopped (why=the installer checks that the driver is idle" ||
    fail "the daemons were not held for the layout"
# The agent's MIG series (docs/metrics.md, "GPU partitions"), against the table both ways.
port=$(sed -n 's/.*agent: watching the node (.*port=\([0-9]*\) .*/\1/p' "$T/agent.log")
mig_served() { curl -s "http://127.0.0.1:$port/metrics" | grep '_mig_' >"$T/mig.prom" && grep -qx 'nvidia_driver_installer_agent_mig_devices{profile="1g.10gb"} 7' "$T/mig.prom"; }
wait_for "the MIG series" 30 mig_served
grep -qx 'nvidia_driver_installer_agent_gpu_mig_mode{gpu="0"} 1' "$T/mig.prom" &&
    grep -qx 'nvidia_driver_installer_agent_gpu_mig_reset_pending{gpu="0"} 0' "$T/mig.prom" || fail "MIG series: $(cat "$T/mig.prom")"
promtool check metrics <"$T/mig.prom" >"$T/promtool.out" 2>&1 || fail "promtool: $(cat "$T/promtool.out")"
python3 "$SRC/tests/tools/metrics-doc.py" "$SRC/docs/metrics.md" "GPU partitions" "$T/mig.prom" \
    >"$T/doc.out" 2>&1 || fail "docs/metrics.md: $(cat "$T/doc.out")"
