#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unpacks the archives a build machine takes, confined to one directory.

  unpack_confined.py tar|rpm ARCHIVE DIR     (DIR made anew)
  unpack_confined.py deb ARCHIVE DIR         (into DIR as it is, as dpkg -x does)

The build tools (build-driver-package, fetch-cos-artifacts, fetch-debian-kernel) take
archives from outside: a kernel-devel RPM, Debian's and Canonical's .deb files, COS's
kernel-headers.tgz and toolchain, NVIDIA's Fabric Manager and nvlsm archives, Google's
signature bundle. Each is unpacked here, never by tar, cpio or dpkg-deb -x, member by
member, into DIR and nowhere else:

  * regular files, directories and symbolic links only: a device node, a FIFO, a socket
    refuses the archive;
  * no set-id or sticky bit, no group or world write: modes are cut to 0755 (files keep
    their execute bits), owners are the unpacking user's;
  * names are relative and without '..'; every directory on the way is opened without
    following a link (O_NOFOLLOW), so nothing is written through a link, one of the
    archive's or one already in DIR: a member under a link refuses the archive;
  * a link is judged by where it resolves: one whose target climbs out of DIR refuses
    the archive; an absolute one means the archive's own root (as dpkg and rpm install
    it under a root) and is written relative, so that it resolves inside DIR; after the
    last member every link in DIR is resolved once more, as the kernel will, and one
    that leaves DIR refuses the archive;
  * a hard link must name a regular file the archive put in DIR before it.

A refused archive leaves nothing: DIR is removed. Files are read out of an unpacked tree
with inside(), which resolves the path and refuses one that leads out. The cpio archive
of an RPM (rpm2cpio's "newc") is read here too.
"""
import errno
import gzip
import lzma
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import zlib

CHUNK = 1 << 20
NEWC_MAGIC = (b"070701", b"070702")
NEWC_FIELDS = ("ino", "mode", "uid", "gid", "nlink", "mtime", "filesize", "devmajor",
               "devminor", "rdevmajor", "rdevminor", "namesize", "check")
KINDS = {stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
         stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}


class Refused(Exception):
    """An archive or tree that would reach outside its directory: one line, naming it and,
    with HINT, what to do."""

    def __init__(self, msg, hint=True):
        super().__init__(msg + (" (take it again from its publisher)" if hint else ""))


def safe_mode(mode, is_dir):
    """MODE without set-id, sticky or group/world write bits; the owner may always read
    and write (and enter a directory)."""
    return (mode & 0o755) | (0o700 if is_dir else 0o600)


def member_parts(name, what):
    """NAME's components: relative, without '..', without empty or '.' parts."""
    if "\0" in name:
        raise Refused("%s: member %r has a NUL byte in its name: refused" % (what, name))
    if name.startswith("/"):
        raise Refused("%s: member %s is an absolute path: refused" % (what, name))
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Refused("%s: member %s climbs out with '..': refused" % (what, name))
    return parts


def contained_target(parts, target, what):
    """The link target, relative, that the link PARTS (its components in DIR) with TARGET
    means when DIR is the archive's root; refused when it climbs out of DIR."""
    absolute = target.startswith("/")
    # An absolute target means the archive's root, as a package manager installs it.
    where = [] if absolute else list(parts[:-1])
    for p in (p for p in target.split("/") if p not in ("", ".")):
        if p != "..":
            where.append(p)
        elif where:
            where.pop()
        else:
            raise Refused("%s: member %s is a link out of the archive (to %s): refused" % (
                what, "/".join(parts), target))
    if not absolute:
        return target
    # From the link's directory up to DIR, then down: it resolves inside DIR.
    return "/".join([".."] * (len(parts) - 1) + where) or "."


class Writer:
    """Writes members into DIR, each directory on the way opened without following links."""

    def __init__(self, dest, what):
        self.dest = dest
        self.what = what
        self.root = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self.dirs = []  # (parts, mode): directory modes are set at the end

    def close(self):
        os.close(self.root)

    def parent(self, parts):
        """An fd of the directory PARTS[:-1] under DIR, made where missing."""
        fd = os.dup(self.root)
        try:
            for i, p in enumerate(parts[:-1]):
                try:
                    nfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    os.mkdir(p, 0o755, dir_fd=fd)
                    nfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as e:
                    if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    raise Refused("%s: member %s lies under %s, which is a link or not a "
                                  "directory: nothing is written through it; refused" % (
                                      self.what, "/".join(parts), "/".join(parts[:i + 1])))
                os.close(fd)
                fd = nfd
            return fd
        except BaseException:
            os.close(fd)
            raise

    def clear(self, fd, name, parts, keep_dir=False):
        """Removes NAME in FD unless it is a directory (kept with KEEP_DIR, else refused)."""
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(st.st_mode):
            if keep_dir:
                return True
            raise Refused("%s: member %s would replace a directory: refused" % (
                self.what, "/".join(parts)))
        os.unlink(name, dir_fd=fd)
        return False

    def directory(self, parts, mode):
        fd = self.parent(parts)
        try:
            if not self.clear(fd, parts[-1], parts, keep_dir=True):
                os.mkdir(parts[-1], 0o700, dir_fd=fd)
        finally:
            os.close(fd)
        self.dirs.append((parts, safe_mode(mode, True)))

    def regular(self, parts, mode, mtime, src, size):
        fd = self.parent(parts)
        try:
            self.clear(fd, parts[-1], parts)
            out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                          0o600, dir_fd=fd)
        finally:
            os.close(fd)
        try:
            left = size
            while left > 0:
                chunk = src.read(min(CHUNK, left))
                if not chunk:
                    raise Refused("%s: member %s is cut short: refused" % (
                        self.what, "/".join(parts)))
                os.write(out, chunk)
                left -= len(chunk)
            os.fchmod(out, safe_mode(mode, False))
            os.utime(out, (mtime, mtime))
        finally:
            os.close(out)

    def symlink(self, parts, target, mtime):
        if not target:
            raise Refused("%s: member %s is a link to nothing: refused" % (
                self.what, "/".join(parts)))
        rel = contained_target(parts, target, self.what)
        fd = self.parent(parts)
        try:
            self.clear(fd, parts[-1], parts)
            os.symlink(rel, parts[-1], dir_fd=fd)
            os.utime(parts[-1], (mtime, mtime), dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)

    def hardlink(self, parts, target_name):
        tparts = member_parts(target_name, self.what)
        sfd = self.parent(tparts)
        try:
            try:
                st = os.stat(tparts[-1], dir_fd=sfd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            if not st or not stat.S_ISREG(st.st_mode):
                raise Refused("%s: member %s is a hard link to %s, not a regular file the "
                              "archive holds before it: refused" % (
                                  self.what, "/".join(parts), target_name))
            dfd = self.parent(parts)
            try:
                self.clear(dfd, parts[-1], parts)
                os.link(tparts[-1], parts[-1], src_dir_fd=sfd, dst_dir_fd=dfd,
                        follow_symlinks=False)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)

    def finish(self):
        """Directory modes, deepest first; then every link in DIR resolved as the kernel
        will: one that leads out refuses the archive."""
        for parts, mode in sorted(self.dirs, key=lambda d: -len(d[0])):
            pfd = self.parent(parts)
            try:
                dfd = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                              dir_fd=pfd)
            finally:
                os.close(pfd)
            os.fchmod(dfd, mode)
            os.close(dfd)
        check_links(self.dest, self.what)


def check_links(top, what):
    """Refuses TOP when a link in it resolves outside it."""
    real_top = os.path.realpath(top)
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            if os.path.islink(p) and not is_within(os.path.realpath(p), real_top):
                raise Refused("%s: %s is a link out of the archive (to %s): refused" % (
                    what, os.path.relpath(p, top), os.readlink(p)))


def is_within(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def confined(dest, what, fill, fresh=True):
    """Runs FILL(writer) into DEST, made empty first unless FRESH is false (several packages
    into one root, as dpkg does); on any failure DEST is removed."""
    if fresh:
        shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest, exist_ok=not fresh)
    w = Writer(dest, what)
    try:
        fill(w)
        w.finish()
    except BaseException:
        w.close()
        shutil.rmtree(dest, ignore_errors=True)
        raise
    w.close()


def tar_members(fileobj, what, skip, w):
    try:
        with tarfile.open(fileobj=fileobj, mode="r|*") as t:
            for m in t:
                parts = member_parts(m.name, what)
                if not parts or (skip and skip("/".join(parts))):
                    continue
                mtime = int(m.mtime) if m.mtime else 0
                if m.isdir():
                    w.directory(parts, m.mode)
                elif m.isreg():
                    src = t.extractfile(m)
                    w.regular(parts, m.mode, mtime, src, m.size)
                elif m.issym():
                    w.symlink(parts, m.linkname, mtime)
                elif m.islnk():
                    w.hardlink(parts, m.linkname)
                else:
                    kind = {tarfile.CHRTYPE: "a character device", tarfile.BLKTYPE:
                            "a block device", tarfile.FIFOTYPE: "a FIFO"}.get(
                                m.type, "of tar type %r" % m.type)
                    raise Refused("%s: member %s is %s: refused" % (
                        what, "/".join(parts), kind))
    except (tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile) as e:
        raise Refused("%s is not a readable tar archive (%s)" % (what, e))


def unpack_tar(archive, dest, what=None, skip=None):
    """Unpacks the tar ARCHIVE (a path; gzip, bzip2 or xz) into DEST, confined. SKIP, a
    function of a member's relative name, leaves out those it is true for."""
    what = what or os.path.basename(archive)
    with open(archive, "rb") as f:
        confined(dest, what, lambda w: tar_members(f, what, skip, w))


def piped(cmd, what, reader):
    """Runs CMD and READER(its stdout); refuses when CMD fails."""
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise Refused("%s is not installed" % cmd[0], hint=False)
    try:
        reader(p.stdout)
        rest = p.stdout.read()
    except BaseException:
        p.kill()
        p.communicate()
        raise
    err = p.communicate()[1]
    if p.returncode != 0:
        raise Refused("%s: %s failed (exit %d): %s" % (
            what, cmd[0], p.returncode, err.decode(errors="replace").strip()[:300]))
    if rest.strip(b"\0"):
        raise Refused("%s: %d bytes follow the end of its archive: refused" % (what, len(rest)))


def unpack_deb(deb, dest, what=None, fresh=True):
    """Unpacks the .deb DEB's files (dpkg-deb --fsys-tarfile) into DEST, confined."""
    what = what or os.path.basename(deb)
    confined(dest, what, lambda w: piped(["dpkg-deb", "--fsys-tarfile", deb], what,
                                         lambda f: tar_members(f, what, None, w)), fresh)


def unpack_deb_into(deb, dest, what=None):
    """As unpack_deb, into DEST as it is (several packages into one root, as dpkg does);
    a refused package removes DEST."""
    unpack_deb(deb, dest, what, fresh=False)


def read_exact(f, n, what):
    data = b""
    while len(data) < n:
        chunk = f.read(n - len(data))
        if not chunk:
            raise Refused("%s: the cpio archive is cut short" % what)
        data += chunk
    return data


def newc_members(f, what, w):
    """Reads a cpio "newc" archive (rpm2cpio's) from F into W."""
    pending = {}  # ino -> names of hard links whose data comes with a later one
    written = {}  # ino -> the name its data went to
    while True:
        head = read_exact(f, 110, what)
        if head[:6] not in NEWC_MAGIC:
            raise Refused("%s: not a cpio newc archive (magic %r)" % (what, head[:6]))
        try:
            h = {k: int(head[6 + 8 * i:14 + 8 * i], 16) for i, k in enumerate(NEWC_FIELDS)}
        except ValueError:
            raise Refused("%s: a cpio header that is not hexadecimal" % what)
        if not 1 < h["namesize"] <= 4096:
            raise Refused("%s: a cpio member name of %d bytes" % (what, h["namesize"]))
        name = read_exact(f, h["namesize"], what).rstrip(b"\0").decode("utf-8", "surrogateescape")
        read_exact(f, (-(110 + h["namesize"])) % 4, what)
        size = h["filesize"]
        if name == "TRAILER!!!":
            for names in pending.values():
                for parts, mode, mtime in names:
                    w.regular(parts, mode, mtime, None, 0)
            return
        parts = member_parts(name, what)
        mode, mtime = h["mode"], h["mtime"]
        kind = stat.S_IFMT(mode)
        if kind in KINDS:
            raise Refused("%s: member %s is %s: refused" % (what, "/".join(parts), KINDS[kind]))
        if not parts:
            read_exact(f, size + (-size) % 4, what)
            continue
        if kind == stat.S_IFDIR:
            w.directory(parts, mode)
        elif kind == stat.S_IFLNK:
            w.symlink(parts, read_exact(f, size, what).decode("utf-8", "surrogateescape"),
                      mtime)
        elif kind == stat.S_IFREG and h["nlink"] > 1 and size == 0:
            if h["ino"] in written:
                w.hardlink(parts, written[h["ino"]])
            else:
                pending.setdefault(h["ino"], []).append((parts, mode, mtime))
        elif kind == stat.S_IFREG:
            w.regular(parts, mode, mtime, f, size)
            if h["nlink"] > 1:
                written[h["ino"]] = "/".join(parts)
                for other, _, _ in pending.pop(h["ino"], []):
                    w.hardlink(other, written[h["ino"]])
        else:
            raise Refused("%s: member %s is of cpio type %o: refused" % (
                what, "/".join(parts), kind))
        read_exact(f, (-size) % 4, what)


def unpack_rpm(rpm, dest, what=None):
    """Unpacks the RPM's payload (rpm2cpio, no RPM database) into DEST, confined."""
    what = what or os.path.basename(rpm)
    confined(dest, what, lambda w: piped(["rpm2cpio", rpm], what,
                                         lambda f: newc_members(f, what, w)))


def inside(top, path, what=None):
    """PATH (under TOP, or relative to it) resolved: refused when a link takes it out of
    TOP, or to something TOP does not hold. Returns the resolved path."""
    full = path if os.path.isabs(path) else os.path.join(top, path)
    real_top = os.path.realpath(top)
    real = os.path.realpath(full)
    rel = os.path.relpath(full, top)
    what = what or top
    if not is_within(real, real_top):
        raise Refused("%s in %s is a link out of it (to %s): refused" % (rel, what, real))
    if not os.path.exists(real) and real == os.path.join(real_top, rel):
        raise Refused("%s is not in %s" % (rel, what), hint=False)
    if not os.path.exists(real):
        raise Refused("%s in %s is a link to %s, which is not in it: refused" % (
            rel, what, "/" + os.path.relpath(real, real_top)))
    return real


def copy_out(top, path, dst, what=None):
    """Copies the regular file PATH of TOP (resolved with inside()) to DST, its mode kept
    as safe_mode gives it."""
    real = inside(top, path, what)
    shutil.copyfile(real, dst)
    os.chmod(dst, safe_mode(os.stat(real).st_mode, False))
    return dst


def copy_dir_out(top, path, dst, what=None):
    """Copies the regular files of the directory PATH of TOP (and its subdirectories),
    each resolved with inside(), to DST."""
    real = inside(top, path, what)
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(real)):
        p = os.path.join(real, name)
        src = inside(top, p, what)
        if os.path.isdir(src):
            copy_dir_out(top, p, os.path.join(dst, name), what)
        elif os.path.isfile(src):
            copy_out(top, p, os.path.join(dst, name), what)


def main(argv):
    kinds = {"tar": unpack_tar, "deb": unpack_deb_into, "rpm": unpack_rpm}
    if len(argv) != 4 or argv[1] not in kinds:
        sys.stderr.write("usage: unpack_confined.py tar|deb|rpm ARCHIVE DIR\n")
        return 2
    try:
        kinds[argv[1]](argv[2], argv[3])
    except Refused as e:
        sys.stderr.write("unpack_confined: %s\n" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
