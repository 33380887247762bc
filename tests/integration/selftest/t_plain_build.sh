# plain build: a harness self-test fixture, run for the plain build, never for the ASan one
# (selftest.sh runs the fixtures both ways: NDI_SANITIZED=1 stands for the ASan build).
echo "plain build: ran"
