# Hostile OCI registries (tests/tools/oci-standin.py): each refused by name, with the exit
# code docs/exit-codes.md gives its class, and the node's installed driver untouched. A good
# driver ($V_OLD) is installed first from a good registry; the hostile one serves a newer
# repository ($V_NEW, default) with one fault at a time:
#   a blob whose bytes lie about their digest (the index's, the signature's, the package's),
#   a `urls` descriptor, a lying Docker-Content-Digest, a manifest over 4 MiB (with and
#   without Content-Length, and not read to its end): EXIT_VERIFY (5);
#   a manifest naming a blob only another repository of the server holds (this one answers
#   404 for it, and the other is never asked), a token endpoint answering garbage, one that
#   never answers, 401 to every request even with credentials or a fresh token (two
#   requests, one token, no retry): EXIT_UNREACHABLE (4), naming the blob, the realm or the
#   registry.
# The blob redirect to another host (127.0.0.2) installs, and the storage host's log shows
# no Authorization header on any request while the registry's shows one on each blob's; the
# same through the real registry (tests/tools/oci-registry.py --storage-redirect). A registry
# replaying the older, validly signed repository is refused by anti-rollback as a web
# server's would be (the node keeps its newer index).
mkroot "$T/root"
new_repo "$T/good" "$V_OLD:default"
new_repo "$T/new" "$V_OLD" "$V_NEW:default"

oci_standin_start good "$T/good"
GOOD_REF=$STANDIN_REF
GOOD_CA=$STANDIN_CA
expect_rc 0 install --repo "$GOOD_REF" --ca-file "$GOOD_CA" $(install_args)
assert_eq "$(installed_version)" "$V_OLD" "installed from the good registry"
before=$(snapshot "$(idir)")

oci_standin_start hostile "$T/new"
n=0
# hostile RC MESSAGE AUTH FAULT...: the install from the hostile registry under AUTH and
# FAULTs exits RC, MESSAGE on one line of its stderr, the installed driver as it was. Each
# case has a cache of its own (an index verified in one case must not answer for the next).
hostile() {
    local rc=$1 msg=$2
    shift 2
    n=$((n + 1))
    oci_standin_faults "$@"
    : >"$STANDIN_LOG"
    : >"$STANDIN_TOKEN_LOG"
    : >"$STANDIN_STORAGE_LOG"
    expect_rc "$rc" install --repo "$STANDIN_REF" --ca-file "$STANDIN_CA" \
        --registry-auth "$STANDIN_AUTH_FILE" --cache-dir "/var/cache/hostile-$n" \
        $(install_args) ${FETCH_TIMEOUT:+--fetch-timeout "$FETCH_TIMEOUT"}
    expect_err "$msg"
    echo "$*: exit $RC: $(grep '^ERROR' "$T/err")"
    assert_eq "$(installed_version)" "$V_OLD" "the installed driver after '$*'"
    assert_eq "$(snapshot "$(idir)")" "$before" "the install directory after '$*'"
}
# no_request PATTERN: the hostile registry's log has no request whose path matches.
no_request() {
    ! grep -q "\"path\": \"$1" "$STANDIN_LOG" || fail "a request for $1: $(grep "$1" "$STANDIN_LOG")"
}

# Blobs whose bytes are not the digest the manifest names (one byte changed, same length).
layer_of() { # TITLE-SUBSTRING: the index and digest of the hostile manifest's layer
    curl -s --cacert "$STANDIN_CA" -H "Accept: application/vnd.oci.image.manifest.v1+json" \
        "https://$STANDIN_HOST/v2/ndi/drivers/manifests/latest" | python3 -c '
import json, sys
for i, d in enumerate(json.load(sys.stdin)["layers"]):
    if sys.argv[1] in d["annotations"]["org.opencontainers.image.title"]:
        print(i, d["digest"])
        break' "$1"
}
oci_standin_faults none
read -r _ index_digest < <(layer_of index.json)
read -r _ sig_digest < <(layer_of index.json.sig)
read -r new_layer pkg_digest < <(layer_of "nvidia-$V_NEW.")
[ -n "$new_layer" ] || fail "no layer for $V_NEW in the hostile manifest"
hostile 5 "the index.json blob ${index_digest:0:19}\.\.\. has [0-9]* bytes that do not hash to its digest" \
    none lying-blob:layer=index
hostile 5 "the index.json.sig blob ${sig_digest:0:19}\.\.\. has [0-9]* bytes that do not hash to its digest" \
    none lying-blob:layer=sig
hostile 5 "blobs/$pkg_digest': sha256 mismatch (expected ${pkg_digest:7:12}\.\.\., got" \
    none "lying-blob:layer=$new_layer"

# A manifest naming a blob this repository does not hold (the other repository of the same
# server does): the registry's 404 for it in this repository is a repository that
# contradicts its manifest, said so (not "a partial mirror": its manifest lists the
# package), EXIT_UNREACHABLE with one mirror; it is never asked for under the other name.
hostile 4 "its manifest lists package .* but the repository has no such blob" \
    none "foreign-blob:layer=$new_layer"
no_request "/v2/$STANDIN_OTHER/"

# urls on a descriptor: refused before any blob, and the storage host never asked.
hostile 5 'has "urls": a blob is only read from the registry itself' none "urls:layer=$new_layer"
[ ! -s "$STANDIN_STORAGE_LOG" ] || fail "the urls host was asked: $(cat "$STANDIN_STORAGE_LOG")"
no_request "/v2/ndi/drivers/blobs/"

# A Docker-Content-Digest that is not the manifest's: refused.
hostile 5 "the manifest's bytes do not hash to sha256:[0-9a-f]\{64\}, the digest the registry names" \
    none digest-header-lies

# A manifest over 4 MiB (64 MiB): refused, with Content-Length and without, and not read
# to its end (the stand-in logs the bytes taken once the installer stops reading: what the
# sockets' buffers hold beyond 4 MiB, a few MiB).
read_stopped() {
    curl -s --max-time 60 --cacert "$STANDIN_CA" -o /dev/null "https://$STANDIN_HOST/.settle"
    python3 - "$STANDIN_LOG" <<'PY' || fail "the huge manifest was read on"
import json, sys
gets = [e for e in map(json.loads, open(sys.argv[1]))
        if e["method"] == "GET" and "/manifests/" in e["path"] and e["status"] == 200]
for e in gets:
    print("manifest GET: %d of %d bytes taken" % (e["bytes"], e["size"]))
    assert e["bytes"] < 32 << 20, e
PY
}
hostile 5 "manifest $STANDIN_REF: .*: larger than 4194304 bytes" none huge-manifest:bytes=67108864
read_stopped
hostile 5 "manifest $STANDIN_REF: .*: larger than 4194304 bytes" \
    none huge-manifest:bytes=67108864,sized=false
read_stopped

# The token endpoint: garbage, and a stall (the fetch budget ends it); both name the realm.
realm="https://$STANDIN_HOST/token"
hostile 4 "$realm" token token-garbage
expect_err "fix: the token endpoint did not answer as the distribution token spec says"
grep -q '"status": 200' "$STANDIN_TOKEN_LOG" || fail "the garbage token endpoint was not asked"
# JSON, but no token in it; and a token that would put a header of its own into the requests.
hostile 4 "the token endpoint '$realm' answered garbage" token 'token-garbage:body={"expires_in": 60}'
hostile 4 "the token endpoint '$realm' answered garbage" token \
    'token-garbage:body={"token": "t\r\nX-Injected: 1"}'
! grep -qi '"x-injected"' "$STANDIN_LOG" || fail "the token's header reached the registry"
# A token endpoint that redirects elsewhere is not followed: what goes for a token (Basic
# credentials, a refresh token in a POST's body) stays with the host the registry named.
hostile 4 "the token endpoint '$realm': HTTP 307: redirected to 'https://127.0.0.2:[0-9]*/token', not followed" \
    token token-redirect
! grep -q '"path": "/token' "$STANDIN_STORAGE_LOG" ||
    fail "the token request followed the redirect: $(grep '/token' "$STANDIN_STORAGE_LOG")"
t0=$(date +%s)
FETCH_TIMEOUT=5 hostile 4 "$realm" token token-stall
expect_err "fix: registry '$STANDIN_HOST' sends its clients to that token endpoint: the node must reach it"
grep -q '"status": "stalled"' "$STANDIN_TOKEN_LOG" || fail "the stalling token endpoint was not asked"
[ $(($(date +%s) - t0)) -lt 60 ] || fail "the stalled token endpoint held the install $(($(date +%s) - t0)) s"

# 401 to every request, even with credentials or a fresh token: the credentials refused
# (permanent: not retried), one token asked for per 401 at most: the anonymous request,
# the one with credentials (or a token: one token asked for), and nothing more.
storm_counts() { # AUTH
    local tokens requests
    tokens=$(grep -c '"status": 200' "$STANDIN_TOKEN_LOG" || true)
    requests=$(wc -l <"$STANDIN_LOG")
    echo "$1 storm: $requests requests, $tokens tokens"
    [ "$tokens" = "$([ "$1" = token ] && echo 1 || echo 0)" ] ||
        fail "the $1 401 storm: $tokens tokens asked for"
    [ "$requests" -eq 2 ] || fail "the $1 401 storm: $requests requests: $(cat "$STANDIN_LOG")"
}
hostile 4 "registry '$STANDIN_HOST' refused the credentials for 'ndi/drivers'" basic storm
storm_counts basic
hostile 4 "registry '$STANDIN_HOST' refused the credentials for 'ndi/drivers'" token storm
storm_counts token

# The storage host a blob is redirected to answers 401 with a challenge of its own realm:
# it is that host's, not the registry's, and it is not answered with the registry's
# credentials (a client that took it for the registry's would send them to that realm).
for auth in basic token; do
    hostile 4 "where the registry redirected, answered HTTP 401: not answered with the registry's credentials" \
        "$auth" redirect storage-challenge
    ! grep -q '"path": "/token' "$STANDIN_STORAGE_LOG" ||
        fail "$auth: the storage host's realm was asked: $(grep '/token' "$STANDIN_STORAGE_LOG")"
    ! grep -qi '"authorization"' "$STANDIN_STORAGE_LOG" ||
        fail "$auth: credentials reached the storage host: $(grep -i authorization "$STANDIN_STORAGE_LOG")"
done

# mirror --to oci://: the registry answers the upload's POST with a Location on another host
# (the storage host): the PUT goes there without the registry's credentials (the storage
# host's log has it, with no Authorization), while the POST to the registry carried them.
for auth in basic token; do
    oci_standin_faults "$auth" upload-elsewhere
    : >"$STANDIN_LOG"
    : >"$STANDIN_STORAGE_LOG"
    expect_rc 4 mirror --from "file://$T/new" --to "oci://$STANDIN_HOST/ndi/pushed" \
        --ca-file "$STANDIN_CA" --registry-auth "$STANDIN_AUTH_FILE" \
        --repo-key "$FIX/keys/pub.pem"
    expect_err "'https://127.0.0.2:[0-9]*/upload/1?digest=sha256:[0-9a-f]*': HTTP 403"
    grep -q '"method": "PUT", "path": "/upload/1' "$STANDIN_STORAGE_LOG" ||
        fail "$auth: no PUT came to the storage host: $(cat "$STANDIN_STORAGE_LOG")"
    ! grep -qi '"authorization"' "$STANDIN_STORAGE_LOG" ||
        fail "$auth: credentials went with the upload: $(grep -i authorization "$STANDIN_STORAGE_LOG")"
    python3 - "$STANDIN_LOG" "$auth" <<'PY' || fail "$auth: the registry's upload POST"
import json, sys
scheme = {"basic": "Basic ", "token": "Bearer "}[sys.argv[2]]
posts = [e for e in map(json.loads, open(sys.argv[1]))
         if e["method"] == "POST" and e.get("status") == 202]
assert posts, "no upload POST answered 202"
assert all(e["headers"].get("Authorization", "").startswith(scheme) for e in posts), posts
PY
done

# A blob redirect to another host: installed, the credentials never followed. Under Basic
# and under token auth, the registry's blob requests carry Authorization; the storage
# host's requests carry none.
# Basic first (the default driver, $V_NEW), then token ($V_OLD asked for: its package too
# comes through the redirect).
for auth in basic token; do
    want=$V_NEW
    [ "$auth" = basic ] || want=$V_OLD
    oci_standin_faults "$auth" redirect
    : >"$STANDIN_LOG"
    : >"$STANDIN_STORAGE_LOG"
    expect_rc 0 install --repo "$STANDIN_REF" --ca-file "$STANDIN_CA" \
        --registry-auth "$STANDIN_AUTH_FILE" --cache-dir "/var/cache/redirect-$auth" \
        $(install_args) --driver-version "$want"
    assert_eq "$(installed_version)" "$want" "installed through the redirect ($auth)"
    grep -q '"path": "/blobs/sha256/' "$STANDIN_STORAGE_LOG" ||
        fail "$auth: no blob came from the storage host"
    ! grep -qi '"authorization"' "$STANDIN_STORAGE_LOG" ||
        fail "$auth: credentials followed the redirect: $(grep -i authorization "$STANDIN_STORAGE_LOG")"
    python3 - "$STANDIN_LOG" "$auth" <<'PY' || fail "$auth: the registry's blob requests"
import json, sys
scheme = {"basic": "Basic ", "token": "Bearer "}[sys.argv[2]]
blobs = [e for e in map(json.loads, open(sys.argv[1])) if "/blobs/" in e["path"]]
assert any(e["status"] == 307 for e in blobs), blobs
for e in blobs:
    if e["status"] == 307:
        assert e["headers"].get("Authorization", "").startswith(scheme), e
PY
done

# The same through the real registry: distribution's `redirect` storage middleware sends
# each blob to the storage host (127.0.0.2) with a 307. The repository copied into it from
# the stand-in with skopeo (byte for byte: the manifest's digest kept), installed under
# htpasswd and under token auth: the registry's log says each redirected blob request was
# authorized (distribution 2.8 logs "authorized request" once the credentials or the token
# it carries pass), the storage host's log shows no Authorization header.
oci_standin_faults none
mkdir -p "$T/standin-certs"
cp "$STANDIN_CA" "$T/standin-certs/ca.crt"
for mode in htpasswd token; do
    want=$V_NEW
    [ "$mode" = htpasswd ] || want=$V_OLD
    oci_registry_start "$mode" --storage-redirect
    skopeo copy --quiet --preserve-digests --src-cert-dir "$T/standin-certs" \
        --dest-cert-dir "$OCI_CERT_DIR" --dest-creds "$OCI_USER:$OCI_PASS" \
        "docker://$STANDIN_HOST/ndi/drivers:latest" "docker://$OCI_HOST/ndi/drivers:latest" ||
        fail "skopeo copy from the stand-in to the $mode registry"
    expect_rc 0 install --repo "oci://$OCI_HOST/ndi/drivers" --ca-file "$OCI_CA" \
        --registry-auth "$OCI_AUTH_FILE" --cache-dir "/var/cache/registry-$mode" \
        $(install_args) --driver-version "$want"
    assert_eq "$(installed_version)" "$want" "installed through the $mode registry's redirect"
    grep -q '"path": "/docker/registry/v2/blobs/sha256/' "$OCI_STORAGE_LOG" ||
        fail "$mode: no blob came from the storage host"
    ! grep -qi '"authorization"' "$OCI_STORAGE_LOG" ||
        fail "$mode: credentials followed the redirect: $(grep -i authorization "$OCI_STORAGE_LOG")"
    python3 - "$OCI_LOG" <<'PY' || fail "$mode: the registry's redirected blob requests"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
authorized = {e["http.request.id"] for e in lines if e.get("msg") == "authorized request"}
done = [e for e in lines if e.get("msg") == "response completed"
        and "/blobs/" in e.get("http.request.uri", "") and e.get("http.response.status") == 307]
assert done, "no blob answered with a redirect"
for e in done:
    assert e["http.request.id"] in authorized, e
PY
done

# A replay: a registry serving the older repository ($T/good, validly signed) to a node that
# has accepted the newer one (the cache of the last install keeps that record): its index
# refused as replayed, the node's own newer index used instead, the installed driver as it
# was.
oci_standin_start replay "$T/good"
before=$(snapshot "$(idir)")
have=$(installed_version)
expect_rc 0 install --repo "$STANDIN_REF" --ca-file "$STANDIN_CA" \
    --cache-dir /var/cache/registry-token $(install_args) --driver-version "$have"
expect_err "index generated .* is older than the one generated .*: a replayed or stale index"
echo "replay: $(grep 'a replayed or stale index' "$T/err" | sed -n 1p)"
assert_eq "$(installed_version)" "$have" "the installed driver after the replay"
assert_eq "$(snapshot "$(idir)")" "$before" "the install directory after the replay"
