# Our node labels beside GPU feature discovery's: for every key both write, the node ends
# with GFD's value, whether GFD wrote its file before the install or after it; without GFD
# the node gets ours. The node's labels are what node-feature-discovery makes of the
# features.d directory: tests/tools/nfd-local.py restates its rules (from its source).
# GFD's file name and content: NVIDIA/k8s-device-plugin cmd/gpu-feature-discovery/main.go
# (--output-file, default /etc/kubernetes/node-feature-discovery/features.d/gfd) and
# internal/lm/resource.go (baseLabeler: product with "-SHARED" when time-sliced, count,
# replicas, sharing-strategy; "-MIG-<profile>" products for MIG devices).
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
D="$T/root/etc/kubernetes/node-feature-discovery/features.d"
mkdir -p "$D"

node_labels() { python3 "$SRC/tests/tools/nfd-local.py" "$D" 2>"$T/ignored"; }
label() { node_labels | sed -n "s|^$1=||p"; }
# gfd_wins FILE: every label in GFD's FILE is on the node with GFD's value.
gfd_wins() {
    local labels
    labels=$(node_labels)
    [ ! -s "$T/ignored" ] || fail "NFD would ignore: $(cat "$T/ignored")"
    while IFS= read -r l; do
        grep -qxF -- "$l" <<<"$labels" || fail "GFD's $l lost; the node has: $(grep -F "${l%%=*}=" <<<"$labels")"
    done <"$1"
}

# GFD on a time-sliced node, before the installer; and the file an older release of ours
# wrote under the name that sorted after GFD's.
cat >"$D/gfd" <<'EOF'
nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-SHARED
nvidia.com/gpu.count=2
nvidia.com/gpu.replicas=4
nvidia.com/gpu.sharing-strategy=time-slicing
nvidia.com/gpu.memory=81559
nvidia.com/gpu.family=hopper
nvidia.com/gpu.compute.major=9
nvidia.com/gpu.compute.minor=0
nvidia.com/cuda.driver-version.full=535.261.03
nvidia.com/cuda.runtime-version.full=12.2
EOF
cp "$D/gfd" "$T/gfd-shared"
printf 'nvidia.com/gpu.product=stale\nnvidia.com/gpu.count=9\nnvidia.com/gpu.driver-installer.version=535.183.01\n' >"$D/nvidia-driver"
expect_rc 0 install --repo "$R" $(kernel_args)
gfd_wins "$T/gfd-shared"
[ ! -e "$D/nvidia-driver" ] || fail "the old release's labels file is left: $(cat "$D/nvidia-driver")"
assert_eq "$(label nvidia.com/gpu.driver-installer.version)" "$V_OLD" "our own label"

# GFD writes after us (MIG, single strategy), and we run again after it.
cat >"$D/gfd" <<'EOF'
nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-MIG-1g.10gb
nvidia.com/gpu.count=14
nvidia.com/gpu.replicas=1
nvidia.com/gpu.memory=9856
nvidia.com/mig.strategy=single
EOF
gfd_wins "$D/gfd"
expect_rc 0 install --repo "$R" $(kernel_args)
gfd_wins "$D/gfd"

# Without GFD, the node has ours.
rm "$D/gfd"
assert_eq "$(label nvidia.com/gpu.product)" NVIDIA-H100-80GB-HBM3 "product without GFD"
assert_eq "$(label nvidia.com/gpu.count)" 2 "count without GFD"
[ ! -s "$T/ignored" ] || fail "NFD would ignore: $(cat "$T/ignored")"

# The restatement is no rubber stamp: a file sorting after GFD's overrides it.
cp "$T/gfd-shared" "$D/gfd"
printf 'nvidia.com/gpu.product=later\n' >"$D/zz"
# (Captured first: under pipefail, grep -q leaving early can kill the writer with SIGPIPE.)
labels=$(node_labels)
grep -qx nvidia.com/gpu.product=later <<<"$labels" || fail "nfd-local.py: a later file did not override"
rm "$D/zz"

# Uninstall takes ours and leaves GFD's.
expect_rc 0 uninstall
[ -e "$D/gfd" ] || fail "uninstall removed GFD's file"
[ "$(ls -A "$D")" = gfd ] || fail "left in features.d: $(ls -A "$D")"
