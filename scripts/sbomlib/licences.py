# SPDX-License-Identifier: Apache-2.0
"""A Debian copyright file's licences as an SPDX licence expression.

Only machine-readable copyright files are read (copyright-format 1.0,
https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/: a first paragraph whose
Format field names that URL, or its DEP-5 draft): the License field's first line of each
Files paragraph is a licence name or an expression of names joined by "or", "and" or ","
(ibid., "License specification"). Names are matched without regard to case; the short
names of copyright-format 1.0's table become their SPDX identifiers (SPDX licence list,
https://spdx.org/licenses/: GPL-2+ is GPL-2.0-or-later, Expat is MIT); a name with an
exception ("GPL-2+ with OpenSSL exception") or one the table lacks becomes a LicenseRef- of
the package, its text the copyright file's stand-alone License paragraph of that name. Any
other copyright file gives NOASSERTION: nothing is guessed from prose."""
import re

from sbomlib.debian import paragraphs

FORMAT_RE = re.compile(r"copyright-format/1\.0|dep\.debian\.net/deps/dep5", re.I)
# copyright-format 1.0's short names (lower case) with their SPDX identifiers; the versioned
# families (GPL, LGPL, AGPL, GFDL, MPL, Apache, Artistic, CC-*) are by VERSIONED below.
SHORT = {
    "expat": "MIT", "mit": "MIT", "isc": "ISC", "zlib": "Zlib", "bsd-2-clause": "BSD-2-Clause",
    "bsd-3-clause": "BSD-3-Clause", "bsd-4-clause": "BSD-4-Clause", "cc0-1.0": "CC0-1.0",
    "curl": "curl", "openssl": "OpenSSL", "x11": "X11", "python-2.0": "Python-2.0",
    "zope-2.1": "ZPL-2.1", "w3c": "W3C", "unicode-dfs-2016": "Unicode-DFS-2016",
    "bsl-1.0": "BSL-1.0", "0bsd": "0BSD", "unlicense": "Unlicense", "oldap-2.8": "OLDAP-2.8",
    "fsfullr": "FSFULLR", "fsfap": "FSFAP", "bsd-4-clause-uc": "BSD-4-Clause-UC",
}
# FAMILY-VERSION[+]: GPL-2+ -> GPL-2.0-or-later; the only/or-later suffix where SPDX has one.
VERSIONED = re.compile(r"^(a?gpl|lgpl|gfdl|mpl|apache|artistic|cc-by(?:-sa|-nd)?)"
                       r"-([0-9]+(?:\.[0-9]+)?)(\+)?$")
FAMILY = {"gpl": "GPL", "agpl": "AGPL", "lgpl": "LGPL", "gfdl": "GFDL", "mpl": "MPL",
          "apache": "Apache", "artistic": "Artistic", "cc-by": "CC-BY", "cc-by-sa": "CC-BY-SA",
          "cc-by-nd": "CC-BY-ND"}
ONLY_OR_LATER = {"GPL", "AGPL", "LGPL", "GFDL"}
# SPDX's: LGPL 2.0 and 2.1 and GFDL's have a minor version; GPL-2 is GPL-2.0.
REF_RE = re.compile(r"[^A-Za-z0-9.]+")


def spdx_id(name):
    """The SPDX identifier of a copyright-format short name, or None."""
    low = name.lower()
    if low in SHORT:
        return SHORT[low]
    m = VERSIONED.match(low)
    if not m:
        return None
    fam, ver, plus = FAMILY[m.group(1)], m.group(2), m.group(3)
    if "." not in ver:
        ver += ".0"
    if fam in ONLY_OR_LATER:
        return "%s-%s-%s" % (fam, ver, "or-later" if plus else "only")
    if plus:
        return None  # MPL-2.0+ and the like: no SPDX identifier, a LicenseRef.
    return "%s-%s" % (fam, ver)


def licence_ref(package, name):
    return "LicenseRef-%s-%s" % (REF_RE.sub("-", package), REF_RE.sub("-", name).strip("-"))


def _term(package, name, refs, texts):
    name = " ".join(name.split())
    sid = spdx_id(name)
    if sid:
        return sid
    ref = licence_ref(package, name)
    refs[ref] = (name, texts.get(name.lower(), ""))
    return ref


def _expression(package, text, refs, texts):
    """One License field's first line as SPDX: "or" binds loosest, then "and" and ","."""
    alts = []
    for alt in re.split(r"\s+or\s+", text.strip(), flags=re.I):
        conj = [c for c in re.split(r"\s+and\s+|\s*,\s*", alt, flags=re.I) if c.strip()]
        terms = [_term(package, c, refs, texts) for c in conj]
        alts.append(terms[0] if len(terms) == 1 else "(" + " AND ".join(terms) + ")")
    return alts[0] if len(alts) == 1 else "(" + " OR ".join(alts) + ")"


def declared(package, copyright_text):
    """(expression, {LicenseRef: (Debian's name, text)}) of a copyright file: the AND of its
    Files paragraphs' licences, each once, in order; ("NOASSERTION", {}) when the file is
    not machine-readable."""
    try:
        paras = paragraphs(copyright_text)
    except ValueError:
        return "NOASSERTION", {}
    if not paras or not FORMAT_RE.search(paras[0].get("Format", "")):
        return "NOASSERTION", {}
    # Stand-alone License paragraphs (no Files field): the text of a name.
    texts = {}
    for p in paras[1:]:
        if "License" in p and "Files" not in p:
            head, _, body = p["License"].partition("\n")
            texts[" ".join(head.split()).lower()] = body
    refs, exprs = {}, []
    for p in paras[1:]:
        if "Files" not in p or not p.get("License", "").strip():
            continue
        e = _expression(package, p["License"].partition("\n")[0], refs, texts)
        if e not in exprs:
            exprs.append(e)
    if not exprs:
        return "NOASSERTION", {}
    return (exprs[0] if len(exprs) == 1 else " AND ".join(exprs)), refs
