# SPDX-License-Identifier: Apache-2.0
"""--imex: NVIDIA's IMEX daemon (nvidia-imex) and its control tool (nvidia-imex-ctl) for
multi-node NVLink (GB200 NVL72), which NVIDIA ships apart from the driver, as a .deb of its
CUDA repository of the driver's own version: nvidia-imex-BRANCH for the 550 to 575
branches, nvidia-imex from 580 (NVIDIA/gpu-driver-container,
ubuntu24.04/precompiled/nvidia-driver imex_install). Checked before anything is built, then
packed where the package's other programs are: bin/nvidia-imex, bin/nvidia-imex-ctl and
share/nvidia/imex/{config.cfg,nodes_config.cfg} (docs/repository-format.md)."""
import os
import re
import subprocess

from bdp.common import (ARCHES, die, elf_machine, inside, say, unpack_confined,
                        unpack_given)

# IMEX came with the 550 branch (its channels' chrdev nvidia-caps-imex-channels); the
# driver container installs no IMEX package for an older branch (imex_install).
FIRST_BRANCH = 550
PROGRAMS = ("nvidia-imex", "nvidia-imex-ctl")
# Where NVIDIA's package installs the programs and their configuration (usr/bin/,
# etc/nvidia-imex/: NVIDIA/k8s-dra-driver-gpu eb75a1c5 cmd/compute-domain-daemon/main.go:
# 31-35 ran them there; NVIDIA's IMEX guide, config.html and cmdservice.html, names the
# files' defaults), and where the same files sit in a tree laid out as ours.
BIN_DIRS = ("usr/bin", "usr/sbin", "bin")
CONFIG_DIRS = ("etc/nvidia-imex", "share/nvidia/imex")
CONFIGS = ("config.cfg", "nodes_config.cfg")
# NVIDIA's file name: nvidia-imex[-BRANCH]_VERSION-REVISION_ARCH.deb (or a tar of it).
NAME_RE = re.compile(r"^nvidia-imex(?:-(\d+))?_(?:\d+:)?(\d+\.\d+(?:\.\d+)?)(?:-[\w.~+]+)?"
                     r"(?:_(?:amd64|arm64|x86_64|aarch64))?(?:\.deb|\.tar(?:\.\w+)?|\.tgz)?$")


def branch_of(version):
    """The driver branch of VERSION (570 of 570.172.08), or None."""
    m = re.match(r"^(\d+)\.", version)
    return int(m.group(1)) if m else None


def name_version(name_re, name):
    """The version NAME says by NAME_RE (group 1 the branch NVIDIA may put in a package's
    name, group 2 the version), or None; a branch that is not the version's says none.
    --imex's and --nvsdm's package names."""
    m = name_re.match(name)
    if not m or (m.group(1) and int(m.group(1)) != branch_of(m.group(2))):
        return None
    return m.group(2)


def version_of_name(name):
    """The IMEX version NVIDIA's file name NAME says, or None: 570.172.08 of
    nvidia-imex-570_570.172.08-1_amd64.deb and of nvidia-imex_580.65.06-1_arm64.deb. A
    branch in the name that is not its version's is no IMEX package of NVIDIA's."""
    return name_version(NAME_RE, name)


def control_version(root):
    """The upstream part of DEBIAN/control's Version in an unpacked package (dpkg-deb -R),
    or None."""
    try:
        with open(os.path.join(root, "DEBIAN/control")) as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"^Version:\s*(?:\d+:)?(\d+\.\d+(?:\.\d+)?)(?:-\S+)?\s*$", text, re.M)
    return m.group(1) if m else None


def unpack(b):
    """--imex's files: a .deb unpacked into the work directory, a tar archive of it too, a
    directory as it is. Returns (its root, the IMEX version it names or None)."""
    given, root = unpack_given(b.imex, "--imex", os.path.join(b.work, "imex"),
                               "NVIDIA's nvidia-imex package",
                               lambda r: find_program(r, PROGRAMS[0]))
    return root, package_version(given, root, NAME_RE)


def package_version(given, root, name_re):
    """The version of a package of NVIDIA's given as GIVEN (unpack_given's resolved path)
    and unpacked at ROOT: what its file name says by NAME_RE (name_version), else, for a
    .deb, its control file's Version (dpkg-deb -f: the control file is not unpacked with
    the data); for a tree or an archive, its directory's name, else DEBIAN/control. None
    when none tells. --imex and --nvsdm."""
    name = os.path.basename(given)
    if os.path.isfile(given) and given.endswith(".deb"):
        try:
            out = subprocess.run(["dpkg-deb", "-f", given, "Version"], capture_output=True,
                                 text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        return name_version(name_re, name) or control_version_text(out)
    return (name_version(name_re, name) or name_version(name_re, os.path.basename(root))
            or control_version(root))


def check_version(given, what, stem, got, version, arch):
    """Refuses the package GIVEN of WHAT ("IMEX", "libnvsdm") unless its version GOT (None:
    nothing told it) is the driver's VERSION, naming the file to take as NVIDIA names it:
    STEM-BRANCH_VERSION-1 before the 580 branch, STEM_VERSION-1 from it, for ARCH.
    --imex and --nvsdm."""
    branch = branch_of(version)
    want = "%s-%d_%s-1" % (stem, branch, version) if branch < 580 else \
        "%s_%s-1" % (stem, version)
    if not got:
        die("the version of %s cannot be told (neither its name nor a DEBIAN/control): pass "
            "the package as NVIDIA names it, %s_%s.deb" % (given, want, ARCHES[arch]["deb"]))
    if got != version:
        die("%s is %s %s, the driver is %s: %s must be the driver's own version; take "
            "%s_%s.deb" % (given, what, got, version, what, want, ARCHES[arch]["deb"]))


def control_version_text(version):
    m = re.match(r"^(?:\d+:)?(\d+\.\d+(?:\.\d+)?)(?:-\S+)?$", version)
    return m.group(1) if m else None


def find_program(root, prog):
    return next((rel for rel in ("%s/%s" % (d, prog) for d in BIN_DIRS)
                 if os.path.isfile(os.path.join(root, rel))), None)


def imex_source(b, version):
    """--imex, checked before anything is built: the driver's branch has IMEX, the package is
    of the driver's own version (NVIDIA versions it as the driver: the daemon works only
    with its own driver), it has both programs, built for --arch. Returns (the programs'
    paths, the configs' paths by name, the version)."""
    branch = branch_of(version)
    if branch is None or branch < FIRST_BRANCH:
        die("--imex: driver %s is of the %s branch, which has no IMEX (NVIDIA ships "
            "nvidia-imex from the %d branch): leave out --imex, or build a %d or later driver"
            % (version, branch, FIRST_BRANCH, FIRST_BRANCH))
    root, imex_version = unpack(b)
    check_version(b.imex, "IMEX", "nvidia-imex", imex_version, version, b.arch)
    programs = []
    for prog in PROGRAMS:
        rel = find_program(root, prog)
        if not rel:
            die("%s has no %s (looked for %s): not NVIDIA's nvidia-imex package" % (
                b.imex, prog, ", ".join("%s/%s" % (d, prog) for d in BIN_DIRS)))
        path = inside(root, rel, b.imex)
        # The programs run on the node (in the compute-domain daemon's container).
        if elf_machine(path) != ARCHES[b.arch]["elf"]:
            die("%s: %s is not an ELF executable for %s: take the nvidia-imex package of the "
                "node's architecture (%s)" % (b.imex, rel, b.arch, ARCHES[b.arch]["deb"]))
        programs.append(path)
    configs = {}
    for c in CONFIGS:
        rel = next((r for r in ("%s/%s" % (d, c) for d in CONFIG_DIRS)
                    if os.path.isfile(os.path.join(root, r))), None)
        if rel:
            configs[c] = inside(root, rel, b.imex)
    return programs, configs, imex_version


def stage_imex(imex, tree):
    """IMEX (imex_source's) into the package: bin/nvidia-imex, bin/nvidia-imex-ctl and
    share/nvidia/imex/. Returns what build-info.json records."""
    programs, configs, version = imex
    os.makedirs(os.path.join(tree, "bin"), exist_ok=True)
    for path, prog in zip(programs, PROGRAMS):
        dst = os.path.join(tree, "bin", prog)
        unpack_confined.copy_out(os.path.dirname(path), path, dst)
        os.chmod(dst, 0o755)
    if configs:
        share = os.path.join(tree, "share/nvidia/imex")
        os.makedirs(share, exist_ok=True)
        for name, path in sorted(configs.items()):
            unpack_confined.copy_out(os.path.dirname(path), path, os.path.join(share, name))
    say("IMEX %s packed: bin/nvidia-imex, bin/nvidia-imex-ctl%s" % (
        version, ", share/nvidia/imex/ (%s)" % ", ".join(sorted(configs)) if configs
        else " (no config.cfg or nodes_config.cfg in it)"))
    return {"version": version}
