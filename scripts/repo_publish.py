# SPDX-License-Identifier: Apache-2.0
"""How make-repo changes a repository's files so that no reader ever sees half a change and
a process killed at any point leaves the previous index served (docs/repository-format.md,
"Publishing"): packages placed first under names no index uses for other bytes, never over
a file; then, under one lock, the index and its signature written as a new generation and
switched by one rename of one link, which both of the served names go through:

  BASE/index.json          -> index.gen/current/index.json       (links made once)
  BASE/index.json.sig      -> index.gen/current/index.json.sig
  BASE/index.gen/current   -> g-STAMP-XXXXXXXX                   (the one rename)
  BASE/index.gen/g-STAMP-XXXXXXXX/index.json, index.json.sig     (a generation)

The temporary files of a pass are named .publish-*.tmp and held by the pass with flock(2)
while they exist: a pass that finds one it can lock finds one whose pass died, and removes
it. Generations other than the current one are removed under the lock. A package a killed
pass placed but never indexed is left where it is: the next pass of the same bytes takes it
as it is, and one of other bytes takes another name.

For the tests (tests/scripts/test_publish.py), MAKE_REPO_CRASH_AT=STEP kills the process
with SIGKILL at that step (STEPS; step() says how), and MAKE_REPO_STOP_AT=STEP stops it there
(SIGSTOP) until the test lets it go on: a publish killed at every step, two made to meet.
"""
import contextlib
import errno
import fcntl
import hashlib
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import time

INDEX, SIG = "index.json", "index.json.sig"
GENERATIONS = "index.gen"
CURRENT = "current"
TEMP_PREFIX, TEMP_SUFFIX = ".publish-", ".tmp"
TEMP_RE = re.compile(r"^\.publish-[A-Za-z0-9_]+\.tmp$")
GENERATION_RE = re.compile(r"^g-[0-9]{8}T[0-9]{12}Z-[A-Za-z0-9_]+$")
STEPS = ("package-copied", "package-placed", "locked", "merged", "migrated-generation",
         "migrated-sig", "migrated-index", "generation-written", "generation-signed",
         "link-made", "switched")


class Failure(Exception):
    """A publish that cannot go on: one line naming the cause and the fix (exit 1)."""


_SEEN = {}


def step(name):
    """The tests' hook at step NAME, the Nth time this process reaches it: SIGKILL when
    MAKE_REPO_CRASH_AT is NAME#N (or NAME, the first time), SIGSTOP when MAKE_REPO_STOP_AT
    is; MAKE_REPO_STEPS=FILE has each step reached appended to FILE as NAME#N."""
    assert name in STEPS, name
    _SEEN[name] = n = _SEEN.get(name, 0) + 1
    here = ("%s#%d" % (name, n),) + ((name,) if n == 1 else ())
    if os.environ.get("MAKE_REPO_STEPS"):
        with open(os.environ["MAKE_REPO_STEPS"], "a") as f:
            f.write(here[0] + "\n")
    if os.environ.get("MAKE_REPO_CRASH_AT") in here:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get("MAKE_REPO_STOP_AT") in here:
        os.kill(os.getpid(), signal.SIGSTOP)


def sha256_file(path):
    """The SHA-256 of the file PATH, hex (make-repo's too)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def own_temp(directory):
    """A new .publish-*.tmp in DIRECTORY, held with flock(2) while the block runs (so that
    no other pass takes it for a dead pass's) and removed after it: yields (fd, path)."""
    while True:
        fd, path = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=TEMP_SUFFIX, dir=directory)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)    # a cleaner took it between mkstemp and flock: take another
    try:
        yield fd, path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.close(fd)


def clean_temps(directory):
    """Removes the .publish-*.tmp files in DIRECTORY whose pass died (none holds them)."""
    for name in os.listdir(directory):
        if not TEMP_RE.match(name):
            continue
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError as e:
            if e.errno == errno.ELOOP:          # a link of a killed switch (made under lock)
                os.unlink(path)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)                        # a live pass's
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.close(fd)


def digest_name(rel, sha256):
    """REL with the first 16 digits of its digest before its .tar.* suffix."""
    head, dot, tail = rel.partition(".tar.")
    return "%s-%s%s%s" % (head, sha256[:16], dot, tail)


def place_package(repo, src, rel, sha256):
    """The package SRC (of digest SHA256) in REPO at REL, or where REL holds other bytes,
    at REL with its digest in the name. Never replaces a file: a file already there with
    the same bytes is taken as it is. Returns the path used, relative to REPO. REL is
    checked by its caller (make-repo's safe_name); that it stays under REPO/packages is
    checked here too, before anything is written."""
    top = os.path.join(os.path.realpath(repo), "packages")
    for cand in (rel, digest_name(rel, sha256)):
        dst = os.path.join(repo, cand)
        where = os.path.realpath(os.path.dirname(dst))
        if os.path.commonpath([top, where]) != top:
            raise Failure("%s: the package's place %s is not under %s: stage it again" % (
                src, where, top))
        if os.path.lexists(dst):
            if os.path.isfile(dst) and not os.path.islink(dst) and sha256_file(dst) == sha256:
                return cand
            continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with own_temp(os.path.dirname(dst)) as (fd, tmp):
            h = hashlib.sha256()
            with open(src, "rb") as f, os.fdopen(os.dup(fd), "wb") as out:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
                    out.write(block)
                out.flush()
                os.fsync(out.fileno())
            os.fchmod(fd, 0o644)
            if h.hexdigest() != sha256:
                raise Failure("%s is not the package its record names (sha256 %s, not %s): "
                              "stage it again" % (src, h.hexdigest(), sha256))
            step("package-copied")
            try:
                os.link(tmp, dst)               # never over a file another pass put there
            except FileExistsError:
                if sha256_file(dst) == sha256:
                    return cand
                continue
            except OSError as e:
                raise Failure("%s cannot be linked into place (%s): make-repo publishes with "
                              "link(2), which never replaces a file; keep the repository on a "
                              "file system with hard links" % (dst, e.strerror)) from None
            step("package-placed")
        fsync_dir(os.path.dirname(dst))
        return cand
    raise Failure("%s and %s both hold other bytes than %s: remove the one no index names" % (
        rel, digest_name(rel, sha256), src))


def holder_line():
    return "make-repo %s, pid %d on %s, since %s\n" % (
        sys.argv[1] if len(sys.argv) > 1 else "", os.getpid(), socket.gethostname(),
        time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


@contextlib.contextmanager
def locked(path, wait_s):
    """Holds the publish lock PATH (flock(2), exclusive), waiting at most WAIT_S seconds
    for another pass to let it go; the holder writes who it is into the file."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise Failure("the publish lock %s cannot be opened (%s): give --lock a file in a "
                      "directory that exists and this user may write" % (path, e.strerror))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.stderr.write("make-repo: waiting for the publish lock %s (%s)\n" % (
                path, holder_of(path)))
            sys.stderr.flush()
            wait_for_lock(fd, path, wait_s)
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder_line().encode(), 0)
        step("locked")
        yield
    finally:
        os.close(fd)


def holder_of(path):
    """Who holds the lock PATH, as its holder wrote it."""
    with open(path, errors="replace") as f:
        return f.readline(200).strip() or "a process that has not written its name yet"


class _Expired(Exception):
    pass


def wait_for_lock(fd, path, wait_s):
    """Blocks in flock(2) until the lock is free or WAIT_S seconds passed (SIGALRM ends
    the wait: PEP 475 retries an interrupted call only when the handler returns)."""
    def expired(signum, frame):
        raise _Expired()

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, max(wait_s, 0.001))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except _Expired:
        raise Failure("the publish lock %s is held by %s, past %g seconds of waiting: let "
                      "that publish end (or stop it), then run again, or wait longer "
                      "(--lock-wait)" % (path, holder_of(path), wait_s)) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def served_bytes(repo, name):
    """The bytes a reader gets for NAME now, or None."""
    try:
        with open(os.path.join(repo, name), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def link_target(name):
    return os.path.join(GENERATIONS, CURRENT, name)


def is_our_link(repo, name):
    path = os.path.join(repo, name)
    return os.path.islink(path) and os.readlink(path) == link_target(name)


def replace_link(directory, name, target):
    """NAME in DIRECTORY made a symbolic link to TARGET by one rename."""
    tmp = os.path.join(directory, "%slink%d_%s%s" % (TEMP_PREFIX, os.getpid(),
                                                     os.urandom(4).hex(), TEMP_SUFFIX))
    os.symlink(target, tmp)
    step("link-made")
    os.replace(tmp, os.path.join(directory, name))
    fsync_dir(directory)


def new_generation(repo, stamp, index, sig=None, sign=None):
    """A generation directory holding INDEX (bytes) and its signature: SIG (bytes), or
    what SIGN(index_path, sig_path) writes. Returns its name."""
    gens = os.path.join(repo, GENERATIONS)
    path = tempfile.mkdtemp(prefix="g-%s-" % stamp, dir=gens)
    try:
        fill_generation(path, index, sig, sign)
    except Exception:
        shutil.rmtree(path, ignore_errors=True)     # a signing that failed leaves nothing
        raise
    fsync_dir(gens)
    return os.path.basename(path)


def fill_generation(path, index, sig, sign):
    """The generation directory PATH given its index and signature, each on disk."""
    os.chmod(path, 0o755)
    for name, data in ((INDEX, index), (SIG, sig)):
        if data is None:
            continue
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(os.path.join(path, name), 0o644)
    step("generation-written")
    if sign is not None:
        sign(os.path.join(path, INDEX), os.path.join(path, SIG))
        fsync_file(os.path.join(path, SIG))
        os.chmod(os.path.join(path, SIG), 0o644)
        step("generation-signed")
    fsync_dir(path)


def migrate(repo, stamp):
    """A repository whose index.json or index.json.sig is a file of its own (one from before
    generations, or one edited by hand) made to serve the same bytes through the current
    generation: the pair copied into a generation first, then each name replaced by its
    link, so that a reader gets the same bytes at every step."""
    if all(is_our_link(repo, n) for n in (INDEX, SIG)):
        return
    index, sig = served_bytes(repo, INDEX), served_bytes(repo, SIG)
    gens = os.path.join(repo, GENERATIONS)
    if index is not None:
        gen = new_generation(repo, stamp, index, sig)
        replace_link(gens, CURRENT, gen)
        step("migrated-generation")
    for name, after in ((SIG, "migrated-sig"), (INDEX, "migrated-index")):
        if index is not None and not is_our_link(repo, name):
            replace_link(repo, name, link_target(name))
            step(after)


def switch(repo, stamp, index, sign):
    """Serves INDEX (bytes) signed by SIGN(index_path, sig_path) as REPO's index: a new
    generation, then the one rename of index.gen/current. Call under the lock."""
    os.makedirs(os.path.join(repo, GENERATIONS), exist_ok=True)
    migrate(repo, stamp)
    gen = new_generation(repo, stamp, index, sign=sign)
    replace_link(os.path.join(repo, GENERATIONS), CURRENT, gen)
    step("switched")
    for name in (SIG, INDEX):       # a new repository: its names made last, the index last
        if not is_our_link(repo, name):
            replace_link(repo, name, link_target(name))


def clean(repo):
    """What killed passes left: their .publish-*.tmp files (packages/ and index.gen/) and
    every generation the current link does not name. Call under the lock."""
    gens = os.path.join(repo, GENERATIONS)
    if os.path.isdir(gens):
        current = os.path.join(gens, CURRENT)
        keep = os.readlink(current) if os.path.islink(current) else None
        clean_temps(gens)
        for name in os.listdir(gens):
            if GENERATION_RE.match(name) and name != keep:
                shutil.rmtree(os.path.join(gens, name), ignore_errors=True)
    clean_temps(repo)
    packages = os.path.join(repo, "packages")
    for directory, _, _ in os.walk(packages):
        clean_temps(directory)
