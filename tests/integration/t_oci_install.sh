# Install from a repository in an OCI registry (Debian's docker-registry, real, over TLS):
# anonymous, htpasswd and behind a token server, each byte-identical to the same repository
# served over HTTPS (the same package, the same install dir); from an OCI image layout
# directory; a warm re-run asks the registry once (its log counts); mirrors in order, a dead
# registry first; a registry that wants credentials refuses a run without them by name.

# oci_layout_from REPO LAYOUT TAG: REPO (the HTTP layout) as an OCI image layout, one
# manifest tagged TAG by docs/repository-format.md "In an OCI registry" (what skopeo pushes
# byte for byte: the registry serves the manifest as written here).
oci_layout_from() {
    python3 - "$@" <<'PY'
import hashlib, json, os, sys
repo, d, tag = sys.argv[1:4]
os.makedirs(d + "/blobs/sha256", exist_ok=True)
def blob(data):
    h = hashlib.sha256(data).hexdigest()
    with open("%s/blobs/sha256/%s" % (d, h), "wb") as f:
        f.write(data)
    return h
P = "application/vnd.nvidia.driver-installer."
def layer(mt, path):
    data = open(os.path.join(repo, path), "rb").read()
    return {"mediaType": mt, "digest": "sha256:" + blob(data), "size": len(data),
            "annotations": {"org.opencontainers.image.title": path}}
idx = json.load(open(repo + "/index.json"))
layers = [layer(P + "index.v1+json", "index.json"),
          layer(P + "index.signature.v1", "index.json.sig")]
seen = set()
for p in (p for drv in idx["drivers"] for p in drv["packages"]):
    if p["sha256"] not in seen:
        seen.add(p["sha256"])
        layers.append(layer(P + "package.v1.tar+zstd", p["path"]))
blob(b"{}")
mt = "application/vnd.oci.image.manifest.v1+json"
m = {"schemaVersion": 2, "mediaType": mt, "artifactType": P + "repository.v1",
     "config": {"mediaType": "application/vnd.oci.empty.v1+json", "size": 2,
                "digest": "sha256:" + hashlib.sha256(b"{}").hexdigest()},
     "layers": layers, "annotations": {"org.opencontainers.image.created": idx["generated"]}}
data = json.dumps(m).encode()
with open(d + "/index.json", "w") as f:
    json.dump({"schemaVersion": 2, "manifests": [{
        "mediaType": mt, "digest": "sha256:" + blob(data), "size": len(data),
        "annotations": {"org.opencontainers.image.ref.name": tag}}]}, f)
with open(d + "/oci-layout", "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
PY
}

# push REF: the layout to the registry with skopeo, as published (credentials when it wants).
push() {
    local creds=()
    [ -z "$OCI_USER" ] || creds=(--dest-creds "$OCI_USER:$OCI_PASS")
    skopeo copy --quiet --dest-cert-dir "$OCI_CERT_DIR" "${creds[@]}" "oci:$T/layout:latest" \
        "docker://$1" || fail "skopeo push to $1"
}

# What an install left: the package the cache holds and every file of the install dir but
# .install.json, the record of when and from where.
installed() {
    (cd "$T/root/var/cache/nvidia-driver-installer" && find . -name '*.pkg' | sort)
    (cd "$(idir)/.versions" && find . -type f ! -name .install.json -exec sha256sum {} + | sort)
}

# fresh_install NAME ARGS...: an install into an empty root; what it left in $T/NAME.
fresh_install() {
    local name=$1
    shift
    rm -rf "$T/root"
    mkroot "$T/root"
    expect_rc 0 install "$@" --ca-file "$OCI_CA" $(install_args)
    assert_eq "$(installed_version)" "$V_NEW" "$name: installed version"
    installed >"$T/$name"
}

# The installer's requests in the registry's access log (what a node asked of it).
asked() {
    grep -c '^127\.0\.0\.1 - .*"nvidia-driver-installer/' "$OCI_LOG" || true
}

new_repo "$T/srv/repo" "$V_NEW:default"
oci_layout_from "$T/srv/repo" "$T/layout" latest

# The same repository over HTTPS, with the registry's certificate: what every other must equal.
oci_registry_start anonymous
start_httpd "$T/srv" tls --tls-cert "$OCI_DIR/server.pem" --tls-key "$OCI_DIR/server.key"
fresh_install https --repo "$HTTP/repo"
grep -q "$(sha256sum "$T/srv/repo"/packages/*/*/*.tar.zst | cut -c1-64).pkg" "$T/https" ||
    fail "the HTTPS install cached another package"

# Anonymous registry.
push "$OCI_HOST/drivers/repo:latest"
fresh_install anonymous --repo "oci://$OCI_HOST/drivers/repo"
cmp "$T/https" "$T/anonymous" || fail "oci:// (anonymous) installed other bytes than https://"

# warm_rerun MODE ARGS...: the same install again asks the registry once: the HEAD of the
# tag answers the digest the cached index came from (with the credentials, or a token, the
# registry asked for last time sent at once).
warm_rerun() {
    local mode=$1 n
    shift
    n=$(asked)
    expect_rc 0 install "$@" --ca-file "$OCI_CA" --index-max-age 0 $(install_args)
    expect_err "already installed"
    expect_err "the manifest is the cached index's: no blob asked for"
    assert_eq "$(($(asked) - n))" 1 "$mode: requests to the registry on the warm re-run"
}
warm_rerun anonymous --repo "oci://$OCI_HOST/drivers/repo"

# By digest, and a dead registry first: the mirrors in order.
digest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' \
    "$T/layout/index.json")
dead=127.0.0.1:$(dead_port)
fresh_install mirrors --repo "oci://$dead/drivers/repo,oci://$OCI_HOST/drivers/repo@$digest"
cmp "$T/https" "$T/mirrors" || fail "oci:// (second mirror) installed other bytes"
expect_err "$dead"

# containerd's hosts.toml: the registry's name resolves nowhere; its mirrors, a dead one
# first, then this registry (with its CA), are asked in the file's order.
mkdir -p "$T/certs.d/registry.invalid"
cat >"$T/certs.d/registry.invalid/hosts.toml" <<EOF
server = "https://registry.invalid"

[host."https://$dead"]
  capabilities = ["pull", "resolve"]

[host."https://$OCI_HOST"]
  capabilities = ["pull", "resolve"]
  ca = "$OCI_CA"
EOF
fresh_install hosts --repo oci://registry.invalid/drivers/repo --registry-hosts "$T/certs.d"
cmp "$T/https" "$T/hosts" || fail "oci:// (hosts.toml) installed other bytes"
expect_err "oci://registry.invalid/drivers/repo via https://$dead"
expect_err "mirror=oci://registry.invalid/drivers/repo via https://$OCI_HOST bytes="

# A registry of static files (the test's web server over TLS): it names no digest
# (Docker-Content-Digest is not required), so the manifest's own is taken, and a warm
# re-run, which must then read the manifest to know it, asks for no blob.
mkdir -p "$T/static-reg/v2/drivers/repo/manifests" "$T/static-reg/v2/drivers/repo/blobs"
for b in "$T/layout/blobs/sha256/"*; do
    cp "$b" "$T/static-reg/v2/drivers/repo/blobs/sha256:${b##*/}"
done
cp "$T/layout/blobs/sha256/${digest#sha256:}" "$T/static-reg/v2/drivers/repo/manifests/latest"
start_httpd "$T/static-reg" static --tls-cert "$OCI_DIR/server.pem" --tls-key "$OCI_DIR/server.key"
fresh_install static --repo "oci://${HTTP#https://}/drivers/repo"
cmp "$T/https" "$T/static" || fail "oci:// (static files) installed other bytes"
http_log_reset
expect_rc 0 install --repo "oci://${HTTP#https://}/drivers/repo" --ca-file "$OCI_CA" \
    --index-max-age 0 $(install_args)
expect_err "the manifest is the cached index's: no blob asked for"
assert_eq "$(served_requests /blobs/)" 0 "blob requests on the static registry's warm re-run"
# Faults on the way: the manifest answered 503 once (retried), the package's blob cut
# halfway (resumed with Range from where it stopped, not fetched again).
pkg_sha=$(sha256sum "$T/srv/repo"/packages/*/*/*.tar.zst | cut -c1-64)
pkg_size=$(stat -c %s "$T/srv/repo"/packages/*/*/*.tar.zst)
printf '[{"path": "/v2/drivers/repo/manifests/latest", "action": "status", "code": 503, "times": 1},
 {"path": "/v2/drivers/repo/blobs/sha256:%s", "action": "truncate", "at": %d, "times": 1}]\n' \
    "$pkg_sha" $((pkg_size / 2)) >"$HTTP_FAULTS"
http_log_reset
fresh_install static-faults --repo "oci://${HTTP#https://}/drivers/repo"
cmp "$T/https" "$T/static-faults" || fail "oci:// (faults, resumed) installed other bytes"
http_settle
python3 - "$HTTP_LOG" "$pkg_sha" "$((pkg_size / 2))" <<'PY' || fail "the blob was not resumed"
import json, sys
log, sha, half = sys.argv[1], sys.argv[2], int(sys.argv[3])
gets = [e for e in map(json.loads, open(log)) if e["path"].endswith("sha256:" + sha)]
print("package blob requests:", [(e["range"], e["status"], e["bytes"]) for e in gets])
assert len(gets) == 2 and gets[1]["range"] == "bytes=%d-" % half and gets[1]["status"] == 206
assert sum(e["bytes"] for e in gets) < 2 * half + 1024
PY

# An OCI image layout directory, as skopeo and oras write it.
fresh_install from-layout --repo "oci-layout:$T/layout:latest"
cmp "$T/https" "$T/from-layout" || fail "oci-layout: installed other bytes"
oci_registry_stop

# htpasswd: refused by name without credentials, installed with the pull Secret's file.
oci_registry_start htpasswd
push "$OCI_HOST/drivers/repo:latest"
rm -rf "$T/root"
mkroot "$T/root"
expect_rc 4 install --repo "oci://$OCI_HOST/drivers/repo" --ca-file "$OCI_CA" $(install_args)
expect_err "registry '$OCI_HOST' refused anonymous access for 'drivers/repo'"
fresh_install htpasswd --repo "oci://$OCI_HOST/drivers/repo" --registry-auth "$OCI_AUTH_FILE"
cmp "$T/https" "$T/htpasswd" || fail "oci:// (htpasswd) installed other bytes"
warm_rerun htpasswd --repo "oci://$OCI_HOST/drivers/repo" --registry-auth "$OCI_AUTH_FILE"
# Wrong credentials: the registry refused them, exit 4 and the fix.
sed "s/$(printf '%s:%s' "$OCI_USER" "$OCI_PASS" | base64 -w0)/$(printf '%s:wrong' "$OCI_USER" | base64 -w0)/" \
    "$OCI_AUTH_FILE" >"$T/wrong.json"
rm -rf "$T/root"
mkroot "$T/root"
expect_rc 4 install --repo "oci://$OCI_HOST/drivers/repo" --ca-file "$OCI_CA" \
    --registry-auth "$T/wrong.json" $(install_args)
expect_err "refused the credentials"
expect_err "check the Secret in --registry-auth"
# The registry as a hosts.toml mirror of registry.invalid: credentials for registry.invalid
# are not sent to it (refused anonymous access); its own are.
mkdir -p "$T/mirror.d/registry.invalid"
printf '[host."https://%s"]\n  capabilities = ["pull", "resolve"]\n  ca = "%s"\n' "$OCI_HOST" \
    "$OCI_CA" >"$T/mirror.d/registry.invalid/hosts.toml"
sed "s/$OCI_HOST/registry.invalid/" "$OCI_AUTH_FILE" >"$T/upstream-auth.json"
rm -rf "$T/root"
mkroot "$T/root"
expect_rc 4 install --repo oci://registry.invalid/drivers/repo --registry-hosts "$T/mirror.d" \
    --registry-auth "$T/upstream-auth.json" --ca-file "$OCI_CA" --fetch-retries 0 $(install_args)
expect_err "registry '$OCI_HOST' refused anonymous access"
fresh_install via-mirror --repo oci://registry.invalid/drivers/repo --registry-hosts "$T/mirror.d" \
    --registry-auth "$OCI_AUTH_FILE"
cmp "$T/https" "$T/via-mirror" || fail "oci:// (a mirror with its own credentials) installed other bytes"

# A Google registry's name (reached through hosts.toml) and no auth file for it: the GCE
# metadata server's token is the credential (user oauth2accesstoken), asked with its header;
# this registry refuses it, by name. With --registry-gce-metadata no, nothing is asked.
mkdir -p "$T/gcp.d/us-docker.pkg.dev"
printf 'server = "https://%s"\nca = "%s"\n' "$OCI_HOST" "$OCI_CA" \
    >"$T/gcp.d/us-docker.pkg.dev/hosts.toml"
echo token >"$T/gce.mode"
python3 "$SRC/tests/tools/gce-metadata.py" --port-file "$T/gce.port" --mode-file "$T/gce.mode" \
    --log "$T/gce.log" --lifetime 300 &
wait_for "the metadata server's port" 60 test -s "$T/gce.port"
export GCE_METADATA_HOST=127.0.0.1:$(cat "$T/gce.port")
rm -rf "$T/root"
mkroot "$T/root"
expect_rc 4 install --repo oci://us-docker.pkg.dev/drivers/repo --registry-hosts "$T/gcp.d" \
    --ca-file "$OCI_CA" $(install_args)
expect_err "registry 'us-docker.pkg.dev' refused the credentials"
grep -q 'Google' "$T/gce.log" || fail "the metadata server was not asked with its header"
: >"$T/gce.log"
expect_rc 4 install --repo oci://us-docker.pkg.dev/drivers/repo --registry-hosts "$T/gcp.d" \
    --registry-gce-metadata no --ca-file "$OCI_CA" $(install_args)
expect_err "refused anonymous access"
[ ! -s "$T/gce.log" ] || fail "--registry-gce-metadata no asked the metadata server"
unset GCE_METADATA_HOST
oci_registry_stop

# Behind a token server, blobs redirected to storage on another host: the token asked for
# repository:drivers/repo:pull; the storage server saw the blobs asked for, and no
# Authorization header (libcurl's own auth does not follow a redirect to another host).
oci_registry_start token --storage-redirect
push "$OCI_HOST/drivers/repo:latest"
fresh_install token --repo "oci://$OCI_HOST/drivers/repo" --registry-auth "$OCI_AUTH_FILE"
cmp "$T/https" "$T/token" || fail "oci:// (token) installed other bytes"
warm_rerun token --repo "oci://$OCI_HOST/drivers/repo" --registry-auth "$OCI_AUTH_FILE"
grep -q 'repository:drivers/repo:pull' "$OCI_TOKEN_LOG" ||
    fail "no token for repository:drivers/repo:pull in $OCI_TOKEN_LOG"
python3 - "$OCI_STORAGE_LOG" <<'PY' || fail "the storage server saw credentials, or no blob"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
gets = [l for l in lines if l["method"] == "GET" and "nvidia-driver-installer" in
        l["headers"].get("User-Agent", "")]
leaked = [l for l in gets if any(k.lower() == "authorization" for k in l["headers"])]
print("storage: %d requests of ours, %d with credentials" % (len(gets), len(leaked)))
sys.exit(0 if gets and not leaked else 1)
PY
oci_registry_stop
