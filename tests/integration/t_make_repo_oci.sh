# make-repo publish --to oci://... (scripts/repo_push.py) against a real registry: Debian's
# docker-registry behind htpasswd (tests/tools/oci-registry.py). The repository is published
# in its directory and pushed by the installer's own `mirror --from file://DIR --to oci://`;
# a push the registry refuses (a wrong password) fails the publish in one line naming the
# installer's error, the directory published all the same, and the same publish with no
# stage directory pushes what the registry lacks. A node installs from oci://; what the
# registry serves comes back byte for byte as the directory has it; skopeo reads the manifest
# as repository-format.md's artifact; a second publish moves the tag.
mkroot "$T/root"
oci_registry_start htpasswd
REF=oci://$OCI_HOST/nvidia/drivers:v1
push=(--to "$REF" --installer "$BIN" --ca-file "$OCI_CA")
pull=(--ca-file "$OCI_CA" --registry-auth "$OCI_AUTH_FILE")
publish() { # [make-repo publish arguments]: its status in $rc, its output in $T/pub.*
    rc=0
    "$SRC/scripts/make-repo" publish --repo "$T/repo" --key "$FIX/keys/key.pem" "$@" \
        >"$T/pub.out" 2>"$T/pub.err" || rc=$?
}
"$SRC/scripts/make-repo" stage --to "$T/stage-old" --version "$V_OLD" --kernel "$KERNEL" \
    --tag default "$FIX/pkg-$V_OLD.tar.zst" >/dev/null

# The wrong password: the registry refuses it, the publish fails after the directory's switch.
python3 - "$OCI_AUTH_FILE" "$T/bad-auth.json" <<'PY'
import base64, json, sys
auths = json.load(open(sys.argv[1]))["auths"]
bad = {h: {"auth": base64.b64encode(b"%s:wrong" % base64.b64decode(a["auth"]).split(b":")[0])
           .decode()} for h, a in auths.items()}
json.dump({"auths": bad}, open(sys.argv[2], "w"))
PY
publish "${push[@]}" --registry-auth "$T/bad-auth.json" "$T/stage-old"
assert_eq "$rc" 1 "a push with a wrong password: $(cat "$T/pub.err")"
last=$(tail -1 "$T/pub.err")
case $last in
"make-repo: the push to $REF failed (nvidia-driver-installer mirror, exit 4: ERROR "*"; $T/repo is published here: run the publish again to push what the registry lacks") ;;
*) fail "the failed push's line: $last" ;;
esac
grep -q "packages/$KERNEL/x86_64/nvidia-$V_OLD.tar.zst" "$T/pub.out" || fail "not published: $(cat "$T/pub.out")"
expect_rc 0 list-versions --repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
expect_out "^$V_OLD "
expect_rc 4 list-versions --repo "$REF" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" \
    --fetch-retries 0 "${pull[@]}"

# The same publish again, with the push's credentials and no stage directory: pushed.
publish "${push[@]}" --registry-auth "$OCI_AUTH_FILE"
assert_eq "$rc" 0 "the push again: $(cat "$T/pub.err")"
grep -q '"http.request.method":"PUT","http.request.remoteaddr":"[^"]*","http.request.uri":"/v2/nvidia/drivers/manifests/v1"' \
    "$OCI_LOG" || fail "no manifest PUT in $OCI_LOG"
expect_rc 0 install --repo "$REF" $(install_args) "${pull[@]}"
assert_eq "$(installed_version)" "$V_OLD" "installed from the registry"

# What the registry serves is the directory's repository, byte for byte.
expect_rc 0 mirror --from "$REF" --repo-key "$FIX/keys/pub.pem" --to "$T/back" "${pull[@]}"
for f in index.json index.json.sig "packages/$KERNEL/x86_64/nvidia-$V_OLD.tar.zst"; do
    cmp "$T/repo/$f" "$T/back/$f" || fail "$f came back from the registry other than published"
done
# skopeo reads the manifest the push wrote: the artifact, its layers titled by their paths.
skopeo inspect --raw --cert-dir "$OCI_CERT_DIR" --authfile "$OCI_AUTH_FILE" \
    "docker://$OCI_HOST/nvidia/drivers:v1" >"$T/manifest.json" || fail "skopeo inspect"
python3 - "$T/manifest.json" "$KERNEL" "$V_OLD" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
assert m["mediaType"] == "application/vnd.oci.image.manifest.v1+json", m
assert m["artifactType"] == "application/vnd.nvidia.driver-installer.repository.v1", m
titles = [l["annotations"]["org.opencontainers.image.title"] for l in m["layers"]]
assert titles == ["index.json", "index.json.sig",
                  "packages/%s/x86_64/nvidia-%s.tar.zst" % (sys.argv[2], sys.argv[3])], titles
PY

# A second publish, one command: the tag moves to the index that names both.
"$SRC/scripts/make-repo" stage --to "$T/stage-new" --version "$V_NEW" --kernel "$KERNEL" \
    "$FIX/pkg-$V_NEW.tar.zst" >/dev/null
publish "${push[@]}" --registry-auth "$OCI_AUTH_FILE" "$T/stage-new"
assert_eq "$rc" 0 "the second publish: $(cat "$T/pub.err")"
expect_rc 0 list-versions --repo "$REF" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL" \
    "${pull[@]}"
expect_out "^$V_NEW "
expect_out "^$V_OLD "
expect_rc 0 mirror --from "$REF" --repo-key "$FIX/keys/pub.pem" --to "$T/back" "${pull[@]}"
cmp "$T/repo/index.json" "$T/back/index.json" || fail "the registry's index is not the directory's"

# The supply pass (scripts/supply) with the registry as its publish.to: a pass with nothing
# to build pushes the repository as it is, so that a push that failed is made good by the
# next pass; one whose push the registry refuses fails, saying so in its report's publish.
python3 - "$KERNEL" >"$T/nodes.json" <<'PY'
import json, sys
print(json.dumps({"kind": "NodeList", "items": [{"kind": "Node", "metadata": {"name": "node-a"},
    "status": {"nodeInfo": {"kernelVersion": sys.argv[1], "architecture": "amd64",
                            "osImage": "Debian GNU/Linux 12 (bookworm)"}}}]}))
PY
SREF=oci://$OCI_HOST/nvidia/supply:v1
pass() { # AUTH_FILE: one pass, its status in $rc, its report in $T/pass.json
    cat >"$T/supply.json" <<JSON
{"supply": 1, "driver_versions": ["$V_NEW"], "flavours": ["proprietary"],
 "publish": {"to": ["$SREF"], "ca_file": "$OCI_CA", "registry_auth": ["$1"]}}
JSON
    rc=0
    "$SRC/scripts/supply" --repo "$T/repo" --repo-key "$FIX/keys/key.pem" --config "$T/supply.json" \
        --nodes "$T/nodes.json" --installer "$BIN" --work "$T/work" --json "$T/pass.json" \
        >"$T/pass.out" 2>"$T/pass.err" || rc=$?
}
pass "$T/bad-auth.json"
assert_eq "$rc" 1 "a pass whose push is refused: $(cat "$T/pass.err")"
python3 - "$T/pass.json" "$SREF" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["publish"]
assert p["stages"] == 0 and p["to"] == [sys.argv[2]], p
assert p["error"].startswith("make-repo publish exit 1: make-repo: the push to %s failed "
                             "(nvidia-driver-installer mirror, exit 4: ERROR " % sys.argv[2]), p
PY
pass "$OCI_AUTH_FILE"
assert_eq "$rc" 0 "the next pass: $(cat "$T/pass.err")"
expect_rc 0 mirror --from "$SREF" --repo-key "$FIX/keys/pub.pem" --to "$T/back-supply" "${pull[@]}"
cmp "$T/repo/index.json" "$T/back-supply/index.json" || fail "the pass pushed another index"
