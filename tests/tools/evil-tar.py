#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a driver package tar (uncompressed, to stdout) with one hostile member.

  evil-tar.py KIND > pkg.tar

Each KIND starts from a small valid tree (lib64/libcuda.so.1, bin/nvidia-smi, and the
directory link share/libs -> ../lib64) and adds:
  traversal       lib64/../../evil            (a '..' that leaves the package)
  absolute        /tmp/evil-absolute           (an absolute path)
  symlink-escape  lib64/up -> ../../..         (a link out of the package)
  symlink-abs     lib64/passwd -> /etc/passwd  (an absolute link)
  symlink-dotdot  lib64/sub/x -> lib64/../..   (a '..' after a name)
  through-link    bin/l -> ../lib64, then bin/l/injected (a write through a link)
  device          lib64/null, a character device
  fifo            lib64/fifo
  hardlink        lib64/hard, a hard link to lib64/libcuda.so.1
  dangling        lib64/libfoo.so -> libfoo.so.1 (the target is missing)
  unknown-top     etc/evil (outside the allowed top-level directories)
  duplicate       lib64/libcuda.so.1 twice
  control-char    lib64/lib<ESC>cuda.so (a control character in a name)
  setuid          bin/nvidia-smi with mode 4755
  setgid          bin/nvidia-smi with mode 2755
  huge-entry      firmware/big.bin, sparse, 5 GiB long (over the 4 GiB a member may be)
  bomb-total      firmware/f1..f6.bin, sparse, 3 GiB each (over the 16 GiB in all)
  xattr-user      firmware/gsp.bin with a user.foo extended attribute (a pax SCHILY.xattr record)
  xattr-capability bin/nvidia-smi with security.capability (file capabilities)
  xattr-ima-bin   bin/nvidia-smi with a well-formed security.ima (only firmware/, kernel/ may)
  xattr-ima-big   firmware/gsp.bin with a security.ima of 1025 bytes (the limit is 1024)
  xattr-ima-type  firmware/gsp.bin with a security.ima that is a PKCS#7 blob, not an IMA value
  world-writable  bin/nvidia-smi with mode 0777 (allowed: the mode is normalised)
  valid           nothing more
The sparse kinds are written by GNU tar (--sparse): a few KiB of archive that would
unpack to gigabytes of holes.
"""
import io
import os
import subprocess
import sys
import tarfile
import tempfile


def add_file(tar, name, data=b"x", mode=0o755, xattrs=None):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    if xattrs:
        # Raw bytes in a pax record, as tar --xattrs writes them.
        info.pax_headers = {"SCHILY.xattr." + k: v.decode("utf-8", "surrogateescape")
                            for k, v in xattrs.items()}
    tar.addfile(info, io.BytesIO(data))


def add_special(tar, name, kind, target=None):
    info = tarfile.TarInfo(name)
    info.type = kind
    if target is not None:
        info.linkname = target
    if kind == tarfile.CHRTYPE:
        info.devmajor, info.devminor = 1, 3
    tar.addfile(info)


def sparse(sizes):
    """The valid tree plus sparse files of SIZES bytes, archived by GNU tar."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "lib64"))
        os.makedirs(os.path.join(d, "bin"))
        os.makedirs(os.path.join(d, "firmware"))
        with open(os.path.join(d, "lib64/libcuda.so.1"), "wb") as f:
            f.write(b"\x7fELF stand-in")
        for i, size in enumerate(sizes):
            with open(os.path.join(d, "firmware/f%d.bin" % i), "wb") as f:
                f.write(b"data")
                f.truncate(size)
        return subprocess.run(["tar", "-C", d, "--sparse", "--format=pax", "--owner=0",
                               "--group=0", "-cf", "-", "lib64", "firmware"],
                              check=True, stdout=subprocess.PIPE).stdout


def main():
    kind = sys.argv[1]
    if kind == "huge-entry":
        sys.stdout.buffer.write(sparse([5 << 30]))
        return
    if kind == "bomb-total":
        sys.stdout.buffer.write(sparse([3 << 30] * 6))
        return
    out = io.BytesIO()
    ima = bytes([3, 2, 4, 1, 2, 3, 4, 0, 4]) + b"\xffsig"
    smi_xattrs = {"xattr-capability": {"security.capability": b"\x01\x00\x00\x02" + bytes(16)},
                  "xattr-ima-bin": {"security.ima": ima}}.get(kind)
    fw_xattrs = {"xattr-user": {"user.foo": b"bar"},
                 "xattr-ima-big": {"security.ima": bytes([3]) * 1025},
                 "xattr-ima-type": {"security.ima": b"\x30\x82\x01\x00"}}.get(kind)
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8",
                      errors="surrogateescape") as tar:
        add_file(tar, "lib64/libcuda.so.1", b"\x7fELF stand-in")
        smi_mode = {"setuid": 0o4755, "setgid": 0o2755, "world-writable": 0o777}.get(kind, 0o755)
        add_file(tar, "bin/nvidia-smi", b"#!/bin/sh\necho stand-in\n", smi_mode, smi_xattrs)
        if fw_xattrs:
            add_file(tar, "firmware/gsp.bin", b"firmware", 0o644, fw_xattrs)
        add_special(tar, "share/libs", tarfile.SYMTYPE, "../lib64")  # a link to a directory
        if kind == "traversal":
            add_file(tar, "lib64/../../evil")
        elif kind == "absolute":
            add_file(tar, "/tmp/evil-absolute")
        elif kind == "symlink-escape":
            add_special(tar, "lib64/up", tarfile.SYMTYPE, "../../..")
        elif kind == "symlink-abs":
            add_special(tar, "lib64/passwd", tarfile.SYMTYPE, "/etc/passwd")
        elif kind == "symlink-dotdot":
            add_special(tar, "lib64/sub/x", tarfile.SYMTYPE, "lib64/../..")
        elif kind == "through-link":
            add_special(tar, "bin/l", tarfile.SYMTYPE, "../lib64")
            add_file(tar, "bin/l/injected")
        elif kind == "device":
            add_special(tar, "lib64/null", tarfile.CHRTYPE)
        elif kind == "fifo":
            add_special(tar, "lib64/fifo", tarfile.FIFOTYPE)
        elif kind == "hardlink":
            add_special(tar, "lib64/hard", tarfile.LNKTYPE, "lib64/libcuda.so.1")
        elif kind == "dangling":
            add_special(tar, "lib64/libfoo.so", tarfile.SYMTYPE, "libfoo.so.1")
        elif kind == "unknown-top":
            add_file(tar, "etc/evil")
        elif kind == "duplicate":
            add_file(tar, "lib64/libcuda.so.1", b"second copy")
        elif kind == "control-char":
            add_file(tar, "lib64/lib\x1bcuda.so")
        elif kind not in ("setuid", "setgid", "world-writable", "valid") and \
                not kind.startswith("xattr-"):
            sys.exit("unknown kind %r" % kind)
    sys.stdout.buffer.write(out.getvalue())


if __name__ == "__main__":
    main()
