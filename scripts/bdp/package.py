# SPDX-License-Identifier: Apache-2.0
"""One flavour's package, built, signed, checked and packed (build_flavour), then staged
for make-repo publish (stage) and, without --stage-to, published to the repository's
signed index (publish_all)."""
import json
import os
import shutil

import privkey
from bdp import gpudirect, imex, media, nvsdm, sources, userspace
from bdp.common import HERE, modinfo, progress, run, say


def build_flavours(b, ktree):
    """The driver staged (sources.stage), every flavour's GPUs established before anything
    is built, then one package per flavour. Returns (version, the packages built)."""
    src, version, ids_origin = sources.stage(b)
    names = sources.pci_names(b.pci_names)
    gpus = {fl.name: sources.flavour_gpus(fl, src, version, names, ids_origin)
            for fl in b.flavours}
    # --gdrcopy/--gds: their trees and the driver's nv-p2p.h checked once, before any build.
    gpudirect_srcs = gpudirect.prepare(b, ktree)
    if gpudirect_srcs:
        gpudirect.check_source(src)
    return version, [build_flavour(b, fl, src, version, ktree, gpus[fl.name],
                                   gpudirect_srcs) for fl in b.flavours]


def build_flavour(b, fl, src, version, ktree, gpus, gpudirect_srcs):
    """Builds, signs, checks and packs flavour FL's package (the driver's files in SRC, the
    kernel's side in KTREE, the GPUs it supports in GPUS); publishes nothing."""
    fabric_src = userspace.fabricmanager_source(b, version) if b.fabricmanager else None
    nvlsm_src = userspace.nvlsm_source(b) if b.nvlsm else None
    imex_src = imex.imex_source(b, version) if b.imex else None
    nvsdm_src = nvsdm.nvsdm_source(b, version) if b.nvsdm else None
    mods = b.platform.modules(b, fl, src, version, ktree)
    progress("%d modules of %s: %s" % (len(mods), version, ", ".join(sorted(mods)) or "none"))
    tree = os.path.join(b.work, "tree-%s-%s-%s" % (version, fl.name, b.kernel))
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tree)
    kos, signer = b.platform.sign(b, fl, mods, version, ktree, os.path.join(tree, "kernel"))
    platform = platform_params(b, fl.params, kos)
    if platform:
        say("  the platform's defaults (%s): %s (--no-platform-params leaves them out)" % (
            b.arch, " ".join(platform)))
    params = module_params_file(list(fl.params) + platform, os.path.join(tree, "kernel"))
    progress("collecting the user space of %s" % version)
    libs, tools, fw = userspace.collect_userspace(b, src, version, tree)
    media_libs, media_files = media.collect(b, src, version, tree, b.capabilities,
                                            userspace.take_library)
    libs += media_libs
    fabric = userspace.stage_fabricmanager(fabric_src, tree) if fabric_src else None
    nvlsm = userspace.stage_nvlsm(nvlsm_src, tree) if nvlsm_src else None
    imex_info = imex.stage_imex(imex_src, tree) if imex_src else None
    nvsdm_info = nvsdm.stage_nvsdm(nvsdm_src, tree) if nvsdm_src else None
    gd_kos, gdrcopy, gds = gpudirect.build_and_sign(b, fl, gpudirect_srcs, mods, ktree,
                                                    os.path.join(tree, "kernel"), tree)
    kos = kos + gd_kos
    if not fw:
        say("warning: no GSP firmware in the source; GPUs that need it will not initialise")

    ids = None
    if gpus["ids"]:
        ids = os.path.join(b.work, "pci-ids-" + fl.name)
        with open(ids, "w") as f:
            f.write("".join("%s%s\n" % (i, " " + n if n else "")
                            for i, n in sorted(gpus["ids"].items())))

    os.makedirs(os.path.join(tree, "share/nvidia"), exist_ok=True)
    info = {"version": version, "kernel": b.kernel, "arch": b.arch,
            "flavour": fl.name, "modules": [os.path.basename(k) for k in kos],
            "libraries": libs, "tools": tools, "firmware": fw, "fabricmanager": fabric,
            "nvlsm": nvlsm, "imex": imex_info, "nvsdm": nvsdm_info,
            "capabilities": list(b.capabilities), "capability_files": media_files,
            "module_params": params, "platform_params": platform,
            "gdrcopy": gdrcopy, "gds": gds,
            "signer_cert_sha256": signer["sha256"], "signer": signer,
            "signatures": "ours" if b.sign_key else "kept",
            "source": b.platform.source_kind(b),
            "patches": [os.path.basename(p) for p in fl.patches],
            "prebuilt_modules": bool(fl.prebuilt),
            "supported_gpus": {"source": gpus["source"],
                               "count": len(gpus["ids"]) if gpus["ids"] else None}}
    if ktree.toolchain:
        info["toolchain"] = ktree.toolchain
    info.update(b.platform.build_info(b))
    with open(os.path.join(tree, "share/nvidia/build-info.json"), "w") as f:
        json.dump(info, f, indent=2, sort_keys=True)
        f.write("\n")

    pkg = os.path.join(b.work, "nvidia-%s-%s-%s.tar.zst" % (version, fl.name, b.kernel))
    progress("packing %s" % os.path.basename(pkg))
    run([os.path.join(HERE, "make-repo"), "pack", tree, pkg])
    shutil.rmtree(tree)
    return {"flavour": fl.name, "pkg": pkg, "signer": signer, "ids": ids,
            "explicit_ids": fl.pci_ids is not None,
            "summary": "%d modules, %d libraries, %s, %d firmware files" % (
                len(kos), len(libs), ", ".join(tools), len(fw))}


# What NVIDIA requires on a platform, given as the package's default module parameters
# where the driver has the parameter (docs/building-packages.md, "Grace"): on arm64, where
# the coherent (NVLink-C2C) platforms are, the coherent driver memory management of R580 and
# later (nv-reg.h's CoherentGPUMemoryMode; "driver": GPU memory is not onlined to the OS as
# a NUMA node, which Kubernetes would count as the node's memory). (arch, module, key, value)
PLATFORM_PARAMS = [("aarch64", "nvidia", "NVreg_CoherentGPUMemoryMode", "driver")]


def platform_params(b, given_params, kos):
    """The PLATFORM_PARAMS that apply to this build: its --arch, a module of the package
    that takes the parameter (modinfo's parmtype), and no --module-param for the same
    MODULE.KEY. Returns them as MODULE.KEY=VALUE."""
    if b.no_platform_params:
        return []
    given = {p.split("=", 1)[0].replace("-", "_") for p in given_params}
    out = []
    for arch, module, key, value in PLATFORM_PARAMS:
        ko = [k for k in kos if os.path.basename(k) == module + ".ko"]
        if arch != b.arch or not ko or "%s.%s" % (module, key) in given:
            continue
        if any(t.split(":")[0] == key for t in modinfo(ko[0], "parmtype").splitlines()):
            out.append("%s.%s=%s" % (module, key, value))
    return out


def module_params_file(params, kdir):
    """--module-param: the package's default module parameters PARAMS, as the installer reads
    them (kernel/module-params.conf, modprobe.d's "options MODULE KEY=VALUE..." lines, one
    per module in the order first given). Returns the list, as given."""
    if not params:
        return []
    by_module = {}
    for p in params:
        module, kv = p.split(".", 1)
        by_module.setdefault(module.replace("-", "_"), []).append(kv)
    with open(os.path.join(kdir, "module-params.conf"), "w") as f:
        f.write("# Default module parameters of this package (build-driver-package "
                "--module-param);\n# a node's --module-arg for the same MODULE.KEY replaces "
                "one.\n")
        for module, kvs in by_module.items():
            f.write("options %s %s\n" % (module, " ".join(kvs)))
    say("  default module parameters: %s" % " ".join(params))
    return list(params)


def stage(b, version, built, dest):
    """One flavour's package into the stage directory DEST: its file, and its record in
    DEST/stage.json (make-repo stage; docs/repository-format.md, "Staged builds")."""
    cmd = [os.path.join(HERE, "make-repo"), "stage", "--to", dest,
           "--version", version, "--kernel", b.kernel, "--arch", b.arch,
           "--module-type", built["flavour"], built["pkg"]]
    for t in b.tags:
        cmd += ["--tag", t]
    signer = built["signer"]
    for opt, val in (("--os", b.os), ("--os-build", b.os_build),
                     ("--supported-pci-ids", built["ids"]), ("--repository", b.repository),
                     ("--signer-subject", signer["subject"]),
                     ("--signer-key-id", signer["key_id"]), ("--signer-sha256", signer["sha256"])):
        if val:
            cmd += [opt, val]
    return run(cmd).strip()


def added(rel, built):
    say("added %s (%d MiB, %s modules): %s%s" % (
        rel, os.path.getsize(built["pkg"]) >> 20, built["flavour"], built["summary"],
        ", supported PCI ids from the source" if built["ids"] and not built["explicit_ids"]
        else ""))


def publish_all(b, version, built):
    """Every flavour's package staged, in --stage-to for make-repo publish, or in the work
    directory and published from there to --repo: the packages first, then one signed
    index update under the repository's lock (make-repo publish, the same code)."""
    dest = b.stage_to or os.path.join(b.work, "stage")
    if not b.stage_to:
        shutil.rmtree(dest, ignore_errors=True)
    progress("staging %d package(s) in %s" % (len(built), dest))
    rels = [stage(b, version, pkg, dest) for pkg in built]
    if b.stage_to:
        for rel in rels:
            say("staged %s in %s" % (rel, dest))
        say("publish with: make-repo publish --repo DIR --key KEY.pem|pkcs11:URI %s" % dest)
        return
    progress("adding %s to %s and signing the index" % ("it" if len(built) == 1 else "them",
                                                         b.repo))
    cmd = [os.path.join(HERE, "make-repo"), "publish", "--repo", b.repo, "--key", b.repo_key,
           dest]
    if b.repository:
        cmd[2:2] = ["--repository", b.repository]
    out = run(cmd, env=privkey.child_env()).split()  # $NVIDIA_PKCS11_PIN for --repo-key
    for rel, pkg in zip(out[-len(built):], built):
        added(rel, pkg)
    say("repository %s re-signed" % b.repo)
