# docs/configuration.md and the option table of docs/command-line.md agree with the option
# table the binary is built from (--help-options): names, arguments, variables, defaults,
# and what each command takes. The check can fail: a doc row edited is caught.
"$BIN" --help-options >"$T/options.tsv"
python3 "$SRC/tests/tools/options-doc.py" "$T/options.tsv" "$SRC/docs/configuration.md" "$SRC/docs/command-line.md" ||
    fail "the docs disagree with the option table"
# A variable renamed in a doc row, a default changed in command-line.md, a row dropped.
sed 's/| `NVIDIA_CACHE_DIR` |/| `NVIDIA_CACHE_DIRECTORY` |/' "$SRC/docs/configuration.md" >"$T/conf.md"
python3 "$SRC/tests/tools/options-doc.py" "$T/options.tsv" "$T/conf.md" "$SRC/docs/command-line.md" >"$T/out" &&
    fail "a renamed variable passed"
grep -q "cache-dir: environment is '\`NVIDIA_CACHE_DIRECTORY\`'" "$T/out" || fail "$(cat "$T/out")"
sed 's/| `NVIDIA_FETCH_RETRIES` | `5` |/| `NVIDIA_FETCH_RETRIES` | `3` |/' "$SRC/docs/command-line.md" >"$T/command-line.md"
python3 "$SRC/tests/tools/options-doc.py" "$T/options.tsv" "$SRC/docs/configuration.md" "$T/command-line.md" >"$T/out" &&
    fail "a changed default passed"
grep -q "command-line.md: --fetch-retries: default" "$T/out" || fail "$(cat "$T/out")"
grep -v '^| `--cdi-replace` |' "$SRC/docs/configuration.md" >"$T/conf.md"
python3 "$SRC/tests/tools/options-doc.py" "$T/options.tsv" "$T/conf.md" "$SRC/docs/command-line.md" >"$T/out" &&
    fail "a dropped row passed"
grep -q "install, list-versions: --cdi-replace is missing" "$T/out" || fail "$(cat "$T/out")"
# The empty-value rule names exactly the variables the table refuses empty: one left out
# of the list is caught, and so is one the table takes empty as unset.
sed 's/`NVIDIA_CDI_KIND`, `NVIDIA_MIG_LAYOUT`), which/`NVIDIA_MIG_LAYOUT`), which/' "$SRC/docs/configuration.md" >"$T/conf.md"
python3 "$SRC/tests/tools/options-doc.py" "$T/options.tsv" "$T/conf.md" "$SRC/docs/command-line.md" >"$T/out" &&
    fail "a variable left out of the empty-value rule passed"
grep -q "the empty-value rule does not name NVIDIA_CDI_KIND" "$T/out" || fail "$(cat "$T/out")"
sed 's/(`ROOT_MOUNT_DIR`,/(`ROOT_MOUNT_DIR`, `NVIDIA_WHEN_BUSY`,/' "$SRC/docs/configuration.md" >"$T/conf.md"
python3 "$SRC/tests/tools/options-doc.py" "$T/options.tsv" "$T/conf.md" "$SRC/docs/command-line.md" >"$T/out" &&
    fail "a variable the table takes empty as unset passed"
grep -q "the empty-value rule names NVIDIA_WHEN_BUSY, which the table takes empty as unset" "$T/out" ||
    fail "$(cat "$T/out")"
# --help shows each option's variable and default from the same table.
"$BIN" install --help >"$T/help"
grep -q -- "--cache-dir PATH .*(NVIDIA_CACHE_DIR, default /var/cache/nvidia-driver-installer)" "$T/help" ||
    fail "install --help: $(cat "$T/help")"
# coverage's table is held to the options coverage takes: a row dropped is caught.
grep -v '^| `--gpu V:D` |' "$SRC/docs/configuration.md" >"$T/conf.md"
python3 "$SRC/tests/tools/options-doc.py" "$T/options.tsv" "$T/conf.md" "$SRC/docs/command-line.md" >"$T/out" &&
    fail "a dropped coverage row passed"
grep -q "configuration.md coverage: --gpu is missing" "$T/out" || fail "$(cat "$T/out")"
