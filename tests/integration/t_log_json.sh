# --log-format json: every line of a full install is one JSON object (Python's json, with
# NaN and Infinity refused as the JSON grammar refuses them), a value is a string whatever
# it looks like (a driver version, os-release fields such as ID=nan or VERSION_ID=550.90),
# and only the fields the installer types as numbers are numbers.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
new_signed_repo "$T/repo" "$V_OLD:default"
R="file://$T/repo"
expect_rc 0 --log-format json install --repo "$R" $(kernel_args)
cp "$T/err" "$T/install.log"

# A host whose os-release fields look like numbers, or like JSON's missing words.
printf 'NAME="Test OS"\nID=nan\nVERSION_ID=550.90\nBUILD_ID=1e5\nPRETTY_NAME="Test OS"\n' \
    >"$T/root/etc/os-release"
set +e
"$BIN" --log-format json install --root "$T/root" --repo "$R" $(kernel_args) 2>"$T/odd.log" >/dev/null
set -e

# The fields the installer types as numbers: U64("key", n) in its sources.
grep -rhoE 'U64\("[a-z_]+"' "$SRC/installer" | sed 's/U64("//; s/"//' | sort -u >"$T/numbers"
python3 - "$T/install.log" "$T/odd.log" "$V_OLD" "$T/numbers" <<'PY'
import json, sys

def strict(text):
    def refuse(word):
        raise ValueError("not JSON: " + word)
    return json.loads(text, parse_constant=refuse)

def lines(path):
    out = []
    with open(path, "rb") as f:
        for raw in f:
            try:
                out.append(strict(raw.decode("utf-8")))
            except ValueError as e:
                sys.exit(f"{path}: {e}: {raw!r}")
    assert out, path
    return out

install, odd, version = lines(sys.argv[1]), lines(sys.argv[2]), sys.argv[3]
numbers = set(open(sys.argv[4]).read().split())
assert {"duration_ms", "bytes", "exit_code"} <= numbers, numbers
# A string, or an int where the key is one the installer types as a number (a key such as
# "modules" is a count in one line and a list of names in another).
for l in install + odd:
    for k, v in l.items():
        assert type(v) is str or (type(v) is int and k in numbers), (k, v, l)
versions = [l["version"] for l in install if "version" in l]
assert version in versions and all(type(v) is str for v in versions), versions
assert any(l["msg"] == "driver installed" for l in install), install
host = [l for l in odd if l["msg"] == "host probed"]
assert host and host[0]["os"] == "nan" and host[0]["version"] == "550.90" and host[0]["build"] == "1e5", host
PY
