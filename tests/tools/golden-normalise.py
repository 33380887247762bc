#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Normalises the installer's output for the golden files (tests/integration/t_golden.sh).

golden-normalise.py [--literal VALUE=TOKEN]... [--word VALUE=TOKEN]... <OUTPUT >NORMALISED

What varies from run to run or machine to machine becomes a token, and nothing else is
touched, so that a golden file still shows every word the user reads:
  --literal  a scratch path (the test's directory, the fixtures), or the commit the binary
             was built from where it is shown, replaced wherever it occurs
  --word     a value replaced only as a whole word (the installer's version, the hostname)
  always     sha256 digests <SHA256>, key fingerprints <KEYID>, UTC times <TIME>, durations,
             the free space and the mount under the scratch directory (<MOUNT>), package
             sizes (the stand-in modules are signed with a key made per run)
"""
import argparse
import re
import sys

RULES = [
    (re.compile(r"\b[0-9a-f]{64}\b"), "<SHA256>"),
    (re.compile(r"\b[0-9a-f]{12}\.\.\."), "<SHA256>..."),
    (re.compile(r"\b[0-9a-f]{16}\b"), "<KEYID>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z"), "<TIME>"),
    (re.compile(r"\b(\w*_ms|peak_rss_kib)=\d+"), r"\1=<N>"),
    (re.compile(r'"(\w*_ms|peak_rss_kib)": \d+'), r'"\1": <N>'),
    (re.compile(r"\b\d+ MiB free"), "<N> MiB free"),
    (re.compile(r'"(size|package_size)": \d+'), r'"\1": <N>'),
    (re.compile(r"\(\d+ bytes, "), "(<N> bytes, "),
    # status: "install_dir: /x (on /, ext4 rw,relatime)"; doctor: "install dir on / (ext4 rw)"
    (re.compile(r"\(on [^,()]+, \S+ [^()]+\)"), "(on <MOUNT>)"),
    (re.compile(r"install dir on \S+ \(\S+ [^()]+\)"), "install dir on <MOUNT>"),
    (re.compile(r"^(  mount: +)\S+ \(\S+, [^()]+\)$", re.M), r"\1<MOUNT>"),
    (re.compile(r'"(target|fstype|options)": "[^"]*"'), r'"\1": "<MOUNT>"'),
]

def pair(s):
    value, sep, token = s.partition("=")
    if not sep or not value:
        raise argparse.ArgumentTypeError("expected VALUE=TOKEN, got %r" % s)
    return value, token


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--literal", type=pair, action="append", default=[])
    ap.add_argument("--word", type=pair, action="append", default=[])
    args = ap.parse_args()
    # Longest first: the fixtures directory lies inside the run's directory.
    literals = sorted(args.literal, key=lambda p: -len(p[0]))
    words = [(re.compile(r"(?<![\w.-])" + re.escape(v) + r"(?![\w.-])"), t) for v, t in args.word]
    for line in sys.stdin:
        for value, token in literals:
            line = line.replace(value, token)
        for rx, token in words:
            line = rx.sub(token, line)
        for rx, repl in RULES:
            line = rx.sub(repl, line)
        sys.stdout.write(line)


if __name__ == "__main__":
    main()
