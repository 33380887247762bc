# GPU partitions applied through NVML once the driver answers (--mig-layout; by default the
# node pool's /etc/nvidia/gpu_config.json, as GKE writes it): MIG mode on, the GPU filled
# with instances of the asked profile (each one whole compute instance), a re-run that
# finds the layout in place changes nothing, a process holding the GPUs refuses the change
# (named, nothing changed, exit 7), a mode that waits for a GPU reset ends the run with
# exit 10 and the node as it was, a profile the GPU lacks is refused naming those it has,
# and all-disabled undoes it. The NVML stand-in keeps MIG state beside the fake kernel's
# files and makes each instance's capability file, as the driver does; the CDI spec then
# names each MIG device by GPU:INDEX and by UUID with its capability nodes.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
spec="$T/root/var/run/cdi/nvidia-driver-installer.json"
gpus=$T/root/proc/driver/nvidia/gpus
names() { python3 -c 'import json,sys; print(" ".join(d["name"] for d in json.load(open(sys.argv[1]))["devices"]))' "$spec"; }
state() { cat "$gpus"/*/standin-mig 2>/dev/null | tr '\n' ' '; }

# No gpu_config.json: GPUs as they are, served whole.
expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(names)" "0 GPU-00000000-0000-0000-0000-000000000000 1 GPU-00000000-0000-0000-0000-000000000001 all" "devices without a layout"
[ -z "$(state)" ] || fail "MIG touched without a layout: $(state)"

# The pool asks for 1g.10gb: seven instances on each H100.
mkdir -p "$T/root/etc/nvidia"
echo '{"GPUPartitionSize":"1g.10gb"}' >"$T/root/etc/nvidia/gpu_config.json"
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "GPU layout applied (layout=all-1g.10gb from=/etc/nvidia/gpu_config.json changed=2 unchanged=0"
assert_eq "$(grep -c '^gi ' "$gpus/0000:00:04.0/standin-mig")" 7 "GPU instances on GPU 0"
assert_eq "$(grep -c '^ci ' "$gpus/0000:00:04.0/standin-mig")" 7 "compute instances on GPU 0"
n=$(names | wc -w)
assert_eq "$n" 29 "CDI devices (14 MIG devices twice, all)"
names | tr ' ' '\n' | grepq -x "1:6" || fail "no device 1:6: $(names)"
python3 - "$spec" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))
devs = {d["name"]: [n["path"] for n in d["containerEdits"]["deviceNodes"]] for d in s["devices"]}
assert "0" not in devs and "1" not in devs, "a GPU in MIG mode offered whole"
# gpu0/gi1 is nvidia-cap12 and its ci0 nvidia-cap13 (the driver's mig-minors numbering).
assert devs["0:0"] == ["/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"], devs["0:0"]
assert devs["1:0"] == ["/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap147", "/dev/nvidia-caps/nvidia-cap148"], devs["1:0"]
uuids = [n for n in devs if n.startswith("MIG-")]
assert len(uuids) == 14 and all(re.fullmatch(r"MIG-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", u) for u in uuids), uuids
assert len(devs["all"]) == 2 + 28 and devs["all"].count("/dev/nvidia0") == 1, devs["all"]
PY
schema=$(cdi_schema_dir)
[ -z "$schema" ] || python3 "$SRC/tests/tools/validate-cdi.py" "$schema" "$spec"
for m in 12 13 66 67 147 148; do
    assert_eq "$(devnode nvidia-caps/nvidia-cap$m)" "c 236:$m 444" "nvidia-cap$m"
done

# The labels, as GFD's single strategy writes them (what NFD makes of the file).
labels=$(python3 "$SRC/tests/tools/nfd-local.py" "$T/root/etc/kubernetes/node-feature-discovery/features.d")
for l in nvidia.com/mig.capable=true nvidia.com/mig.strategy=single \
    nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-MIG-1g.10gb nvidia.com/gpu.count=14 \
    nvidia.com/gpu.memory=9984 nvidia.com/gpu.multiprocessors=16 nvidia.com/gpu.slices.gi=1 \
    nvidia.com/gpu.slices.ci=1 nvidia.com/gpu.engines.copy=1 nvidia.com/gpu.engines.ofa=0; do
    grep -qxF "$l" <<<"$labels" || fail "label $l missing: $labels"
done
[ "$(grep -c '^nvidia.com/gpu.count=' <<<"$labels")" = 1 ] || fail "two gpu.count labels"

# The same layout again: nothing changes, not even the instances' ids.
before=$(state)
expect_rc 0 install --repo "$R" $(kernel_args)
expect_err "GPU layout already in place (layout=all-1g.10gb from=/etc/nvidia/gpu_config.json changed=0 unchanged=2"
assert_eq "$(state)" "$before" "MIG state after a re-run"

# A profile the H100 does not have: refused, naming those it has; nothing changed.
expect_rc 2 install --repo "$R" $(kernel_args) --mig-layout all-1g.18gb
expect_err "GPU 0 (NVIDIA H100 80GB HBM3) has no MIG profile 1g.18gb; it has 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb, 1g.10gb+me, 1g.20gb"
assert_eq "$(state)" "$before" "MIG state after a refused profile"
expect_rc 2 install --repo "$R" $(kernel_args) --mig-layout all-tiny
expect_err "--mig-layout (NVIDIA_MIG_LAYOUT): 'all-tiny' is not a layout"

# Another layout while a workload holds a GPU: refused with the holder named.
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidia0 "$T/root/proc/4242/fd/3"
echo trainer >"$T/root/proc/4242/comm"
expect_rc 7 install --repo "$R" $(kernel_args) --mig-layout all-3g.40gb
expect_err "GPU partitioning refused: the GPUs are in use: /dev/nvidia0 open in pid 4242 (trainer)"
assert_eq "$(state)" "$before" "MIG state after a busy refusal"
# Under --when-busy defer (the DaemonSets' setting) the change waits: the GPUs keep their
# layout and serve, the run ends 0, the record says what waits (the agent's upgrade flow
# finishes it: t_agent_mig); a run with the GPUs idle makes it and clears the record.
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-3g.40gb --when-busy defer
expect_err "the GPUs are busy: the layout waits for them to be idle (layout=all-3g.40gb"
assert_eq "$(state)" "$before" "MIG state while the layout waits"
python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); assert p["reason"]=="mig_layout" and p["mig_layout"]=="all-3g.40gb" and "pid 4242 (trainer)" in p["waiting_for"], p' "$(idir)/.pending.json"
assert_eq "$(names | wc -w)" 29 "devices while the layout waits"
grep -qx "nvidia.com/gpu.driver-installer.upgrade-pending-reason=mig_layout" "$T/root/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver-pending" ||
    fail "no pending label: $(cat "$T/root/etc/kubernetes/node-feature-discovery/features.d/"*)"
expect_rc 0 status --json
python3 -c 'import json,sys; p=json.load(sys.stdin)["pending_upgrade"]; assert p["reason"]=="mig_layout" and p["mig_layout"]=="all-3g.40gb", p' <"$T/out"
rm -rf "$T/root/proc/4242"
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-3g.40gb --when-busy defer
expect_err "the GPU layout that waited no longer waits (layout=all-3g.40gb)"
[ ! -e "$(idir)/.pending.json" ] || fail "still pending: $(cat "$(idir)/.pending.json")"
[ ! -e "$T/root/etc/kubernetes/node-feature-discovery/features.d/00-nvidia-driver-pending" ] || fail "pending labels left"
assert_eq "$(grep -c '^gi ' "$gpus/0000:00:04.0/standin-mig")" 2 "3g.40gb instances on GPU 0"
assert_eq "$(names | wc -w)" 9 "CDI devices of 3g.40gb"

# Undo: MIG off, every instance gone, the GPUs whole again.
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-disabled
assert_eq "$(state)" "mode 0 0 mode 0 0 " "MIG state after all-disabled"
assert_eq "$(names)" "0 GPU-00000000-0000-0000-0000-000000000000 1 GPU-00000000-0000-0000-0000-000000000001 all" "devices after all-disabled"
labels=$(python3 "$SRC/tests/tools/nfd-local.py" "$T/root/etc/kubernetes/node-feature-discovery/features.d")
grep -qx "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3" <<<"$labels" && grep -qx "nvidia.com/mig.capable=true" <<<"$labels" &&
    ! grep -q "mig.strategy" <<<"$labels" || fail "labels after all-disabled: $labels"
[ -z "$(find "$T/root/proc/driver/nvidia/capabilities" -path '*/mig/gi*')" ] || fail "instances' capabilities left"

# A layout per GPU: GPU 0 partitioned, GPU 1 whole; CDI offers both kinds, the labels
# follow GFD's mixed strategy.
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-disabled,0=all-1g.10gb
expect_err "GPU layout applied (layout=all-disabled,0=all-1g.10gb from=--mig-layout changed=1 unchanged=1"
assert_eq "$(names | tr ' ' '\n' | grep -c '^0:')" 7 "MIG devices of GPU 0"
names | tr ' ' '\n' | grepq -x 1 || fail "GPU 1 not offered whole: $(names)"
labels=$(python3 "$SRC/tests/tools/nfd-local.py" "$T/root/etc/kubernetes/node-feature-discovery/features.d")
grep -qx "nvidia.com/mig.strategy=mixed" <<<"$labels" && grep -qx "nvidia.com/mig-1g.10gb.count=7" <<<"$labels" &&
    grep -qx "nvidia.com/gpu.count=2" <<<"$labels" || fail "labels of a mixed node: $labels"
expect_rc 0 install --repo "$R" $(kernel_args) --mig-layout all-disabled

# A GPU that enters MIG mode only after a reset (a pass-through VM): exit 10, nothing made,
# the node as it was; after the reset (the mode made current) the next run fills the GPUs.
marker=$T/root/run/nvidia/validations/driver-ready
ready=$(stat -c '%i %Y' "$marker")
NVML_STANDIN_MIG=reset-required expect_rc 10 install --repo "$R" $(kernel_args)
expect_err "MIG mode waits for a GPU reset on GPU 0 (NVIDIA H100 80GB HBM3), 1 (NVIDIA H100 80GB HBM3)"
expect_err "fix: reboot the node"
assert_eq "$(state)" "mode 0 1 mode 0 1 " "MIG state waiting for a reset"
assert_eq "$(names | wc -w)" 5 "devices while the reset is pending"
assert_eq "$(stat -c '%i %Y' "$marker")" "$ready" "the readiness marker while the reset is pending"
sed -i 's/^mode 0 1/mode 1 1/' "$gpus"/*/standin-mig
expect_rc 0 install --repo "$R" $(kernel_args)
assert_eq "$(names | wc -w)" 29 "devices after the reset"
