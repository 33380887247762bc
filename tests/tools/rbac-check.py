#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A client's API calls (the node agent's, the supply pass's) against the RBAC rules a
manifest grants its service account, both ways: every call is allowed, and every rule (each
verb of each resource it names) was used by some call, so that nothing more is granted than
the client needs.

Usage: rbac-check.py [--calls-only] [--user-agent PREFIX] [--unused-ok VERB:RESOURCE]...
                     MANIFEST SERVICE_ACCOUNT REQUEST_LOG...

--calls-only checks the first way only: for a log of one part of what the account does
(install's calls on its Node, t_wait_for_package), whose rules the agent's logs use whole.
--unused-ok VERB:RESOURCE (RESOURCE as GROUP/RESOURCE outside the core group) exempts one
verb of one rule from the second way: one that only an option these runs do not set needs
(list nodes: --upgrade-max-unavailable counts the DaemonSet's nodes), which another test's
--calls-only check shows allowed; its caller says which test.

REQUEST_LOGs are tests/tools/kube-api.py's (a JSON line per request); only the client's
requests count (its User-Agent starts with PREFIX: by default "nvidia-driver-installer/", the
agent's; the supply pass's is "nvidia-driver-supply"), not the test's own.
A request is an RBAC request as the API server derives it (k8s.io/apiserver
pkg/endpoints/request/requestinfo.go: GET of a named object is get, of a collection list, or
watch with a watch parameter other than 0 or false; POST create, PUT update, PATCH patch,
DELETE delete; a subresource is RESOURCE/SUB), and a rule allows it as the RBAC authorizer
decides (kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go, RuleAllows: the group, the
resource, the verb, and resourceNames when the rule names any; a create cannot be limited by
name). A ClusterRole bound by a ClusterRoleBinding applies everywhere, a Role (or
ClusterRole) bound by a RoleBinding in its namespace only.
"""
import json
import re
import sys
from urllib.parse import parse_qs

import yaml

args = sys.argv[1:]
calls_only = False
agent = "nvidia-driver-installer/"
unused_ok = set()
while args[:1] in (["--calls-only"], ["--user-agent"], ["--unused-ok"]):
    if args[0] == "--calls-only":
        calls_only, args = True, args[1:]
    elif args[0] == "--unused-ok":
        unused_ok.add(args[1])
        args = args[2:]
    else:
        agent, args = args[1], args[2:]
manifest, account, logs = args[0], args[1], args[2:]
docs = [d for d in yaml.safe_load_all(open(manifest)) if d]


def parse(path):
    """(group, namespace, resource, name) of an API path."""
    m = re.fullmatch(r"/api/v1(?:/namespaces/([^/]+))?/([^/]+)(?:/([^/]+)(?:/([^/]+))?)?", path)
    if m:
        group = ""
        ns, res, name, sub = m.groups()
    else:
        m = re.fullmatch(r"/apis/([^/]+)/[^/]+(?:/namespaces/([^/]+))?"
                         r"/([^/]+)(?:/([^/]+)(?:/([^/]+))?)?", path)
        assert m, "not an API path: %s" % path
        group, ns, res, name, sub = m.groups()
    return group, ns, res + ("/" + sub if sub else ""), name


VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
requests = []
for log in logs:
    for line in open(log):
        r = json.loads(line)
        if not r.get("user_agent", "").startswith(agent):
            continue
        group, ns, res, name = parse(r["path"])
        verb = VERBS.get(r["method"]) or ("get" if name else "list")
        if verb == "list" and (parse_qs(r.get("query", "")).get("watch") or ["0"])[0].lower() \
                not in ("0", "false"):
            verb = "watch"
        requests.append((group, ns, res, verb, name))
if not requests:
    sys.exit("rbac-check: no request of %s in %s" % (agent, logs))

# The rules bound to the account: (rule, namespace or None for everywhere, where it is).
grants = []
roles = {(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")): d for d in docs
         if d["kind"] in ("ClusterRole", "Role")}
for d in docs:
    if d["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
        continue
    if not any(s["kind"] == "ServiceAccount" and s["name"] == account
               for s in d.get("subjects", [])):
        continue
    ref = d["roleRef"]
    ns = d["metadata"].get("namespace") if d["kind"] == "RoleBinding" else None
    role = roles.get((ref["kind"], ref["name"], ns if ref["kind"] == "Role" else None))
    assert role, "%s %s binds %s %s, which the manifest lacks" % (
        d["kind"], d["metadata"]["name"], ref["kind"], ref["name"])
    for i, rule in enumerate(role.get("rules", [])):
        grants.append((rule, ns, "%s %s rule %d" % (ref["kind"], ref["name"], i)))
if not grants:
    sys.exit("rbac-check: nothing in %s is bound to service account %s" % (manifest, account))


def allows(rule, ns_scope, req):
    group, ns, res, verb, name = req
    if ns_scope is not None and ns != ns_scope:
        return False
    if group not in rule.get("apiGroups", []) and "*" not in rule.get("apiGroups", []):
        return False
    if res not in rule.get("resources", []) and "*" not in rule.get("resources", []):
        return False
    if verb not in rule.get("verbs", []) and "*" not in rule.get("verbs", []):
        return False
    names = rule.get("resourceNames", [])
    return not names or (verb != "create" and name in names)


errors = []
for req in sorted(set(requests), key=str):
    if not any(allows(rule, ns, req) for rule, ns, _ in grants):
        errors.append("not allowed: %s %s%s in %s%s" % (
            req[3], req[0] + "/" if req[0] else "", req[2], req[1] or "the cluster",
            " (%s)" % req[4] if req[4] else ""))
exempted = set()
for rule, ns, where in [] if calls_only else grants:
    for group in rule.get("apiGroups", []):
        for res in rule.get("resources", []):
            for verb in rule.get("verbs", []):
                one = {**rule, "apiGroups": [group], "resources": [res], "verbs": [verb]}
                name = "%s:%s%s" % (verb, group + "/" if group else "", res)
                used = any(allows(one, ns, r) for r in requests)
                if name in unused_ok:
                    exempted.add(name)
                    if used:
                        errors.append("--unused-ok %s: used here, no exemption needed" % name)
                elif not used:
                    errors.append("granted but never used: %s %s%s (%s)" % (
                        verb, group + "/" if group else "", res, where))
for name in [] if calls_only else sorted(unused_ok - exempted):
    errors.append("--unused-ok %s: no such rule granted" % name)
for e in errors:
    print("rbac-check: %s: %s" % (manifest, e))
sys.exit(1 if errors else 0)
