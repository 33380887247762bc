# What operators read carries no terminal control: a GPU holder's process name (any
# workload sets its own, prctl(PR_SET_NAME)), the host's os-release and the repository's
# strings reach install's error line, status, install --dry-run, doctor, list-versions and
# coverage with each control character (C0, DEL, C1 in UTF-8) and each byte that is not
# UTF-8 shown as '?', so that no escape sequence reaches the operator's terminal; the
# strings are still shown, and each line stays one line.
FAKE_KERNEL=1
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
# ESC [31m in the node image's name (ESC is \033; \302\233 is U+009B, the C1 CSI).
sed -i 's/^PRETTY_NAME=.*/PRETTY_NAME="Test\o033[31mOS\xff"/' "$T/root/etc/os-release"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW"
# A tag with ESC ] 8 (a hyperlink): the index is the repository's word, shown as it is.
edit_index "$T/repo" 'idx["drivers"][0].setdefault("tags", []).append("t\x1b]8;;http://x/\x07ag")'
R="file://$T/repo"
expect_rc 0 install --repo "$R" $(kernel_args)

# A workload holds /dev/nvidiactl; its name sets a window title, clears the screen and
# carries a C1 CSI, DEL and a byte that is not UTF-8.
mkdir -p "$T/root/proc/4242/fd"
ln -s /dev/nvidiactl "$T/root/proc/4242/fd/3"
printf 'x\033]0;owned\a\033[2J\302\233\177\377y\n' >"$T/root/proc/4242/comm"
shown='x?]0;owned??[2J???y'
# Read back from the pending record, a JSON file on the host, which holds only UTF-8: there
# the byte that is not UTF-8 was written as U+FFFD (util/jsonfile), printable as it is.
shown_rec=$(printf 'x?]0;owned??[2J??\357\277\275y')

# clean NAME FILE: FILE has no control character but the newline, and is UTF-8.
clean() {
    python3 - "$1" "$2" <<'PY' || fail "$1: $(cat -v "$2")"
import sys, unicodedata
name, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
try:
    text = data.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit(f"{name}: not UTF-8 at byte {e.start}")
bad = [c for c in text if c != "\n" and unicodedata.category(c) == "Cc"]
if bad:
    sys.exit(f"{name}: control characters {[hex(ord(c)) for c in bad]}")
PY
}
# shows STREAM TEXT: the last run's out or err holds TEXT, as it is (no pattern).
shows() {
    grep -qF -- "$2" "$T/$1" || fail "$1 lacks '$2': $(cat -v "$T/$1")"
}
# out_clean NAME: both streams of the last run are clean.
out_clean() {
    clean "$1 stdout" "$T/out"
    clean "$1 stderr" "$T/err"
}

# install refused (the driver is busy): the error line names the holder, neutralised.
expect_rc 7 install --repo "$R" $(kernel_args) --driver-version "$V_NEW"
out_clean "install refused"
shows err "driver in use: /dev/nvidiactl open in pid 4242 ($shown)"

# --when-busy defer: pending, its reason carries the name into every text form.
expect_rc 0 install --repo "$R" $(kernel_args) --when-busy defer --driver-version "$V_NEW"
out_clean "install deferred"
expect_rc 0 status --kernel-release "$KERNEL"
out_clean status
shows out "($shown_rec)"
expect_rc 0 install --dry-run --repo "$R" $(kernel_args) --driver-version "$V_NEW"
out_clean "install --dry-run"
shows out "($shown_rec)"
shows out "host:        Test?[31mOS?"
inst doctor --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
out_clean doctor
shows out "($shown_rec)"
expect_rc 0 list-versions --repo "$R" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL"
out_clean list-versions
shows out "($shown_rec)"
shows out "t?]8;;http://x/?ag"
expect_rc 0 coverage --repo "$R" --repo-key "$FIX/keys/pub.pem"
out_clean coverage
shows out "t?]8;;http://x/?ag"

# verify-module: a module's own modinfo (version, vermagic) is shown neutralised.
printf 'static const char mi[] __attribute__((section(".modinfo"), used, aligned(1))) = "license=GPL\\0name=evil\\0version=1\\033]0;t\\007\\0vermagic=%s SMP \\033[2J";\n' \
    "$KERNEL" >"$T/evil.c"
cc -c -o "$T/evil.ko" "$T/evil.c"
expect_rc 5 verify-module --kernel-release "$KERNEL" "$T/evil.ko"
out_clean verify-module
shows out "version:  1?]0;t?"
shows out "vermagic: $KERNEL SMP ?[2J"
