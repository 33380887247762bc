# mirror between directories, registries and OCI image layouts, against a real registry
# (tests/tools/oci-registry.py: Debian's docker-registry over TLS): DIR -> oci:// -> DIR byte
# for byte, anonymous, with htpasswd and behind a token server; the air gap (oci:// ->
# oci-layout:, skopeo copies the layout into another repository, a node installs from it);
# skopeo's copy of what was pushed read back by mirror --from oci-layout:; a re-run uploads
# nothing; a partial mirror lists only its packages; an older index is refused at the
# registry; a package failing its digest never reaches it.
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_OLD:default" "$V_NEW"
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_NEW" \
    --kernel "$OTHER_KERNEL" "$FIX/spkg-$V_NEW.tar.zst" >/dev/null
cp -a "$T/srv/repo" "$T/old"

# mirror RC FROM TO [options]: with the test CA and the registry's credentials.
mirror() {
    expect_rc "$1" mirror --from "$2" --to "$3" --repo-key "$FIX/keys/pub.pem" \
        --ca-file "$OCI_CA" --registry-auth "$OCI_AUTH_FILE" "${@:4}"
}
# same_repo A B: the index, its signature and the packages, byte for byte.
same_repo() {
    cmp "$1/index.json" "$2/index.json" && cmp "$1/index.json.sig" "$2/index.json.sig" &&
        diff -r "$1/packages" "$2/packages" || fail "$2 is not $1"
}
# requests METHOD URI-REGEX: how many the registry logged so far.
requests() {
    grep -c "\"http.request.method\":\"$1\",\"http.request.remoteaddr\":\"[^\"]*\",\"http.request.uri\":\"$2" \
        "$OCI_LOG" || true
}
# manifest NAME:TAG: the manifest the registry serves, as pulled into a layout by skopeo.
pulled() {
    rm -rf "$T/pulled"
    skopeo copy --quiet --preserve-digests --src-cert-dir "$OCI_CERT_DIR" \
        --authfile "$OCI_AUTH_FILE" "docker://$OCI_HOST/$1" "oci:$T/pulled:${1#*:}" ||
        fail "skopeo could not pull $1"
}

# DIR -> oci:// -> DIR in each mode: what comes back is what went.
for mode in anonymous htpasswd token; do
    # htpasswd's blobs are a redirect to another host (a storage server that logs headers).
    oci_registry_start "$mode" $([ "$mode" != htpasswd ] || echo --storage-redirect)
    mirror 0 "file://$T/srv/repo" "oci://$OCI_HOST/drivers/repo:v1"
    expect_out "mirrored 3 package(s), 0 already present, to oci://$OCI_HOST/drivers/repo:v1"
    pulled drivers/repo:v1
    python3 "$SRC/tests/tools/oci-artifact.py" "$T/pulled" v1 "$T/srv/repo" all ||
        fail "$mode: the pushed artifact"
    mirror 0 "oci://$OCI_HOST/drivers/repo:v1" "$T/back-$mode"
    expect_out "mirrored 3 package(s), 0 already present"
    same_repo "$T/srv/repo" "$T/back-$mode"
    if [ "$mode" = htpasswd ]; then
        # A re-run reads what the tag holds (the index and its signature, through the
        # redirect): the storage host gets them, never the credentials.
        idx=$(sha256sum "$T/srv/repo/index.json" | cut -d' ' -f1)
        stored() { grep -c "\"method\": \"GET\", \"path\": \"/docker/registry/v2/blobs/sha256/../$idx/data" \
            "$OCI_STORAGE_LOG" || true; }
        before=$(stored)
        mirror 0 "file://$T/srv/repo" "oci://$OCI_HOST/drivers/repo:v1"
        expect_out "mirrored 0 package(s), 3 already present"
        [ "$(stored)" -gt "$before" ] ||
            fail "the index was not read through the storage host: $(cat "$OCI_STORAGE_LOG")"
        ! grep -qi '"authorization"' "$OCI_STORAGE_LOG" || fail "credentials sent to the storage host"
    fi
    [ "$mode" = token ] || oci_registry_stop
done
grep -q '"scope": \["repository:drivers/repo:pull,push"\]' "$OCI_TOKEN_LOG" ||
    fail "no token asked for pull,push: $(cat "$OCI_TOKEN_LOG")"

# A re-run uploads nothing: no POST, no PUT (the manifest is the one the tag names).
posts=$(requests POST /v2/drivers/repo/blobs/uploads/)
puts=$(requests PUT /v2/drivers/repo/)
mirror 0 "file://$T/srv/repo" "oci://$OCI_HOST/drivers/repo:v1" --json
assert_eq "$(python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))
print(o["to"], o["copied"], o["kept"], o["network_bytes"], sorted({p["action"] for p in o["packages"]}))' \
    "$T/out")" "oci://$OCI_HOST/drivers/repo:v1 0 3 0 ['kept']" "a re-run's --json"
assert_eq "$(requests POST /v2/drivers/repo/blobs/uploads/)" "$posts" "uploads begun by a re-run"
assert_eq "$(requests PUT /v2/drivers/repo/)" "$puts" "PUTs of a re-run"

# The air gap: the registry into a layout (one command), skopeo copies the layout into another
# registry's repository (the other side's one command), and a node installs from it.
mirror 0 "oci://$OCI_HOST/drivers/repo:v1" "oci-layout:$T/carry:v1"
python3 "$SRC/tests/tools/oci-artifact.py" "$T/carry" v1 "$T/srv/repo" all ||
    fail "the layout carried across the air gap"
skopeo copy --quiet --preserve-digests --dest-cert-dir "$OCI_CERT_DIR" \
    --authfile "$OCI_AUTH_FILE" "oci:$T/carry:v1" "docker://$OCI_HOST/inside/repo:v1" ||
    fail "skopeo could not copy the layout into the registry"
expect_rc 0 install --repo "oci://$OCI_HOST/inside/repo:v1" --ca-file "$OCI_CA" \
    --registry-auth "$OCI_AUTH_FILE" $(install_args)
assert_eq "$(installed_version)" "$V_OLD" "installed from the repository across the air gap"

# Registry to registry, one command: the same artifact under another name.
mirror 0 "oci://$OCI_HOST/drivers/repo:v1" "oci://$OCI_HOST/copy/repo:v1"
expect_out "mirrored 3 package(s), 0 already present"
pulled copy/repo:v1
python3 "$SRC/tests/tools/oci-artifact.py" "$T/pulled" v1 "$T/srv/repo" all ||
    fail "the registry-to-registry copy"

# skopeo's copy of what mirror pushed, read back by mirror --from oci-layout:.
pulled drivers/repo:v1
mirror 0 "oci-layout:$T/pulled:v1" "$T/from-skopeo"
same_repo "$T/srv/repo" "$T/from-skopeo"

# A partial mirror lists only the packages it carries (the index whole).
mirror 0 "file://$T/srv/repo" "oci://$OCI_HOST/drivers/partial:k" --kernel "$OTHER_KERNEL"
expect_out "mirrored 1 package(s), 0 already present"
pulled drivers/partial:k
python3 "$SRC/tests/tools/oci-artifact.py" "$T/pulled" k "$T/srv/repo" "$OTHER_KERNEL" ||
    fail "the partial mirror's manifest"

# A newer index, then the older one: refused at the registry, the tag as it was.
"$SRC/scripts/make-repo" add --repo "$T/srv/repo" --key "$FIX/keys/key.pem" --version "$V_BRANCH_OLD" \
    --kernel "$KERNEL" "$FIX/pkg-$V_BRANCH_OLD.tar.zst" >/dev/null
mirror 0 "file://$T/srv/repo" "oci://$OCI_HOST/drivers/repo:v1"
expect_out "mirrored 1 package(s), 3 already present"
puts=$(requests PUT /v2/drivers/repo/manifests/)
mirror 5 "file://$T/old" "oci://$OCI_HOST/drivers/repo:v1"
expect_err "is older than the one generated"
expect_err "that the mirror holds"
assert_eq "$(requests PUT /v2/drivers/repo/manifests/)" "$puts" "manifest PUTs of a refused run"
pulled drivers/repo:v1
python3 "$SRC/tests/tools/oci-artifact.py" "$T/pulled" v1 "$T/srv/repo" all ||
    fail "the tag after a refused rollback"

# A package failing its digest never reaches the registry: no upload names its digest.
bad="$T/srv/repo/packages/$KERNEL/x86_64/nvidia-$V_BRANCH_OLD.tar.zst"
sha=$(sha256sum "$bad" | cut -d' ' -f1)
printf 'X' | dd of="$bad" bs=1 seek=100 conv=notrunc 2>/dev/null
mirror 5 "file://$T/srv/repo" "oci://$OCI_HOST/drivers/bad:v1"
expect_err "sha256 mismatch"
uploaded() { grep -q "/v2/drivers/bad/blobs/uploads/[^\"]*digest=sha256[:%3A]*$1" "$OCI_LOG"; }
uploaded "$sha" && fail "a package that failed its digest was uploaded"
# (The packages before it in the index's order were: the log shows an upload when there is one.)
uploaded "$(sha256sum "$T/old/packages/$KERNEL/x86_64/nvidia-$V_OLD.tar.zst" | cut -d' ' -f1)" ||
    fail "no upload of a good package in $OCI_LOG"
assert_eq "$(requests PUT /v2/drivers/bad/manifests/)" 0 "manifest PUTs of a failed run"

# A digest is not a tag to push to; credentials the registry refuses are exit 4, named.
mirror 2 "file://$T/srv/repo" "oci://$OCI_HOST/drivers/repo@sha256:$sha"
expect_err "a push names a tag, not a digest"
printf '{"auths":{"%s":{"auth":"%s"}}}' "$OCI_HOST" "$(printf '%s:wrong' "$OCI_USER" | base64)" >"$T/wrong.json"
expect_rc 4 mirror --from "file://$T/srv/repo" --to "oci://$OCI_HOST/drivers/repo:v2" \
    --repo-key "$FIX/keys/pub.pem" --ca-file "$OCI_CA" --registry-auth "$T/wrong.json"
expect_err "refused"
# A registry that does not answer: exit 4, the fix naming --to, not --repo.
dead=127.0.0.1:$(dead_port)
expect_rc 4 mirror --from "file://$T/old" --to "oci://$dead/drivers/repo:v1" \
    --repo-key "$FIX/keys/pub.pem" --fetch-timeout 5 --fetch-retries 0
expect_err "fix: check --to and this machine's network to $dead"
