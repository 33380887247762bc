#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The supply benchmark (`make bench-supply`): from "a node asks for kernel K" to "its driver
is ready", and its parts, measured in one run with the build cache cold and warm.

  bench/supply.py BINARY FAKEKERNEL [--reps N] [--interval SECONDS]
                  [--out docs/benchmark-supply.md] [--work build/bench-supply]

Each repetition, cold then warm (so drift hits both alike): a repository served on
127.0.0.1 (tests/tools/httpd.py) with the driver for another kernel only; the API server
stand-in (tests/tools/kube-api.py) with one Node; a COS node root with one H100 whose
kernel is the installed one (bench/run.py's host_template), where the installer runs as the
init container does (`install --wait-for-package`, --node-name, the fake kernel through
LD_PRELOAD, the NVML and CUDA stand-ins). When its ask appears on the Node (an event:
the stand-in's store is watched), one supply pass runs (scripts/supply, the local
executor, the Nodes from the stand-in): build-driver-package compiles the stand-in modules
(tests/kmod) from a --source tree against the installed headers, signs and stages the
package, make-repo publishes it; the installer installs at its next check.

  cold   a new build work directory (the modules compiled)
  warm   the previous repetition's (build-driver-package finds the modules it compiled
         for the same inputs and only signs and packs)
  late   warm, the pass started only once the node's checks are --interval apart (the
         wait's record says so): a package that comes after a long build meets the node at
         its longest interval, the worst case of its next look

Parts: ask (the installer's start to its ask on the Node), build (the pass's build of the
package, from its JSON report), pass (the ask to the package published: the pass's start,
Nodes, coverage, build, publish), next look (published to the installer's exit, ready),
total (ask to ready), held (late: the ask to the pass's start). Targets (the issue's): ready
within one package build plus 60 s of the ask (total less build and held), and the node's
own share (ask plus next look) under 60 s, with the wait's default longest interval (30 s).
Exits 1 when a target is missed.
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

SRC = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
VERSION = "535.261.03"
NODE = "bench-node"
WANTS = "nvidia.com/gpu.driver-installer.wants"
TARGET_OVER_BUILD_S = 60.0
TARGET_NODE_SHARE_S = 60.0


def load_run():
    """bench/run.py's helpers (the node root, the servers, timing), one definition each."""
    spec = importlib.util.spec_from_file_location("bench_run", os.path.join(SRC, "bench",
                                                                            "run.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


R = load_run()


def log(msg):
    print("bench-supply: %s" % msg, file=sys.stderr, flush=True)


class Kube:
    """The API server stand-in with one Node, and its service account."""

    def __init__(self, work):
        self.dir = os.path.join(work, "kube")
        shutil.rmtree(self.dir, ignore_errors=True)
        R.sh([os.path.join(SRC, "tests", "tools", "kube-certs"), self.dir, "127.0.0.1"])
        self.sa = os.path.join(self.dir, "sa")
        with open(os.path.join(self.sa, "token"), "w") as f:
            f.write("bench-token\n")
        with open(os.path.join(self.sa, "namespace"), "w") as f:
            f.write("kube-system")
        self.state = os.path.join(self.dir, "state.json")
        with open(self.state, "w") as f:
            json.dump({"nodes": [{"apiVersion": "v1", "kind": "Node",
                                  "metadata": {"name": NODE}, "spec": {}}]}, f)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(SRC, "tests", "tools", "kube-api.py"),
             os.path.join(self.dir, "port"), os.path.join(self.dir, "api.pem"),
             os.path.join(self.dir, "api.key"), os.path.join(self.sa, "token"), self.state,
             os.path.join(self.dir, "faults.json"), os.path.join(self.dir, "requests.log"),
             "7200"])
        self.port = R.wait_file(os.path.join(self.dir, "port"), "the API server stand-in")

    def wants(self):
        try:
            with open(self.state) as f:
                n = json.load(f)["nodes"][0]
        except (OSError, ValueError, KeyError, IndexError):
            return None
        return n.get("metadata", {}).get("annotations", {}).get(WANTS)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class SupplyBench:
    def __init__(self, args):
        self.args = args
        self.bin = os.path.realpath(args.binary)
        self.fake = os.path.realpath(args.fakekernel)
        self.work = os.path.realpath(args.work)
        self.release = R.kernel_release()

    def setup(self):
        w = self.work
        shutil.rmtree(w, ignore_errors=True)
        os.makedirs(os.path.join(w, "keys"))
        k = os.path.join(w, "keys")
        self.key, self.pub = os.path.join(k, "repo.pem"), os.path.join(k, "repo-pub.pem")
        R.sh(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
              "-out", self.key], stderr=subprocess.DEVNULL)
        R.sh(["openssl", "pkey", "-in", self.key, "-pubout", "-out", self.pub])
        R.sh([os.path.join(SRC, "scripts", "make-signing-key"), "--subject",
              "/CN=bench-supply module key", os.path.join(k, "mod")],
             stdout=subprocess.DEVNULL)
        self.mod_key, self.mod_crt = os.path.join(k, "mod.key"), os.path.join(k, "mod.crt")
        # The driver's source as NVIDIA's .run extracts it: the stand-in user space and the
        # stand-in modules' sources, built by the kernel's Makefile.
        drv, src = os.path.join(w, "drv"), os.path.join(w, "src")
        R.sh([os.path.join(SRC, "scripts", "make-standin-driver"), VERSION, drv, "4"],
             stdout=subprocess.DEVNULL)
        os.makedirs(os.path.join(src, "kernel"))
        os.makedirs(os.path.join(src, "firmware"))
        for d, names in (("lib64", os.listdir(os.path.join(drv, "lib64"))),
                         ("bin", ["nvidia-smi"])):
            for n in names:
                p = os.path.join(drv, d, n)
                if n.endswith(".so." + VERSION) or d == "bin":
                    shutil.copy(os.path.realpath(p), os.path.join(src, n))
        fw = os.path.join(drv, "firmware", "nvidia", VERSION)
        for n in os.listdir(fw):
            shutil.copy(os.path.join(fw, n), os.path.join(src, "firmware", n))
        kmod = os.path.join(SRC, "tests", "kmod")
        for n in os.listdir(kmod):
            if n.endswith(".c") or n == "Kbuild":
                shutil.copy(os.path.join(kmod, n), os.path.join(src, "kernel", n))
        with open(os.path.join(src, "kernel", "Makefile"), "w") as f:
            f.write("modules:\n\t$(MAKE) -C $(SYSOUT) M=$(CURDIR) NV_VERSION=%s modules\n" %
                    VERSION)
        self.src = src
        # The repository's first package: the driver for a kernel no node runs.
        self.other_pkg = os.path.join(w, "other.tar.zst")
        shutil.rmtree(os.path.join(drv, "kernel"), ignore_errors=True)
        os.makedirs(os.path.join(drv, "kernel"))
        R.sh([os.path.join(SRC, "scripts", "make-repo"), "pack", drv, self.other_pkg])
        self.config = os.path.join(w, "supply.json")
        with open(self.config, "w") as f:
            json.dump({"supply": 1, "platforms": {"debian": {"build_args": [
                "--source", src, "--headers", "/lib/modules/{kernel}/build"]}}}, f)
        self.nvml = os.path.join(w, "libnvidia-ml-standin.so")
        R.sh(["cc", "-shared", "-fPIC", "-O1", "-Wl,-soname,libnvidia-ml.so.1", "-o", self.nvml,
              os.path.join(SRC, "tests", "standin", "libnvidia-ml.c")])
        self.cuda = os.path.join(w, "libcuda-standin.so")
        R.sh(["cc", "-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1",
              "-DSTANDIN_VERSION=\"%s\"" % VERSION, "-o", self.cuda,
              os.path.join(SRC, "tests", "standin", "libcuda.c")])
        self.template = R.host_template(w, self.release)
        self.server = R.Server(w)

    def held_until_longest(self, root, inst, t_ask):
        """Late: waits until the node's wait record shows checks --interval apart."""
        rec = os.path.join(root, "home", "kubernetes", "bin", "nvidia", ".waiting.json")
        while True:
            try:
                with open(rec) as f:
                    w = json.load(f)
                gap = (time.mktime(time.strptime(w["next_check"], "%Y-%m-%dT%H:%M:%SZ")) -
                       time.mktime(time.strptime(w["last_check"], "%Y-%m-%dT%H:%M:%SZ")))
                if gap >= self.args.interval:
                    return time.monotonic() - t_ask
            except (OSError, ValueError, KeyError, TypeError):
                pass
            if inst.poll() is not None or time.monotonic() - t_ask > 600:
                R.die("the node's checks never came %d s apart (record %s)" % (
                    self.args.interval, rec))
            time.sleep(0.2)

    def round(self, n, kind, build_work):
        """One repetition: the parts' seconds."""
        w = self.work
        repo = os.path.join(self.server.dir, "repo")
        shutil.rmtree(repo, ignore_errors=True)
        R.sh([os.path.join(SRC, "scripts", "make-repo"), "add", "--repo", repo, "--key",
              self.key, "--version", VERSION, "--kernel", "0.0.0-none", "--tag", "default",
              self.other_pkg], stdout=subprocess.DEVNULL)
        kube = Kube(w)
        root = os.path.join(w, "root")
        R.drop_tree(root)
        R.sh(["cp", "-a", self.template, root])
        # A Debian node (the template is COS's): the pass builds with Debian's platform,
        # the stand-in source against the installed headers, as the node asks.
        with open(os.path.join(root, "etc", "os-release"), "w") as f:
            f.write('ID=debian\nVERSION_ID="12"\nPRETTY_NAME="Debian GNU/Linux 12"\n')
        env = dict(os.environ, LD_PRELOAD=self.fake, FAKE_KERNEL_ROOT=root,
                   FAKE_KERNEL_NVML=self.nvml, FAKE_KERNEL_CUDA=self.cuda,
                   KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=kube.port)
        for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy"):
            env.pop(k, None)
        ilog = os.path.join(w, "installer-%d-%s.log" % (n, kind))
        t0 = time.monotonic()
        with open(ilog, "w") as f:
            inst = subprocess.Popen(
                [self.bin, "--root", root, "install", "--repo", self.server.url + "/repo",
                 "--repo-key", self.pub, "--kernel-release", self.release, "--module-cert",
                 self.mod_crt, "--driver-version", VERSION, "--wait-for-package",
                 "--wait-for-package-interval", str(self.args.interval),
                 "--wait-for-package-max", "1800", "--node-name", NODE,
                 "--kube-sa-dir", kube.sa], env=env, stdout=subprocess.DEVNULL, stderr=f)
        while kube.wants() is None:
            if inst.poll() is not None or time.monotonic() - t0 > 300:
                R.die("the installer did not ask (exit %s; log %s)" % (inst.poll(), ilog))
            time.sleep(0.05)
        t_ask = time.monotonic()
        held = self.held_until_longest(root, inst, t_ask) if kind == "late" else 0.0
        report = os.path.join(w, "report-%d-%s.json" % (n, kind))
        plog = os.path.join(w, "pass-%d-%s.log" % (n, kind))
        with open(plog, "w") as f:
            rc = subprocess.run(
                [os.path.join(SRC, "scripts", "supply"), "--repo", repo, "--repo-key", self.key,
                 "--config", self.config, "--nodes", "in-cluster", "--kube-server",
                 "https://127.0.0.1:%s" % kube.port, "--kube-token-file",
                 os.path.join(kube.sa, "token"), "--kube-ca", os.path.join(kube.sa, "ca.crt"),
                 "--installer", self.bin, "--work", build_work, "--json", report, "--",
                 "--sign-key", self.mod_key, "--sign-cert", self.mod_crt],
                stdout=f, stderr=subprocess.STDOUT).returncode
        t_pub = time.monotonic()
        if rc != 0:
            R.die("the supply pass exited %d (log %s)" % (rc, plog))
        rc = inst.wait()
        t_ready = time.monotonic()
        kube.stop()
        if rc != 0:
            R.die("the installer exited %d after the package came (log %s)" % (rc, ilog))
        with open(report) as f:
            built = [e for e in json.load(f)["targets"] if e.get("result") == "built"]
        if len(built) != 1:
            R.die("the pass built %d packages, not 1 (report %s)" % (len(built), report))
        parts = {"ask": t_ask - t0, "held": held, "build": built[0]["seconds"],
                 "pass": t_pub - t_ask - held, "next look": t_ready - t_pub,
                 "total": t_ready - t_ask}
        log("%s %d: %s" % (kind, n, ", ".join("%s %.1f s" % kv for kv in parts.items())))
        return parts

    def run(self):
        self.setup()
        res = {"cold": [], "warm": [], "late": []}
        try:
            for n in range(self.args.reps):
                cold = os.path.join(self.work, "build-cold-%d" % n)
                res["cold"].append(self.round(n, "cold", cold))
                # Warm: a new pass work directory over the cold one's build cache.
                warm = os.path.join(self.work, "build-warm-%d" % n)
                shutil.rmtree(warm, ignore_errors=True)
                shutil.copytree(cold, warm, symlinks=True,
                                ignore=shutil.ignore_patterns("stage", "*.lock", "report*"))
                res["warm"].append(self.round(n, "warm", warm))
                late = os.path.join(self.work, "build-late-%d" % n)
                shutil.rmtree(late, ignore_errors=True)
                shutil.copytree(cold, late, symlinks=True,
                                ignore=shutil.ignore_patterns("stage", "*.lock", "report*"))
                res["late"].append(self.round(n, "late", late))
        finally:
            self.server.stop()
        return res

    def write(self, res):
        ok = True
        names = ("ask", "held", "build", "pass", "next look", "total")
        lines = ["# Supply benchmark: a node asks, the repository builds, the node installs",
                 "",
                 "Measured by `make bench-supply` (bench/supply.py) on %d cores, %d "
                 "repetitions each, the wait's longest interval %d s; medians, min-max in "
                 "brackets. Seconds." % (os.cpu_count(), self.args.reps, self.args.interval),
                 "", "| cache | " + " | ".join(names) + " | node's share | goals |",
                 "|---|" + "---|" * (len(names) + 2)]
        for kind in ("cold", "warm", "late"):
            rows = res[kind]

            def cell(k):
                v = [r[k] for r in rows]
                return "%.1f [%.1f-%.1f]" % (statistics.median(v), min(v), max(v))
            share = [r["ask"] + r["next look"] for r in rows]
            over = [r["total"] - r["build"] - r["held"] for r in rows]
            good = max(over) <= TARGET_OVER_BUILD_S and max(share) < TARGET_NODE_SHARE_S
            ok = ok and good
            lines.append("| %s | %s | %.1f [%.1f-%.1f] | %s |" % (
                kind, " | ".join(cell(k) for k in names), statistics.median(share),
                min(share), max(share), "met" if good else "MISSED"))
        lines += ["", "Goals: total, less the build and the time held, at most %d s; the node's "
                  "share (ask plus next look) under %d s." % (TARGET_OVER_BUILD_S,
                                                               TARGET_NODE_SHARE_S),
                  "What each part is: bench/supply.py's docstring. The build is the stand-in "
                  "driver (tests/kmod's modules compiled against the installed headers); "
                  "NVIDIA's real modules take 2 to 5 minutes a flavour to compile cold on "
                  "2 cores (docs/building-packages.md), which only the build part would show.",
                  ""]
        with open(self.args.out, "w") as f:
            f.write("\n".join(lines))
        sys.stdout.write("\n".join(lines))
        return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("fakekernel")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--interval", type=int, default=30)
    ap.add_argument("--out", default=os.path.join(SRC, "docs", "benchmark-supply.md"))
    ap.add_argument("--work", default=os.path.join(SRC, "build", "bench-supply"))
    b = SupplyBench(ap.parse_args())
    return 0 if b.write(b.run()) else 1


if __name__ == "__main__":
    sys.exit(main())
