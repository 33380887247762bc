# plain build: checks the test registry (tests/tools/oci-registry.py), not the installer
# The test registry itself: Debian's docker-registry (distribution 2.8) over TLS from a
# throwaway CA, in each mode the OCI tests use. Each answers /v2/, takes a push from skopeo
# and gives the same bytes back; htpasswd and token refuse a client without credentials (401)
# and with wrong ones; the token server's tokens grant what the credentials asked for and
# nothing to an anonymous client; --storage-redirect answers blobs with a 307 to another host
# whose log records headers; everything stops on `stop` and once its owner is gone.

code() { # URL [curl options]: the HTTP status
    curl -s -o /dev/null -w '%{http_code}' --cacert "$OCI_CA" "$@"
}
oci_small_layout "$T/small" v1
layer=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]+"/index.json"))["manifests"][0]
print(json.load(open(sys.argv[1]+"/blobs/sha256/"+m["digest"][7:]))["layers"][0]["digest"])' "$T/small")

# push_pull: the layout pushed to $OCI_HOST/test/small:v1 and pulled back, byte for byte.
push_pull() {
    local creds=() d=$T/back-$OCI_MODE
    [ -z "$OCI_USER" ] || creds=(--dest-creds "$OCI_USER:$OCI_PASS")
    skopeo copy --quiet --preserve-digests --dest-cert-dir "$OCI_CERT_DIR" "${creds[@]}" \
        "oci:$T/small:v1" "docker://$OCI_HOST/test/small:v1" || fail "$OCI_MODE: skopeo push"
    skopeo copy --quiet --preserve-digests --src-cert-dir "$OCI_CERT_DIR" \
        --authfile "$OCI_AUTH_FILE" "docker://$OCI_HOST/test/small:v1" "oci:$d:v1" ||
        fail "$OCI_MODE: skopeo pull"
    cmp "$T/small/blobs/sha256/${layer#sha256:}" "$d/blobs/sha256/${layer#sha256:}" ||
        fail "$OCI_MODE: the layer came back other than pushed"
    # Every request is in the registry's log: the manifest's PUT among them.
    grep -q '"http.request.method":"PUT","http.request.remoteaddr":"[^"]*","http.request.uri":"/v2/test/small/manifests/v1"' \
        "$OCI_LOG" || fail "$OCI_MODE: the manifest's PUT is not in $OCI_LOG"
}

# Anonymous: answers and takes a push with no credentials at all.
oci_registry_start anonymous
assert_eq "$(code "https://$OCI_HOST/v2/")" 200 "anonymous /v2/"
assert_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])))' "$OCI_AUTH_FILE")" \
    "{'auths': {}}" "the anonymous auth file"
push_pull
# The certificate is the test CA's, for 127.0.0.1: without the CA, TLS refuses.
rc=0
curl -s -o /dev/null "https://$OCI_HOST/v2/" || rc=$?
assert_eq "$rc" 60 "curl without the test CA"
anon=$OCI_DIR

# htpasswd: 401 with the Basic challenge without credentials and with a wrong password.
oci_registry_start htpasswd --storage-redirect
assert_eq "$(code "https://$OCI_HOST/v2/")" 401 "htpasswd /v2/ without credentials"
curl -s -D "$T/h" -o /dev/null --cacert "$OCI_CA" "https://$OCI_HOST/v2/"
grep -qi '^www-authenticate: Basic realm="ndi-oci-test"' "$T/h" || fail "no Basic challenge: $(cat "$T/h")"
assert_eq "$(code "https://$OCI_HOST/v2/" -u "$OCI_USER:wrong")" 401 "htpasswd, wrong password"
assert_eq "$(code "https://$OCI_HOST/v2/" -u "$OCI_USER:$OCI_PASS")" 200 "htpasswd, credentials"
grep -q '^\$2[aby]\$' <(cut -d: -f2 "$OCI_DIR/htpasswd") || fail "htpasswd is not bcrypt"
push_pull
# --storage-redirect: the blob is a 307 to 127.0.0.2 (another host), whose server gives the
# bytes and logs the request's headers; curl sends no credentials there, and the log would
# show them (a request with one, made by hand, is logged with it).
curl -s -D "$T/h" -o /dev/null --cacert "$OCI_CA" -u "$OCI_USER:$OCI_PASS" \
    "https://$OCI_HOST/v2/test/small/blobs/$layer"
grep -qi '^location: https://127.0.0.2:[0-9]*/docker/registry/v2/blobs/sha256/' "$T/h" ||
    fail "the blob was not redirected: $(cat "$T/h")"
curl -sf -L --cacert "$OCI_CA" -u "$OCI_USER:$OCI_PASS" -o "$T/blob" \
    "https://$OCI_HOST/v2/test/small/blobs/$layer" || fail "the redirected blob"
cmp "$T/blob" "$T/small/blobs/sha256/${layer#sha256:}" || fail "the storage server's bytes"
grep -q '"path": "/docker/registry/v2/blobs/sha256/' "$OCI_STORAGE_LOG" || fail "storage log"
! grep -qi '"authorization"' "$OCI_STORAGE_LOG" || fail "curl sent credentials to the storage host"
loc=$(sed -n 's/^[Ll]ocation: \(.*\)\r$/\1/p' "$T/h")
curl -s -o /dev/null --cacert "$OCI_CA" -H "Authorization: Bearer planted" "$loc"
grep -q '"Authorization": "Bearer planted"' "$OCI_STORAGE_LOG" || fail "the storage log lacks headers"

# token: /v2/ answers 401 with a Bearer challenge naming the token server; the token server
# refuses a wrong password, gives an anonymous client a token that grants nothing (the
# registry then says 401), and a token granting the scope asked for to the credentials.
oci_registry_start token
curl -s -D "$T/h" -o /dev/null --cacert "$OCI_CA" "https://$OCI_HOST/v2/test/small/manifests/v1"
grep -qi '^www-authenticate: Bearer realm="https://127.0.0.1:[0-9]*/token",service="ndi-oci-test",scope="repository:test/small:pull"' \
    "$T/h" || fail "no Bearer challenge: $(cat "$T/h")"
realm=$(sed -n 's/^[Ww]ww-[Aa]uthenticate: Bearer realm="\([^"]*\)".*/\1/p' "$T/h")
q="service=ndi-oci-test&scope=repository:test/small:pull,push"
assert_eq "$(code "$realm?$q" -u "$OCI_USER:wrong")" 401 "token server, wrong password"
token() { # [curl options]: a token for $q
    curl -sf --cacert "$OCI_CA" "$@" "$realm?$q" |
        python3 -c 'import json,sys; a=json.load(sys.stdin); assert a["token"] == a["access_token"]
assert a["expires_in"] > 0 and a["issued_at"]; print(a["token"])'
}
anon_token=$(token) || fail "the token server's anonymous answer"
user_token=$(token -u "$OCI_USER:$OCI_PASS") || fail "the token server's answer"
push_pull
man="https://$OCI_HOST/v2/test/small/manifests/v1"
accept="Accept: application/vnd.oci.image.manifest.v1+json"
assert_eq "$(code "$man" -H "$accept" -H "Authorization: Bearer $anon_token")" 401 "an anonymous token"
assert_eq "$(code "$man" -H "$accept" -H "Authorization: Bearer $user_token")" 200 "the user's token"
# Its signature altered at its 20th character from its end (its last one holds padding bits).
sig=${user_token##*.}
c=${sig: -20:1}
[ "$c" = A ] && c=B || c=A
forged=${user_token%.*}.${sig:0:${#sig}-20}$c${sig: -19}
assert_eq "$(code "$man" -H "$accept" -H "Authorization: Bearer $forged")" 401 "a forged token"
grep -q '"scope": \["repository:test/small:pull,push"\], "user": "ndi-test", "authorization": "Basic", "status": 200' \
    "$OCI_TOKEN_LOG" || fail "the token log lacks skopeo's request"
grep -q '"user": null, "authorization": "", "status": 200, "granted": \[\]' "$OCI_TOKEN_LOG" ||
    fail "the token log lacks the anonymous request"

# stop: the registry is gone when it returns.
pid=$OCI_REGISTRY_PID
oci_registry_stop
! kill -0 "$pid" 2>/dev/null || fail "the token registry ($pid) outlived stop"
[ ! -e "$OCI_DIR/env" ] || fail "stop left $OCI_DIR/env"
rc=0
curl -s -o /dev/null --cacert "$OCI_CA" "https://$OCI_HOST/v2/" || rc=$?
assert_eq "$rc" 7 "curl to a stopped registry"

# The owner gone, the registry goes: one owned by a process that then ends.
sleep 300 &
owner=$!
python3 "$SRC/tests/tools/oci-registry.py" start --dir "$T/owned" --mode anonymous --owner "$owner"
. "$T/owned/env"
pid=$OCI_REGISTRY_PID
kill "$owner"
wait_for "the registry ($pid) to stop once its owner is gone" 60 eval '! kill -0 "$pid" 2>/dev/null'
oci_registry_stop "$anon"
