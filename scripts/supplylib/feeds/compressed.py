# SPDX-License-Identifier: Apache-2.0
"""Indexes as mirrors serve them compressed (Packages.xz, Packages.gz, primary.xml.gz,
.xz, .bz2, .zst), decompressed with a bound on the result: a truncated stream, bytes after its
end, damaged data or a bomb (more than LIMIT bytes out) is refused in one line."""
import bz2
import lzma
import shutil
import subprocess
import tempfile
import zlib

from .image import FeedError

DEFAULT_LIMIT = 1 << 30     # RHEL's AppStream primary.xml is some 100 MiB


def decompress(data, name, where, limit=DEFAULT_LIMIT):
    """DATA, the file NAME (its suffix says the format) read from WHERE, decompressed."""
    if name.endswith(".zst"):
        return _zstd(data, where, limit)
    if name.endswith(".xz"):
        obj, kind, err = lzma.LZMADecompressor(format=lzma.FORMAT_XZ), "xz", lzma.LZMAError
    elif name.endswith(".bz2"):
        obj, kind, err = bz2.BZ2Decompressor(), "bzip2", OSError
    elif name.endswith(".gz"):
        obj, kind, err = zlib.decompressobj(16 + zlib.MAX_WBITS), "gzip", zlib.error
    else:
        return data
    try:
        out = obj.decompress(data, limit + 1)
    except (err, EOFError) as e:
        raise FeedError("%s is not valid %s data (%s): refused" % (where, kind, e)) from None
    if len(out) > limit:
        raise FeedError("%s decompresses to more than %d bytes: refused (a damaged or hostile "
                        "file)" % (where, limit))
    if not obj.eof:
        raise FeedError("%s is truncated: its %s stream ends before its end marker (a "
                        "transfer cut short)" % (where, kind))
    if obj.unused_data:
        raise FeedError("%s has %d bytes after its %s stream: refused" % (
            where, len(obj.unused_data), kind))
    return out


def _zstd(data, where, limit):
    """Python's standard library reads no zstd before 3.14: the zstd command does."""
    if not shutil.which("zstd"):
        raise FeedError("%s is zstd-compressed and this machine has no zstd: apt-get install "
                        "zstd" % where)
    with tempfile.TemporaryFile() as src:
        src.write(data)
        src.seek(0)
        p = subprocess.Popen(["zstd", "-q", "-d", "-c"], stdin=src, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        out = p.stdout.read(limit + 1)
        if len(out) > limit:
            p.kill()
            p.wait()
            raise FeedError("%s decompresses to more than %d bytes: refused (a damaged or "
                            "hostile file)" % (where, limit))
        err = p.stderr.read().decode("utf-8", "replace").strip().splitlines()
        if p.wait() != 0:
            raise FeedError("%s is not valid zstd data (%s): refused" % (
                where, err[-1] if err else "zstd failed"))
    return out
