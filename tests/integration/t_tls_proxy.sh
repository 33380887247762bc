# serial: wall-clock bound: an untrusted certificate refused within 3 s (no retry)
# TLS is always verified: a throwaway CA made here is trusted only through --ca-file, a
# certificate for another name is refused, and https never redirects down to http. Proxies
# come from the usual environment variables (http_proxy, https_proxy, no_proxy).
mkroot "$T/root"
new_repo "$T/srv/repo" "$V_NEW:default"
cd "$T"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=ndi test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout ca.key -out ca.pem 2>/dev/null
cert() { # NAME SAN
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
        -keyout "$1.key" -out "$1.csr" 2>/dev/null
    printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$2" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
        -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
cert good "IP:127.0.0.1,DNS:nvidia-repo.invalid"
cert wrong "DNS:wrong.example"
cd - >/dev/null

start_httpd "$T/srv" plain
PLAIN=$HTTP
PLAIN_PORT=${HTTP##*:}
start_httpd "$T/srv" wrongname --tls-cert "$T/wrong.pem" --tls-key "$T/wrong.key"
WRONG=$HTTP
start_httpd "$T/srv" tls --tls-cert "$T/good.pem" --tls-key "$T/good.key"
TLS=$HTTP
TLS_PORT=${TLS##*:}

# Unknown CA: refused at once (no retry), with the cause and the fix.
t0=$(date +%s%N)
expect_rc 4 install --repo "$TLS/repo" $(install_args)
expect_err "'$TLS/repo/index.json': SSL certificate problem: unable to get local issuer certificate"
expect_err "fix: the mirror's certificate does not verify for this host name: if a private CA issued it, pass that CA with --ca-file"
expect_err "no repository answered after 1 attempt(s)"
[ $((($(date +%s%N) - t0) / 1000000)) -lt 3000 ] || fail "an untrusted certificate was retried"
expect_rc 2 install --repo "$TLS/repo" $(install_args) --ca-file "$T/nowhere.pem"
expect_err "--ca-file '$T/nowhere.pem'"
# A FIFO as --ca-file: refused before any transfer (OpenSSL's loader would wait for a
# writer forever under libcurl: hence the timeout).
mkfifo "$T/fifo-ca.pem"
set +e
timeout 60 "$BIN" --root "$T/root" install --repo "$TLS/repo" $(install_args) --ca-file "$T/fifo-ca.pem" \
    >"$T/out" 2>"$T/err"
RC=$?
set -e
[ "$RC" = 2 ] || { cat "$T/err"; fail "a FIFO as --ca-file: exit $RC, expected 2"; }
expect_err "--ca-file '$T/fifo-ca.pem' is not a regular file (a FIFO, a device or a directory); fix: pass the PEM file"

# The CA given: installed over TLS.
expect_rc 0 install --repo "$TLS/repo" $(install_args) --ca-file "$T/ca.pem"
assert_eq "$(installed_version)" "$V_NEW" "installed over https"
http_settle
grep -q '"path": "/repo/packages/' "$HTTP_LOG" || fail "the package did not come over TLS"

# A certificate the CA issued, but for another name: refused even with the CA trusted.
expect_rc 4 install --repo "$WRONG/repo" $(install_args) --ca-file "$T/ca.pem" --cache-dir /var/cache/c2
expect_err "'$WRONG/repo/index.json': SSL: no alternative certificate subject name matches target host name '127.0.0.1'"

# https -> http: refused, although the http server would serve.
echo '[{"path": "/repo/index.json", "action": "redirect", "location": "'"$PLAIN"'/repo/index.json"}]' >"$T/tls.faults.json"
expect_rc 4 install --repo "$TLS/repo" $(install_args) --ca-file "$T/ca.pem" --cache-dir /var/cache/c3
expect_err "'$TLS/repo/index.json': "
expect_err "a redirect may only lead to https://"
echo '[]' >"$T/tls.faults.json"

# Proxies. The repository's host name resolves nowhere: only the proxy, which maps it to
# 127.0.0.1, can reach it.
python3 "$SRC/tests/tools/proxy.py" --port-file "$T/proxy.port" --log "$T/proxy.log" \
    --map "nvidia-repo.invalid=$PLAIN_PORT" --lifetime 300 &
wait_for "the proxy to write its port" 60 test -s "$T/proxy.port"
PROXY="http://127.0.0.1:$(cat "$T/proxy.port")"
rm -rf "$T/root/var/cache"
expect_rc 0 uninstall
http_proxy=$PROXY expect_rc 0 install --repo "http://nvidia-repo.invalid/repo" $(install_args)
grep -q '"target": "http://nvidia-repo.invalid/repo/index.json"' "$T/proxy.log" || fail "index not fetched through the proxy"
grep -q '"target": "http://nvidia-repo.invalid/repo/packages/' "$T/proxy.log" || fail "package not fetched through the proxy"
# no_proxy names the host: the installer goes direct, and the name does not resolve.
http_proxy=$PROXY no_proxy=nvidia-repo.invalid expect_rc 4 install --repo "http://nvidia-repo.invalid/repo" \
    $(install_args) --cache-dir /var/cache/c4 --fetch-timeout 3
expect_err "Could not resolve host: nvidia-repo.invalid"

# https through the proxy's CONNECT tunnel: TLS is end to end, verified against the name.
python3 "$SRC/tests/tools/proxy.py" --port-file "$T/proxy2.port" --log "$T/proxy2.log" \
    --map "nvidia-repo.invalid=$TLS_PORT" --lifetime 300 &
wait_for "the second proxy to write its port" 60 test -s "$T/proxy2.port"
rm -rf "$T/root/var/cache"
expect_rc 0 uninstall
https_proxy="http://127.0.0.1:$(cat "$T/proxy2.port")" expect_rc 0 install --repo "https://nvidia-repo.invalid/repo" \
    $(install_args) --ca-file "$T/ca.pem"
grep -q '"method": "CONNECT", "target": "nvidia-repo.invalid:443"' "$T/proxy2.log" || fail "no CONNECT through the proxy"
assert_eq "$(installed_version)" "$V_NEW" "installed over https through a proxy"
