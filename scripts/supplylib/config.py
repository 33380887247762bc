# SPDX-License-Identifier: Apache-2.0
"""The supply pass's configuration file, supply.json (docs/building-packages.md, "Keeping
ahead of the fleet"): read strictly, as the installer reads a fleet file. An unknown key is
refused by its path and name (a misspelt key would silently build nothing), a value of the
wrong type by its path; each refusal is one line (ConfigError), the command's exit 2.

  {"supply": 1,
   "driver_versions": ["535.261.03"], "flavours": ["proprietary"],
   "platforms": {"debian": {"build_args": ["--debian", "{version}"]}},
   "feeds": [{"name": "bookworm", "type": "debian", "url": "...", ...}],
   "fleet_files": ["fleet.json"],
   "kubernetes": {"namespace": "nvidia-supply", "image": "...", "parallel": 4, ...},
   "publish": {"to": ["oci://registry.example.com/nvidia/drivers"],
               "registry_auth": ["/etc/nvidia-supply/registry/.dockerconfigjson"]}}

A feed's own keys are the feed module's to judge (feeds.read); here only its name and type.
The kubernetes section's keys are jobs.py's (the Kubernetes executor); here it must be an
object. publish names registry repositories each publish is pushed to (make-repo publish
--to: scripts/repo_push.py judges each reference), with the registry's CA (ca_file) and
Docker config.json files (registry_auth). Relative paths (fleet_files, ca_file,
registry_auth) are relative to the configuration file's folder.
"""
import json
import os
import re

import repo_push

VERSION_RE = re.compile(r"^[0-9]{1,9}(\.[0-9]{1,9}){2,5}$")
FLAVOURS = ("proprietary", "open")
FEED_TYPES = ("cos", "ubuntu", "rhel", "debian")
PLACEHOLDERS = ("version", "kernel", "build", "os", "arch", "flavour")
TOP_KEYS = ("supply", "driver_versions", "flavours", "platforms", "feeds", "fleet_files",
            "kubernetes", "publish")
PUBLISH_KEYS = ("to", "ca_file", "registry_auth")


class ConfigError(Exception):
    """A refused configuration: one line, the key's path and what is wrong."""


def empty():
    return {"supply": 1, "driver_versions": [], "flavours": [], "platforms": {}, "feeds": [],
            "fleet_files": [], "kubernetes": {}, "publish": push_of({}, ".")}


def _strings(v, where, check=None):
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise ConfigError("%s: a list of non-empty strings expected" % where)
    for x in v:
        if check and not check(x):
            raise ConfigError("%s: '%s' %s" % (where, x, check.__doc__))
    return v


def _version(v):
    """is not a driver version (535.261.03): a branch or tag names nothing to build"""
    return bool(VERSION_RE.match(v))


def _flavour(v):
    """is not a flavour: proprietary or open"""
    return v in FLAVOURS


def check_build_args(args, where):
    """ARGS' placeholders are {version} {kernel} {build} {os} {arch} {flavour} and
    {input_NAME}: anything else is refused here, not at the first build."""
    _strings(args, where)
    for a in args:
        for name in re.findall(r"{([^{}]*)}", a):
            if name not in PLACEHOLDERS and not re.match(r"^input_[A-Za-z0-9_]+$", name):
                raise ConfigError("%s: '{%s}' is not one of {%s} or {input_NAME}" % (
                    where, name, "}, {".join(PLACEHOLDERS)))
    return args


def push_of(obj, base):
    """The publish section OBJ: {"to": [oci://...], "ca_file": path or None,
    "registry_auth": [paths]}, paths made relative to BASE."""
    if not isinstance(obj, dict):
        raise ConfigError("publish: an object expected ({to, ca_file, registry_auth})")
    for k in obj:
        if k not in PUBLISH_KEYS:
            raise ConfigError("publish: unknown key '%s' (known: %s)" % (
                k, ", ".join(PUBLISH_KEYS)))
    to = _strings(obj.get("to", []), "publish.to")
    for t in to:
        try:
            repo_push.check_target(t)
        except repo_push.Usage as e:
            raise ConfigError("publish.to: %s" % str(e).replace("--to ", "", 1)) from None
    ca = obj.get("ca_file")
    if ca is not None and (not isinstance(ca, str) or not ca):
        raise ConfigError("publish.ca_file: a path expected")
    auth = _strings(obj.get("registry_auth", []), "publish.registry_auth")
    return {"to": to, "ca_file": os.path.join(base, ca) if ca else None,
            "registry_auth": [os.path.join(base, a) for a in auth]}


def parse(obj, base="."):
    """The configuration of OBJ (parsed JSON), paths made relative to BASE."""
    if not isinstance(obj, dict):
        raise ConfigError("the configuration is not a JSON object")
    for k in obj:
        if k not in TOP_KEYS:
            raise ConfigError("unknown key '%s' (known: %s)" % (k, ", ".join(TOP_KEYS)))
    if obj.get("supply") != 1:
        raise ConfigError("'supply' must be 1, the format (got %s)" % json.dumps(
            obj.get("supply")))
    c = empty()
    c["driver_versions"] = _strings(obj.get("driver_versions", []), "driver_versions", _version)
    c["flavours"] = _strings(obj.get("flavours", []), "flavours", _flavour)
    plats = obj.get("platforms", {})
    if not isinstance(plats, dict):
        raise ConfigError("platforms: an object expected (os-release ID -> {build_args})")
    for os_id, p in plats.items():
        where = "platforms.%s" % os_id
        if not isinstance(p, dict):
            raise ConfigError("%s: an object expected" % where)
        for k in p:
            if k != "build_args":
                raise ConfigError("%s: unknown key '%s' (known: build_args)" % (where, k))
        c["platforms"][os_id] = {"build_args": check_build_args(p.get("build_args", []),
                                                                where + ".build_args")}
    feeds = obj.get("feeds", [])
    if not isinstance(feeds, list):
        raise ConfigError("feeds: a list of objects expected")
    names = set()
    for i, f in enumerate(feeds):
        where = "feeds[%d]" % i
        if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not f["name"]:
            raise ConfigError("%s: an object with a name expected" % where)
        if f.get("type") not in FEED_TYPES:
            raise ConfigError("%s (%s): type must be one of %s" % (where, f["name"],
                                                                   ", ".join(FEED_TYPES)))
        if f["name"] in names:
            raise ConfigError("%s: a second feed named '%s'" % (where, f["name"]))
        names.add(f["name"])
        c["feeds"].append(f)
    c["fleet_files"] = [os.path.join(base, p) for p in
                        _strings(obj.get("fleet_files", []), "fleet_files")]
    kc = obj.get("kubernetes", {})
    if not isinstance(kc, dict):
        raise ConfigError("kubernetes: an object expected")
    c["kubernetes"] = kc
    c["publish"] = push_of(obj.get("publish", {}), base)
    return c


def read_json(path, error):
    """The JSON document in the file PATH; ERROR (an exception class) naming the file and
    the cause in one line otherwise."""
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise error("%s: %s" % (path, e.strerror)) from None
    except ValueError as e:
        raise error("%s: not JSON: %s" % (path, e)) from None


def load(path):
    """The configuration in the file PATH; ConfigError naming the file otherwise."""
    obj = read_json(path, ConfigError)
    try:
        return parse(obj, os.path.dirname(os.path.abspath(path)))
    except ConfigError as e:
        raise ConfigError("%s: %s" % (path, e)) from None
