#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The cold-install benchmark (`make bench`): figures measured side by side in one run.

  bench/run.py BINARY FAKEKERNEL [--reps N] [--warm-reps N] [--out docs/benchmarks.md]
               [--work build/bench] [--no-x4] [--baseline OTHER_BINARY] [--vm-rounds N]

Payloads: NVIDIA's real 535.261.03 package as scripts/build-driver-package builds it for
the installed kernel (made here when `make check-real` has not made it yet), its tree
packed again by make-repo pack in 4 MiB zstd frames (--frame-size 4) and as one frame
(its default), and a synthetic package four times larger (the
real tree plus three copies of it under share/, in frames), each in a signed repository
served on 127.0.0.1 with Range support.

For each payload, in every repetition and in this order (so drift hits all alike):
  ours-cold     the installer, empty cache and install dir, modules "inserted" through
                the fake kernel (LD_PRELOAD), the NVML and CUDA checks answered by the stand-ins
  base-cold     with --baseline: the same cold install by another build of the installer
                (an earlier commit's), right after ours, to tell a change of ours from a
                change of the machine
  shell         curl -o, sha256sum -c, tar --zstd -x into staging, mv into place
  download      curl -o /dev/null
  sha256        openssl dgst -sha256 of the package (the library the installer hashes
                with; the package in the page cache)
  zstd          zstd -d to /dev/null
  extract       tar --zstd -x of the package, held in the page cache, into staging
  ours-cached   the installer again with the package in its node cache, install dir
                and kernel state wiped
then, after all rounds, with each payload's last install kept, --warm-reps times each,
alternating payloads:
  warm          the re-run (already installed) as a node runs it: the repositories sign
                their index with "max_age": 300, so the index fetched minutes ago is
                reused without asking the server (docs/repository-format.md)
  warm-ask      the same with --index-max-age 0: the index is fetched and verified again
  warm-noinc    the warm re-run on a host whose /etc/ld.so.conf does not read
                ld.so.conf.d (no ldconfig run can list the libraries there: none is forked)
and the image, built by scripts/image-test.sh (its size as `buildah images` counts), beside
three floors: /bin/true, a program that does nothing but link the libraries the
installer links (libcrypto, json-c), and one that also links the four it loads when it
first downloads, unpacks, touches a module or makes a mount (libcurl, libarchive, libkmod,
libmount).

and, with --vm-rounds N (3; 0 skips it), time to ready on Debian's real kernel under qemu:
tests/vm/run.sh timing, N rounds of a cold install, a reboot's reload from the node's disk
and an upgrade, each broken down by stage from the installer's "stage times" line, with
the kernel's insertion calls and the modules' init functions (initcall_debug) apart.

Reports medians (and min-max), the ratios the targets are stated in, peak RSS (VmHWM, as
the installer logs it), and the package bytes the server sent during the warm re-runs.
Writes docs/benchmarks.md and
docs/benchmarks.png (gnuplot). Exits 1 when a target is missed.
"""
import argparse
import hashlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
VERSION = "535.261.03"
PCI_ID = "10de:2330"
TARGET_COLD_VS_SLOWEST = 1.25
TARGET_FRAMED_VS_EXTRACT = 0.7
TARGET_IMAGE_BYTES = 40000000
TARGET_SHELL_VS_COLD = 1.5
TARGET_WARM_MS = 15.0
TARGET_WARM_ASK_MS = 20.0
TARGET_RSS_MIB = 64.0
TARGET_REBOOT_OWN_S = 1.0
VM_RUNS = (("cold", "cold install"), ("reboot", "reboot: reload from the node's disk"),
           ("upgrade", "upgrade"))
VM_REAL_RUNS = (("real-cold", "cold install, to the kernel's refusal"),
                ("real-cached", "from the node's cache, to the kernel's refusal"),
                ("real-user-space", "user space alone (`--skip-modules`)"))
VM_STAGES = ("host", "index", "select", "download", "unpack", "kernel", "devices", "publish",
             "expose")
STAGES = ("download", "sha256", "zstd", "extract")


def log(msg):
    print("bench: " + msg, flush=True)


def die(msg):
    print("bench: error: " + msg, file=sys.stderr)
    sys.exit(2)


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def wait_file(path, what, seconds=120):
    """The text of PATH once a server has written it (its port), or die naming WHAT."""
    end = time.monotonic() + seconds
    while not (os.path.exists(path) and os.path.getsize(path)):
        if time.monotonic() > end:
            die("%s did not start" % what)
        time.sleep(0.05)
    with open(path) as f:
        return f.read().strip()


def kernel_release():
    """The installed kernel with headers and an image: the one packages are built for."""
    found = ""
    for r in sorted(os.listdir("/lib/modules")):
        if os.path.exists("/lib/modules/%s/build/Makefile" % r) and \
                os.path.exists("/boot/vmlinuz-%s" % r):
            found = r
    if not found:
        die("no kernel with headers and an image under /lib/modules: run make deps")
    return found


def real_package(binary, release):
    """The real package and the certificate its modules are signed with."""
    w = os.path.join(SRC, "build", "real")
    repo = os.path.join(w, "repo-proprietary")
    cert = os.path.join(w, "keys", "mod.crt")
    pkg = bench_package(repo, release)
    if pkg and os.path.isfile(cert):
        return pkg, cert
    log("building NVIDIA's %s for %s (compiling takes minutes, once)" % (VERSION, release))
    keys = os.path.join(w, "keys")
    os.makedirs(keys, exist_ok=True)
    if not os.path.isfile(os.path.join(keys, "mod.pem")):
        sh([os.path.join(SRC, "tests", "tools", "make-module-key"),
            "nvidia-driver-installer real-driver test key", os.path.join(keys, "mod")])
        sh(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-out", os.path.join(keys, "repo.pem")], stderr=subprocess.DEVNULL)
    sh([os.path.join(SRC, "scripts", "build-driver-package"), "--kernel", release,
        "--debian", VERSION, "--flavour", "proprietary",
        "--repo", os.path.join(w, "repo-proprietary"), "--tag", "default",
        "--sign-key", os.path.join(keys, "mod.pem"), "--sign-cert", cert,
        "--repo-key", os.path.join(keys, "repo.pem"), "--installer", binary,
        "--work", os.path.join(w, "work")])
    return bench_package(repo, release), cert


def bench_package(repo, release):
    """The repository's package for RELEASE, as its index names it (build-driver-package
    records the flavour, which make-repo puts in the file name), or None."""
    try:
        with open(os.path.join(repo, "index.json")) as f:
            pkgs = json.load(f)["drivers"][0]["packages"]
    except (OSError, ValueError, KeyError, IndexError):
        return None
    path = next((os.path.join(repo, p["path"]) for p in pkgs if p["kernel"] == release), None)
    return path if path and os.path.isfile(path) else None


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def make_x4(real_pkg, work):
    """The real tree and three copies of it (under share/), packed as make-repo packs."""
    out = os.path.join(work, "nvidia-x4-framed.tar.zst")
    if os.path.isfile(out):
        return out
    src, tree = os.path.join(work, "x4-src"), os.path.join(work, "x4-tree")
    for d in (src, tree):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    sh(["tar", "--zstd", "-xf", real_pkg, "-C", src])
    sh(["tar", "--zstd", "-xf", real_pkg, "-C", tree])
    for i in (1, 2, 3):
        dst = os.path.join(tree, "share", "bench-copy-%d" % i)
        os.makedirs(dst)
        for name in sorted(os.listdir(src)):
            sh(["cp", "-a", os.path.join(src, name), dst])
    sh([os.path.join(SRC, "scripts", "make-repo"), "pack", "--frame-size", "4", tree, out])
    shutil.rmtree(tree)
    shutil.rmtree(src)
    return out


def repack(real_pkg, work):
    """The real package's tree packed again by make-repo pack: in 4 MiB frames
    (--frame-size 4) and as one frame (its default)."""
    framed, single = (os.path.join(work, "nvidia-real-%s.tar.zst" % k) for k in ("framed", "single"))
    stamp = os.path.join(work, "nvidia-real.source")
    if os.path.isfile(framed) and os.path.isfile(single) and os.path.isfile(stamp) and \
            open(stamp).read() == sha256_file(real_pkg):
        return framed, single
    tree = os.path.join(work, "real-tree")
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tree)
    sh(["tar", "--zstd", "-xf", real_pkg, "-C", tree])
    sh([os.path.join(SRC, "scripts", "make-repo"), "pack", "--frame-size", "4", tree, framed])
    sh([os.path.join(SRC, "scripts", "make-repo"), "pack", "--frame-size", "0", tree, single])
    shutil.rmtree(tree)
    with open(stamp, "w") as f:
        f.write(sha256_file(real_pkg))
    return framed, single


def image_size():
    """The image's size as make image-test measures it (it builds the image), or None
    without buildah."""
    if shutil.which("buildah") is None:
        return None
    p = subprocess.run([os.path.join(SRC, "scripts", "image-test.sh")], capture_output=True,
                       text=True)
    for line in p.stdout.splitlines():
        if " is " in line and " bytes (" in line and "budget" in line:
            return int(line.split(" is ", 1)[1].split()[0])
    die("scripts/image-test.sh failed: %s" % (p.stdout + p.stderr)[-2000:])


def zstd_frames(pkg):
    out = subprocess.run(["zstd", "-lv", pkg], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("# Zstandard Frames:"):
            return int(line.split(":")[1])
    return 0


def make_repo(work, name, pkg, release, key):
    repo = os.path.join(work, "srv", name)
    shutil.rmtree(repo, ignore_errors=True)
    sh([os.path.join(SRC, "scripts", "make-repo"), "add", "--repo", repo, "--key", key,
        "--version", VERSION, "--kernel", release, "--pci-ids", PCI_ID, "--tag", "default",
        pkg], stdout=subprocess.DEVNULL)
    sh([os.path.join(SRC, "scripts", "make-repo"), "sign", "--repo", repo, "--key", key,
        "--max-age", "300"])
    with open(os.path.join(repo, "index.json")) as f:
        p = json.load(f)["drivers"][0]["packages"][0]
    return "/%s/%s" % (name, p["path"]), p["sha256"], p["size"]


STUB = ('static const char mi[] __attribute__((section(".modinfo"), used, aligned(1))) = '
        '"license=GPL\\0name=%s\\0vermagic=%s SMP preempt mod_unload modversions ";\n')


def host_template(work, release):
    """A COS host root with one H100 and a kernel the fake can load into."""
    t = os.path.join(work, "root-template")
    shutil.rmtree(t, ignore_errors=True)
    os.makedirs(os.path.join(t, "etc"))
    with open(os.path.join(t, "etc", "os-release"), "w") as f:
        f.write('ID=cos\nVERSION_ID=117\nBUILD_ID=17800.66.78\n'
                'PRETTY_NAME="Container-Optimized OS from Google"\n')
    with open(os.path.join(t, "etc", "ld.so.conf"), "w") as f:
        f.write("include /etc/ld.so.conf.d/*.conf\n")
    dev = os.path.join(t, "sys", "devices", "pci0000:00", "0000:00:04.0")
    os.makedirs(dev)
    for k, v in (("vendor", "0x10de"), ("device", "0x2330"), ("class", "0x030200")):
        with open(os.path.join(dev, k), "w") as f:
            f.write(v + "\n")
    os.makedirs(os.path.join(t, "sys", "bus", "pci", "devices"))
    os.symlink("../../../devices/pci0000:00/0000:00:04.0",
               os.path.join(t, "sys", "bus", "pci", "devices", "0000:00:04.0"))
    for d in ("dev", "proc", "lib/firmware", "sys/module/module/parameters",
              "sys/kernel/security", "sys/module/firmware_class/parameters"):
        os.makedirs(os.path.join(t, d), exist_ok=True)
    for path, text in (("sys/module/module/parameters/sig_enforce", "N\n"),
                       ("sys/kernel/security/lockdown", "[none] integrity confidentiality\n"),
                       ("sys/module/firmware_class/parameters/path", "")):
        with open(os.path.join(t, path), "w") as f:
            f.write(text)
    # The kernel's own modules the real set depends on (drm, drm_kms_helper, video).
    mods = os.path.join(t, "lib", "modules", release, "kernel", "drivers")
    for rel, name in (("gpu/drm/drm.ko", "drm"), ("gpu/drm/drm_kms_helper.ko", "drm_kms_helper"),
                      ("acpi/video.ko", "video")):
        dst = os.path.join(mods, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with tempfile.NamedTemporaryFile("w", suffix=".c", dir=work) as c:
            c.write(STUB % (name, release))
            c.flush()
            sh(["cc", "-c", "-o", dst, c.name])
    sh(["depmod", "-b", t, release], stderr=subprocess.DEVNULL)
    return t


class Server:
    def __init__(self, work):
        self.dir = os.path.join(work, "srv")
        self.log = os.path.join(work, "http.log")
        port_file = os.path.join(work, "port")
        for p in (port_file, self.log):
            if os.path.exists(p):
                os.unlink(p)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(SRC, "tests", "tools", "httpd.py"), "--dir",
             self.dir, "--port-file", port_file, "--log", self.log, "--lifetime", "7200"])
        for _ in range(200):
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                break
            time.sleep(0.05)
        with open(port_file) as f:
            self.url = "http://127.0.0.1:%s" % f.read().strip()

    def bytes_sent(self, path):
        n = 0
        if os.path.exists(self.log):
            with open(self.log) as f:
                for line in f:
                    e = json.loads(line)
                    if e.get("path") == path:
                        n += e.get("bytes", 0)
        return n

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait()


def timed(cmd, env=None, cwd=None, stdout=subprocess.DEVNULL, stderr=None):
    """Runs CMD; returns (seconds, peak RSS in KiB, exit status, CPU seconds: user and
    system, of CMD and the children it waited for)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=stdout, stderr=stderr)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    return dt, ru.ru_maxrss, p.returncode, ru.ru_utime + ru.ru_stime


def drop_tree(path):
    if os.path.lexists(path):
        shutil.rmtree(path)


class Payload:
    def __init__(self, name, label, pkg, server, repo_path, sha, size):
        self.name, self.label, self.pkg = name, label, pkg
        self.server = server
        self.repo_path, self.sha, self.size = repo_path, sha, size
        self.url = server.url + repo_path
        self.times = {k: [] for k in ("ours-cold", "base-cold", "shell", "ours-cached") + STAGES}
        self.rss = []
        self.rss_cached = []
        self.root = None  # the last round's install, kept for the warm re-runs
        self.warm, self.warm_ask, self.warm_noinc = [], [], []
        self.floor_true, self.floor_linked, self.floor_all = [], [], []
        self.warm_bytes = 0
        self.stage_ms = {}
        self.cpu = []  # CPU seconds of each cold install
        self.extract_cpu = []  # of each `tar --zstd -x`, zstd's included
        self.unpacked = 0
        self.files = 0


class Bench:
    def __init__(self, args):
        self.args = args
        self.bin = os.path.realpath(args.binary)
        self.baseline = os.path.realpath(args.baseline) if args.baseline else None
        self.baseline_name = subprocess.run(
            [self.baseline, "--version"], capture_output=True,
            text=True).stdout.strip() if self.baseline else None
        self.fake = os.path.realpath(args.fakekernel)
        self.work = os.path.realpath(args.work)
        self.release = kernel_release()

    def installer_env(self, root):
        env = dict(os.environ)
        for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy",
                  "ALL_PROXY", "no_proxy", "NO_PROXY"):
            env.pop(k, None)
        env.update(LD_PRELOAD=self.fake, FAKE_KERNEL_ROOT=root, FAKE_KERNEL_NVML=self.nvml,
                   FAKE_KERNEL_CUDA=self.cuda)
        return env

    def install(self, p, root, log_path, extra=(), binary=None):
        """The installer, checked for exit 0: (seconds, its peak RSS in KiB, CPU seconds)."""
        cmd = [binary or self.bin, "--root", root, "--log-format", "json", "install", "--repo",
               self.server.url + "/" + p.name, "--repo-key", self.pub, "--kernel-release",
               self.release, "--module-cert", self.cert] + list(extra)
        with open(log_path, "w") as log_f:
            dt, _, rc, cpu = timed(cmd, env=self.installer_env(root), stderr=log_f)
        with open(log_path) as f:
            text = f.read()
        if rc != 0:
            die("%s: the installer exited %d:\n%s" % (p.name, rc, text[-3000:]))
        # The installer's own VmHWM: wait4's ru_maxrss would count this Python process,
        # whose pages the child had between fork and exec.
        rss = None
        for line in text.splitlines():
            if '"peak_rss_kib"' in line:
                rss = json.loads(line)["peak_rss_kib"]
        return dt, rss, cpu

    def fresh_root(self, root, keep_cache=None):
        drop_tree(root)
        sh(["cp", "-a", self.template, root])
        if keep_cache:
            os.makedirs(os.path.join(root, "var"), exist_ok=True)
            sh(["cp", "-a", keep_cache, os.path.join(root, "var", "cache")])

    def stage_times(self, log_path):
        """The installer's "stage times" line, in milliseconds."""
        with open(log_path) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("msg") == "stage times":
                    return {k[:-3]: v / 1000.0 for k, v in e.items() if k.endswith("_us")}
        die("%s: no stage times line" % log_path)

    def setup(self):
        os.makedirs(self.work, exist_ok=True)
        real_pkg, self.cert = real_package(self.bin, self.release)
        keydir = os.path.join(self.work, "keys")
        os.makedirs(keydir, exist_ok=True)
        key, self.pub = os.path.join(keydir, "repo.pem"), os.path.join(keydir, "repo-pub.pem")
        if not os.path.isfile(self.pub):
            sh(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                "ec_paramgen_curve:P-256", "-out", key], stderr=subprocess.DEVNULL)
            sh(["openssl", "pkey", "-in", key, "-pubout", "-out", self.pub])
        # The warm re-run's floors: programs that do nothing but load the libraries the
        # installer links, and those plus the two it loads when it downloads or unpacks.
        self.linked_floor = os.path.join(self.work, "links-linked")
        self.all_floor = os.path.join(self.work, "links-all")
        linked = ["-lcrypto", "-ljson-c", "-pthread"]
        with tempfile.NamedTemporaryFile("w", suffix=".c", dir=self.work) as c:
            c.write("int main(void) { return 0; }\n")
            c.flush()
            sh(["cc", "-O2", "-o", self.linked_floor, c.name, "-Wl,--no-as-needed"] + linked)
            sh(["cc", "-O2", "-o", self.all_floor, c.name, "-Wl,--no-as-needed", "-lcurl",
                "-larchive", "-lkmod", "-lmount"] + linked)
        self.nvml = os.path.join(self.work, "libnvidia-ml-standin.so")
        sh(["cc", "-shared", "-fPIC", "-O1", "-Wl,-soname,libnvidia-ml.so.1", "-o", self.nvml,
            os.path.join(SRC, "tests", "standin", "libnvidia-ml.c")])
        # Real libcuda needs a GPU for cuInit: the readiness check runs the CUDA stand-in.
        self.cuda = os.path.join(self.work, "libcuda-standin.so")
        sh(["cc", "-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1",
            "-DSTANDIN_VERSION=\"%s\"" % VERSION, "-o", self.cuda,
            os.path.join(SRC, "tests", "standin", "libcuda.c")])
        self.template = host_template(self.work, self.release)
        framed, single = repack(real_pkg, self.work)
        specs = [("real", "NVIDIA %s (real), 4 MiB frames" % VERSION, framed),
                 ("real-1", "NVIDIA %s (real), one frame (make-repo pack's default)" % VERSION,
                  single)]
        if not self.args.no_x4:
            log("making the synthetic 4x package")
            specs.append(("x4", "synthetic 4x", make_x4(real_pkg, self.work)))
        self.server = Server(self.work)
        self.payloads = []
        for name, label, pkg in specs:
            path, sha, size = make_repo(self.work, name, pkg, self.release, key)
            p = Payload(name, label, pkg, self.server, path, sha, size)
            p.root = os.path.join(self.work, "run", "installed-" + name)
            drop_tree(p.root)
            with subprocess.Popen(["zstd", "-q", "-d", "-c", pkg], stdout=subprocess.PIPE) as z:
                p.tar_size = sum(len(b) for b in iter(lambda: z.stdout.read(1 << 20), b""))
            self.payloads.append(p)
            log("%s: %.1f MiB compressed, %.1f MiB unpacked" %
                (name, size / 2**20, p.tar_size / 2**20))

    def one_round(self, p, rep):
        w = os.path.join(self.work, "run")
        root = os.path.join(w, "root")
        os.makedirs(w, exist_ok=True)
        # Every input is in the page cache before anything is timed.
        for f in (p.pkg, os.path.join(self.server.dir, p.repo_path.lstrip("/"))):
            with open(f, "rb") as fh:
                while fh.read(1 << 24):
                    pass
        sh(["sync"])

        # Ours, cold.
        self.fresh_root(root)
        log_path = os.path.join(w, "cold.log")
        dt, rss, cpu = self.install(p, root, log_path)
        p.times["ours-cold"].append(dt)
        p.cpu.append(cpu)
        p.rss.append(rss)
        for k, v in self.stage_times(log_path).items():
            p.stage_ms.setdefault(k, []).append(v)
        cache = os.path.join(w, "cache-saved")
        drop_tree(cache)
        sh(["cp", "-a", os.path.join(root, "var", "cache"), cache])
        sh(["sync"])

        # The baseline build, cold, under the same conditions.
        if self.baseline:
            self.fresh_root(root)
            dt, _, _ = self.install(p, root, os.path.join(w, "base.log"), binary=self.baseline)
            p.times["base-cold"].append(dt)
            sh(["sync"])

        # The shell pipeline.
        d = os.path.join(w, "shell")
        drop_tree(d)
        os.makedirs(d)
        script = ('set -e; cd "$1"; curl -fsS -o pkg.tar.zst "$2"; '
                  'echo "$3  pkg.tar.zst" | sha256sum -c --quiet; mkdir staging; '
                  'tar --zstd -xf pkg.tar.zst -C staging; mv staging nvidia')
        dt, _, rc, _ = timed(["bash", "-c", script, "shell", d, p.url, p.sha])
        if rc != 0:
            die("the shell pipeline failed (%d)" % rc)
        p.times["shell"].append(dt)
        drop_tree(d)
        sh(["sync"])

        # Each stage alone.
        # A stage that failed would be timed as fast as its failure: each one is checked.
        for stage, cmd in (("download", ["curl", "-fsS", "-o", "/dev/null", p.url]),
                           ("sha256", ["openssl", "dgst", "-sha256", p.pkg]),
                           ("zstd", ["zstd", "-q", "-d", "-c", p.pkg])):
            dt, _, rc, _ = timed(cmd)
            if rc != 0:
                die("the %s stage alone failed (%d)" % (stage, rc))
            p.times[stage].append(dt)
        x = os.path.join(w, "extract")
        drop_tree(x)
        os.makedirs(x)
        dt, _, rc, cpu = timed(["tar", "--zstd", "-xf", p.pkg, "-C", x])
        p.extract_cpu.append(cpu)
        if rc != 0:
            die("tar -x failed")
        p.times["extract"].append(dt)
        drop_tree(x)
        sh(["sync"])

        # Ours, package in the node cache.
        self.fresh_root(root, keep_cache=cache)
        dt, rss, _ = self.install(p, root, os.path.join(w, "cached.log"))
        p.times["ours-cached"].append(dt)
        p.rss_cached.append(rss)

        # The last round's install stays for the warm re-runs, measured after all rounds.
        if rep == self.args.reps - 1:
            os.rename(root, p.root)
        drop_tree(root)
        drop_tree(cache)

    def warm_runs(self):
        """The re-runs of every payload's install, alternating payloads, with the floors."""
        w = os.path.join(self.work, "run")
        sh(["sync"])
        before = {p.name: self.server.bytes_sent(p.repo_path) for p in self.payloads}
        for _ in range(self.args.warm_reps):
            for p in self.payloads:
                dt, _, _ = self.install(p, p.root, os.path.join(w, "warm.log"))
                p.warm.append(dt)
                with open(os.path.join(w, "warm.log")) as f:
                    text = f.read()
                if '"source":"cache (fresh)"' not in text or "already installed" not in text:
                    die("%s: the warm re-run did not find the driver installed and its index "
                        "fresh" % p.name)
                dt, _, _ = self.install(p, p.root, os.path.join(w, "warm-ask.log"),
                                     ["--index-max-age", "0"])
                p.warm_ask.append(dt)
                p.floor_true.append(timed(["/bin/true"])[0])
                p.floor_linked.append(timed([self.linked_floor])[0])
                p.floor_all.append(timed([self.all_floor])[0])
        # The same node, its ld.so.conf no longer reading ld.so.conf.d: the first run after
        # the change settles, the rest are measured.
        for p in self.payloads:
            with open(os.path.join(p.root, "etc", "ld.so.conf"), "w") as f:
                f.write("/usr/local/lib\n")
            self.install(p, p.root, os.path.join(w, "warm-noinc.log"))
        for _ in range(self.args.warm_reps):
            for p in self.payloads:
                dt, _, _ = self.install(p, p.root, os.path.join(w, "warm-noinc.log"))
                p.warm_noinc.append(dt)
        for p in self.payloads:
            p.warm_bytes = self.server.bytes_sent(p.repo_path) - before[p.name]
            drop_tree(p.root)

    def run(self):
        self.setup()
        try:
            for rep in range(self.args.reps):
                for p in self.payloads:
                    log("round %d/%d: %s" % (rep + 1, self.args.reps, p.name))
                    self.one_round(p, rep)
            log("warm re-runs")
            self.warm_runs()
        finally:
            self.server.stop()
        log("the image (scripts/image-test.sh)")
        self.image_bytes = image_size()
        self.vm = self.vm_real = None
        if self.args.vm_rounds > 0:
            log("time to ready in the VM: %d rounds of two boots (tests/vm/run.sh timing)" %
                self.args.vm_rounds)
            self.vm = self.vm_timing("timing", VM_RUNS)
            real = os.environ.get("NDI_REAL_DIR", os.path.join(SRC, "build", "real"))
            if os.path.isfile(os.path.join(real, "repo", "index.json")):
                log("NVIDIA's real driver in the VM: %d rounds (tests/vm/run.sh real-timing)" %
                    self.args.vm_rounds)
                self.vm_real = self.vm_timing("real-timing", VM_REAL_RUNS)
            else:
                log("no %s/repo (make check-real builds it): the real driver is not timed "
                    "in the VM" % real)
        return self.report()

    def vm_timing(self, scenario, names):
        """tests/vm/run.sh BINARY SCENARIO: {run: [{field: value}, ...]}, one per round."""
        env = dict(os.environ, NDI_TIMING_ROUNDS=str(self.args.vm_rounds))
        r = subprocess.run([os.path.join(SRC, "tests", "vm", "run.sh"), self.bin, scenario],
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            die("tests/vm/run.sh %s failed:\n%s" % (scenario, (r.stdout + r.stderr)[-4000:]))
        runs = {}
        for line in r.stdout.splitlines():
            if not line.startswith("VMTIME round="):
                continue
            words = line.split()
            f = dict(w.split("=", 1) for w in words[1:] if "=" in w)
            runs.setdefault(words[2], []).append({k: int(v) for k, v in f.items()})
        for name, _ in names:
            if len(runs.get(name, [])) != self.args.vm_rounds:
                die("tests/vm/run.sh %s: %d '%s' lines for %d rounds:\n%s" %
                    (scenario, len(runs.get(name, [])), name, self.args.vm_rounds,
                     r.stdout[-3000:]))
        self.vm_kernel = next((l.split("kernel ", 1)[1].split(",")[0]
                               for l in r.stdout.splitlines() if l.startswith("vm: kernel ")),
                              "unknown")
        return runs

    # ---- the report ------------------------------------------------------------------

    def report(self):
        med = statistics.median
        rows, verdicts = [], []
        for p in self.payloads:
            m = {k: med(v) for k, v in p.times.items() if v}
            slowest = max(STAGES, key=lambda k: m[k])
            p.m, p.slowest = m, slowest
            p.cold_vs_slowest = m["ours-cold"] / m[slowest]
            p.shell_vs_cold = m["shell"] / m["ours-cold"]
            p.warm_ms = med(p.warm) * 1000 if p.warm else None
            p.warm_ask_ms = med(p.warm_ask) * 1000 if p.warm_ask else None
            p.warm_noinc_ms = med(p.warm_noinc) * 1000 if p.warm_noinc else None
            p.rss_mib = max(p.rss) / 1024 if all(p.rss) else float("inf")
            p.frames = zstd_frames(p.pkg)
            p.cpu_med = med(p.cpu)
            p.cpu_floor = p.cpu_med / os.cpu_count()
            if p.frames > 1:
                p.cold_vs_extract = m["ours-cold"] / m["extract"]
                verdicts.append(("%s (%d frames): cold install <= %.2fx `tar --zstd -x`" %
                                 (p.name, p.frames, TARGET_FRAMED_VS_EXTRACT),
                                 "%.2fx" % p.cold_vs_extract,
                                 p.cold_vs_extract <= TARGET_FRAMED_VS_EXTRACT))
            verdicts += [
                ("%s: cold install <= %.2fx the slowest stage" % (p.name, TARGET_COLD_VS_SLOWEST),
                 "%.2fx (%s)" % (p.cold_vs_slowest, slowest),
                 p.cold_vs_slowest <= TARGET_COLD_VS_SLOWEST),
                ("%s: shell pipeline >= %.1fx slower than cold install" % (p.name, TARGET_SHELL_VS_COLD),
                 "%.2fx" % p.shell_vs_cold, p.shell_vs_cold >= TARGET_SHELL_VS_COLD),
                ("%s: peak RSS of the cold install < %d MiB" % (p.name, TARGET_RSS_MIB),
                 "%.1f MiB" % p.rss_mib, p.rss_mib < TARGET_RSS_MIB),
            ]
            if p.warm:
                verdicts += [
                    ("%s: warm re-run median < %d ms" % (p.name, TARGET_WARM_MS),
                     "%.1f ms" % p.warm_ms, p.warm_ms < TARGET_WARM_MS),
                    ("%s: warm re-runs read no package bytes" % p.name,
                     "%d bytes" % p.warm_bytes, p.warm_bytes == 0),
                    ("%s: warm re-run asking the repository median < %d ms" %
                     (p.name, TARGET_WARM_ASK_MS),
                     "%.1f ms (a program that only links the libraries: %.1f ms)" %
                     (p.warm_ask_ms, med(p.floor_all) * 1000),
                     p.warm_ask_ms < TARGET_WARM_ASK_MS),
                    ("%s: warm re-run, ld.so.conf without ld.so.conf.d, median < %d ms" %
                     (p.name, TARGET_WARM_MS),
                     "%.1f ms" % p.warm_noinc_ms, p.warm_noinc_ms < TARGET_WARM_MS),
                ]
        if self.vm:
            own = statistics.median(self.vm_own("reboot"))
            verdicts.append(("VM, reboot: the reload's own time (process wall time less the "
                             "kernel's insertion calls) < %.0f s" % TARGET_REBOOT_OWN_S,
                             "%.0f ms" % (own * 1000), own < TARGET_REBOOT_OWN_S))
        if self.image_bytes is not None:
            verdicts.append(("image (`make image-test`) <= %d bytes" % TARGET_IMAGE_BYTES,
                             "%d bytes" % self.image_bytes,
                             self.image_bytes <= TARGET_IMAGE_BYTES))
        text = self.markdown(verdicts)
        out = os.path.realpath(self.args.out)
        with open(out, "w") as f:
            f.write(text)
        self.chart(os.path.splitext(out)[0] + ".png")
        print(text)
        return 0 if all(ok for _, _, ok in verdicts) else 1

    def vm_own(self, run, data=None):
        """Seconds of each round's RUN that were ours: the process's wall time (its start to
        its exit) less the kernel's module insertion calls."""
        return [(f["wall_ms"] * 1000 - f["in_kernel_us"]) / 1e6 for f in (data or self.vm)[run]]

    def vm_table(self, data, names, to_what):
        med = statistics.median
        L = ["| stage | " + " | ".join(label for _, label in names) + " |",
             "|---|" + "---|" * len(names)]

        def row(label, fn):
            L.append("| %s | %s |" % (label, " | ".join(fn(n) for n, _ in names)))

        def ms(key):
            return lambda n: "%.1f ms" % (med(f[key] for f in data[n]) / 1000)

        for st in VM_STAGES:
            row(st, ms(st + "_us"))
            if st == "kernel":
                row("&nbsp;&nbsp;of which in the kernel's insertion calls (signature check, "
                    "relocation, init)", ms("in_kernel_us"))
                row("&nbsp;&nbsp;of which the modules' init functions (initcall_debug)",
                    ms("init_us"))
        row("the rest (lock, plan, cache, logs)",
            lambda n: "%.1f ms" % (med(f["total_us"] - sum(f[s + "_us"] for s in VM_STAGES)
                                       for f in data[n]) / 1000))
        row("**%s, the installer's clock**" % to_what, ms("total_us"))
        row("**%s, the process's wall time**" % to_what,
            lambda n: "%d ms" % med(f["wall_ms"] for f in data[n]))
        row("our own time (wall time less the kernel's insertion calls)",
            lambda n: "%.0f ms (%.0f - %.0f)" % (med(self.vm_own(n, data)) * 1000,
                                                 min(self.vm_own(n, data)) * 1000,
                                                 max(self.vm_own(n, data)) * 1000))
        return L

    def vm_markdown(self):
        rounds = self.args.vm_rounds
        L = ["## Time to ready on a real kernel", "",
             "`tests/vm/run.sh timing`, in this run: Debian's kernel %s under qemu (TCG: no "
             "KVM on this machine, so every figure is slower than on hardware), 2 vCPUs, "
             "the stand-in modules (tests/kmod, signed with the test key and verified by the "
             "kernel), the repository served by tests/tools/httpd.py on the host, reached "
             "through qemu's user network. %d round%s, each two boots of a new disk laid out "
             "as COS's stateful partition: a **cold install**; then, after a **reboot**, the "
             "reload from the node's disk (no download), and an **upgrade** to the next "
             "version (the old modules out, the new package downloaded, verified, "
             "published, loaded). Stage times are the installer's own clock (its \"stage "
             "times\" line: from the start of `install` to the readiness marker); the wall "
             "time is the whole process, exec and dynamic linking included, from "
             "/proc/uptime (10 ms steps); the modules' init functions are timed by the "
             "kernel (`initcall_debug`). Medians over the rounds." %
             (self.vm_kernel, rounds, "" if rounds == 1 else "s"),
             ""]
        L += self.vm_table(self.vm, VM_RUNS, "to ready")
        L.append("")
        if self.vm_real:
            L += ["### NVIDIA's real 535.261.03 in the same VM", "",
                  "`tests/vm/run.sh real-timing`: make check-real's repository (NVIDIA's "
                  "proprietary modules built for this kernel and signed with the test key, "
                  "its user space, its GSP firmware) served the same way, one boot per round. "
                  "Without a GPU no run reaches ready: nvidia.ko's init finds no device and "
                  "the kernel answers ENODEV, so the first two runs are timed up to that "
                  "refusal (the installer then rolls back: nothing stays loaded or "
                  "published), and the third publishes the user space without the kernel "
                  "(`--skip-modules`; nothing loaded, so no verification and no marker).", ""]
            L += self.vm_table(self.vm_real, VM_REAL_RUNS, "to the end")
            L.append("")
        return L

    def machine(self):
        cpu = "unknown"
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) // 1024 // 1024
        fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", self.work],
                            capture_output=True, text=True).stdout.strip() or "unknown"
        vers = []
        for cmd in (["curl", "--version"], ["tar", "--version"], ["zstd", "--version"],
                    ["openssl", "version"]):
            out = subprocess.run(cmd, capture_output=True, text=True).stdout.split()
            nums = [w.strip(",") for w in out if w[:1].isdigit() or w[:2] == "v1"]
            vers.append("%s %s" % (cmd[0], nums[0].lstrip("v") if nums else "?"))
        return cpu, os.cpu_count(), mem, fs, vers

    def markdown(self, verdicts):
        cpu, ncpu, mem, fs, vers = self.machine()
        commit = subprocess.run(["git", "-C", SRC, "describe", "--always", "--dirty"],
                                capture_output=True, text=True).stdout.strip()
        L = ["# Benchmarks: a cold install against its slowest stage", "",
             "Generated by `bench/run.py` (`make bench`) on %s at commit `%s`. Every figure "
             "below was measured in that one run: %d repetitions per payload, each "
             "measurement taken in turn within a repetition; medians, with min-max." %
             (time.strftime("%Y-%m-%d"), commit, self.args.reps), "",
             "Machine: %s, %d cores, %d GiB memory, %s file system, kernel %s; %s." %
             (cpu, ncpu, mem, fs, platform.release(), "; ".join(vers)), "",
             "The installer ran against a fake host root with one H100 (10de:2330): modules "
             "verified against their signing certificate, then \"inserted\" through the fake "
             "kernel (tests/tools/fakekernel.c, which reads only their headers, as the real "
             "kernel reads them into its own memory); the NVML and CUDA checks answered by the "
             "stand-ins of tests/standin (the real libraries need a GPU; the CUDA check runs "
             "in a child process, as on a node); the ld cache, CDI spec, labels and readiness "
             "marker written. The server is tests/tools/httpd.py on 127.0.0.1 (sendfile, "
             "Range). The repositories sign `\"max_age\": 300` into their index, as one that "
             "publishes a few times a day would: the warm re-run reuses the index it fetched "
             "minutes before, verified again, without a request; the re-run with "
             "`--index-max-age 0` fetches and verifies it (docs/design.md, \"Re-runs\").", ""]
        for p in self.payloads:
            m = p.m
            L += ["## %s: %.1f MiB package (%d zstd frame%s), %.1f MiB unpacked" %
                  (p.label, p.size / 2**20, p.frames, "" if p.frames == 1 else "s",
                   p.tar_size / 2**20), "",
                  "| measurement | median | min - max | vs. slowest stage |",
                  "|---|---|---|---|"]
            order = [("download", "download alone (`curl -o /dev/null`)"),
                     ("sha256", "SHA-256 alone (`openssl dgst -sha256`, page cache)"),
                     ("zstd", "decompression alone (`zstd -d` to /dev/null)"),
                     ("extract", "extraction alone (`tar --zstd -x`, package in the page cache)"),
                     ("shell", "shell pipeline (`curl -o`; `sha256sum -c`; `tar --zstd -x`; `mv`)"),
                     ("ours-cold", "**our cold install** (empty cache)"),
                     ("ours-cached", "our re-install from the node cache")]
            if self.baseline:
                order.insert(6, ("base-cold", "baseline's cold install (`%s`, measured right "
                                 "after ours in each repetition)" % self.baseline_name))
            for k, label in order:
                v = p.times[k]
                L.append("| %s%s | %.3f s | %.3f - %.3f s | %.2fx |" %
                         (label, " (slowest stage)" if k == p.slowest else "", m[k], min(v),
                          max(v), m[k] / m[p.slowest]))
            if p.warm:
                for label, v in (("**warm re-run** (already installed; index fresh, "
                                  "no request), %d runs" % len(p.warm), p.warm),
                                 ("warm re-run asking the repository (`--index-max-age 0`)",
                                  p.warm_ask),
                                 ("warm re-run, the host's ld.so.conf not reading "
                                  "ld.so.conf.d", p.warm_noinc),
                                 ("floor: `/bin/true`", p.floor_true),
                                 ("floor: a program that only links the libraries the installer "
                                  "links (libcrypto, json-c)", p.floor_linked),
                                 ("floor: the same plus the four it loads on first use "
                                  "(libcurl, libarchive, libkmod, libmount)", p.floor_all)):
                    L.append("| %s | %.1f ms | %.1f - %.1f ms | |" %
                             (label, statistics.median(v) * 1000, min(v) * 1000, max(v) * 1000))
            cached_rss = ("%.1f MiB" % (max(p.rss_cached) / 1024) if all(p.rss_cached)
                          else "not reported")
            L += ["", "Peak RSS: cold install %s (max of %d), cached re-install %s. "
                  "Package bytes sent during the warm re-runs: %d." %
                  ("%.1f MiB" % p.rss_mib if all(p.rss) else "not reported (the binary "
                   "logs no peak_rss_kib)", len(p.rss), cached_rss, p.warm_bytes), ""]
            if p.stage_ms:
                parts = ", ".join("%s %.1f ms" % (k, statistics.median(v))
                                  for k, v in p.stage_ms.items()
                                  if k not in ("own", "total", "in_kernel"))
                L += ["Inside our cold install (the installer's \"stage times\" line, medians; "
                      "`download` includes the unpacking that runs alongside it, `unpack` is "
                      "what it took after the download ended): " + parts + "; in all %.1f ms." %
                      statistics.median(p.stage_ms["total"]), ""]
            L += ["CPU time (user + system, medians): our cold install %.3f s, `tar --zstd "
                  "-x` %.3f s (zstd's included). On %d cores no schedule of our install "
                  "can end before %.3f s, %.2fx the extraction%s." %
                  (p.cpu_med, statistics.median(p.extract_cpu), os.cpu_count(),
                   p.cpu_floor, p.cpu_floor / m["extract"],
                   ": the floor under the %.2fx target on this machine" %
                   TARGET_FRAMED_VS_EXTRACT if p.frames > 1 else ""), ""]
        if self.image_bytes is not None:
            L += ["## The image", "", "`make image-test` built it in this run: %d bytes "
                  "(%.1f MB as `buildah images` counts), FROM scratch (docs/design.md, "
                  "\"The image\"); the image before it, Debian 12 slim with Debian's "
                  "libraries, was 177 MiB." % (self.image_bytes, self.image_bytes / 1e6), ""]
        if self.vm:
            L += self.vm_markdown()
        L += ["## Targets", "", "| target | measured | met |", "|---|---|---|"]
        for name, val, ok in verdicts:
            L.append("| %s | %s | %s |" % (name, val, "yes" if ok else "**no**"))
        L += ["", "![time per stage](benchmarks.png)", "",
              "docs/design.md (\"One pass\", \"Re-runs\") explain the design these figures come from.", ""]
        return "\n".join(L)

    def chart(self, png):
        data = os.path.join(self.work, "chart.dat")
        names = [("download", "download"), ("sha256", "SHA-256"), ("zstd", "zstd -d"),
                 ("extract", "tar --zstd -x"), ("shell", "shell pipeline"),
                 ("ours-cold", "ours, cold"), ("ours-cached", "ours, cached")]
        with open(data, "w") as f:
            f.write("stage " + " ".join('"%s"' % p.label for p in self.payloads) + "\n")
            for k, label in names:
                f.write('"%s" ' % label + " ".join("%.4f" % p.m[k] for p in self.payloads) + "\n")
        plot = ", ".join("'%s' using %d:xtic(1) title columnheader" % (data, i + 2)
                         for i in range(len(self.payloads)))
        script = "\n".join([
            "set terminal pngcairo size 1000,520 font 'sans,11'",
            "set output '%s'" % png,
            "set title 'Time per stage and per install (median seconds, one run)'",
            "set style data histograms", "set style histogram clustered gap 1",
            "set style fill solid 0.85 border -1", "set boxwidth 0.9",
            "set ylabel 'seconds'", "set grid ytics", "set key top left",
            "set xtics rotate by -20", "plot " + plot, ""])
        if shutil.which("gnuplot") is None:
            log("gnuplot is not installed: no chart (apt-get install gnuplot-nox)")
            return
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("fakekernel")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warm-reps", type=int, default=21)
    ap.add_argument("--out", default=os.path.join(SRC, "docs", "benchmarks.md"))
    ap.add_argument("--work", default=os.path.join(SRC, "build", "bench"))
    ap.add_argument("--no-x4", action="store_true", help="only the real package")
    ap.add_argument("--vm-rounds", type=int, default=3,
                    help="rounds of the VM's time-to-ready boots (tests/vm/run.sh timing); "
                    "0: none")
    ap.add_argument("--baseline", help="another build of the installer whose cold install is "
                    "measured beside ours in each repetition (informational, not a target)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        die("run as root (the installer writes a host root's /dev and /sys)")
    sys.exit(Bench(args).run())


if __name__ == "__main__":
    main()
