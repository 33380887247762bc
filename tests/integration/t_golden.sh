# Golden output: what a user reads (--help of the program and of each command, --version,
# the dry-run plan, list-versions, coverage, status, doctor, config, and their --json forms), compared
# whole with tests/expected/NAME after tests/tools/golden-normalise.py has replaced what
# varies (scratch paths, digests, key ids, times, durations, sizes, the version, the mount).
# A difference fails with a unified diff per file. After an intended change of the text:
#   make golden-refresh     (NDI_GOLDEN_REFRESH=1 tests/integration/run.sh ... t_golden)
# rewrites the files (and removes those no case writes any more); review them with git diff.
# Each file: the command line, its exit status, then stdout and stderr.
EXPECTED=$SRC/tests/expected
mkdir -p "$T/golden"
# The environment a DaemonSet would set must not leak into the files.
for v in $(compgen -e | grep -E '^(NVIDIA_|ROOT_MOUNT_DIR$)' || true); do unset "$v"; done

version=$("$BIN" --version | awk '{print $2}')
[ -n "$version" ] || fail "--version printed no version"
# The commit it was built from, in parentheses ("unknown" outside git): replaced where it is
# shown, not as a word ("unknown" is one).
commit=$("$BIN" --version | sed -n 's/^[^ ]* [^ ]* (\([^()]*\))$/\1/p')
[ -n "$commit" ] || fail "--version printed no commit: $("$BIN" --version)"
norm=(--literal "$FIX=<FIX>" --literal "$T=<T>" --literal "$SRC=<SRC>" --word "$version=<VERSION>"
    --literal "($commit)=(<COMMIT>)" --literal "\"commit\": \"$commit\"=\"commit\": \"<COMMIT>\"")
host=$(hostname 2>/dev/null || true)
# A short or generic hostname ("vm") would replace ordinary words; it is left alone.
[ ${#host} -ge 4 ] && [ "$host" != localhost ] && norm+=(--word "$host=<HOSTNAME>")

written=()
differ=()
# golden NAME [VAR=VALUE...] ARGS...: runs the installer (with --root $T/root) with the
# variables set, and compares (or, when refreshing, writes) tests/expected/NAME.
golden() {
    local name=$1 envs=()
    shift
    while [[ $# -gt 0 && $1 =~ ^[A-Z_]+= ]]; do
        envs+=("$1")
        shift
    done
    [ ${#envs[@]} -eq 0 ] || local -x "${envs[@]}"
    inst "$@"
    {
        echo "\$ ${envs[*]}${envs[*]:+ }nvidia-driver-installer --root $T/root $*"
        echo "exit $RC"
        echo "--- stdout"
        cat "$T/out"
        echo "--- stderr"
        cat "$T/err"
    } | python3 "$SRC/tests/tools/golden-normalise.py" "${norm[@]}" >"$T/golden/$name"
    written+=("$name")
    if [ -n "${NDI_GOLDEN_REFRESH:-}" ]; then
        cp "$T/golden/$name" "$EXPECTED/$name"
    elif [ ! -f "$EXPECTED/$name" ]; then
        echo "golden: tests/expected/$name does not exist"
        differ+=("$name")
    elif ! diff -u --label "tests/expected/$name" --label "actual/$name" \
        "$EXPECTED/$name" "$T/golden/$name"; then
        differ+=("$name")
    fi
}

[ -z "${NDI_GOLDEN_REFRESH:-}" ] || mkdir -p "$EXPECTED"

# --help of the program and of every command it lists, and --version.
golden help --help
golden version --version
"$BIN" --help >"$T/help.txt"
commands=$(sed -n '/^Commands:/,/^$/s/^  \([a-z-]*\) .*/\1/p' "$T/help.txt")
[ "$(echo "$commands" | wc -w)" -ge 8 ] || fail "--help lists too few commands: $commands"
for c in $commands; do
    golden "help-$c" "$c" --help
done

# A host with one GPU, the fake kernel, and a repository with a default and a latest driver.
mkroot "$T/root" cos 17800.66.78 --gpu 10de:2330
mkkernel "$T/root"
echo 'include /etc/ld.so.conf.d/*.conf' >"$T/root/etc/ld.so.conf"
new_signed_repo "$T/repo" "$V_OLD:default" "$V_NEW:latest"
export FAKE_KERNEL=1
R=(--repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem" --kernel-release "$KERNEL")
M=(--module-cert "$FIX/keys/modkey.crt")

# Nothing installed yet.
golden list-versions list-versions "${R[@]}"
golden list-versions.json list-versions "${R[@]}" --json
# What the repository serves, and whether it serves a node image (the runbook's form).
C=(--repo "file://$T/repo" --repo-key "$FIX/keys/pub.pem")
golden coverage coverage "${C[@]}"
golden coverage.json coverage "${C[@]}" --json
golden coverage-query coverage "${C[@]}" --os cos --os-build 17800.66.78 --kernel "$KERNEL"
golden coverage-query.json coverage "${C[@]}" --os cos --os-build 17800.66.78 --kernel "$KERNEL" --gpu 10de:2330 --json
golden coverage-query-miss coverage "${C[@]}" --os cos --os-build 17800.66.78 --kernel "$OTHER_KERNEL"
golden install-dry-run install "${R[@]}" "${M[@]}" --dry-run
golden install-dry-run.json install "${R[@]}" "${M[@]}" --dry-run --json
golden status-none status --kernel-release "$KERNEL"
golden status-none.json status --kernel-release "$KERNEL" --json
golden doctor-none doctor "${R[@]}"
golden doctor-none.json doctor "${R[@]}" --json
golden config config "${R[@]}" "${M[@]}"
golden config.json config "${R[@]}" "${M[@]}" --json
golden config-env.json NVIDIA_DRIVER_VERSION=latest NVIDIA_SKIP_MODULES=1 config "${R[@]}" --json

# Installed and loaded: status, doctor, and the plan of an upgrade.
expect_rc 0 install "${R[@]}" "${M[@]}"
golden status status --kernel-release "$KERNEL"
golden status.json status --kernel-release "$KERNEL" --json
golden doctor doctor "${R[@]}"
golden doctor.json doctor "${R[@]}" --json
golden install-dry-run-upgrade install "${R[@]}" "${M[@]}" --dry-run --driver-version latest
golden install-dry-run-upgrade.json install "${R[@]}" "${M[@]}" --dry-run --driver-version latest --json
golden install-dry-run-installed install "${R[@]}" "${M[@]}" --dry-run

# Every expected file belongs to a case: a stale one is removed when refreshing, and fails
# the comparison otherwise.
stale=()
for f in "$EXPECTED"/*; do
    [ -e "$f" ] || continue
    n=$(basename "$f")
    [[ " ${written[*]} " == *" $n "* ]] && continue
    if [ -n "${NDI_GOLDEN_REFRESH:-}" ]; then
        rm "$f"
        echo "golden: removed tests/expected/$n (no case writes it)"
    else
        stale+=("$n")
    fi
done
if [ -n "${NDI_GOLDEN_REFRESH:-}" ]; then
    echo "golden: wrote ${#written[@]} files into tests/expected/; review them with git diff"
    exit 0
fi
[ ${#stale[@]} -eq 0 ] || fail "tests/expected/ holds files no case writes: ${stale[*]} (make golden-refresh removes them)"
[ ${#differ[@]} -eq 0 ] ||
    fail "${#differ[@]} of ${#written[@]} golden files differ: ${differ[*]} (diffs above; if the change is intended: make golden-refresh, then review git diff tests/expected)"
echo "golden: ${#written[@]} files match"
