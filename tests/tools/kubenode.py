# SPDX-License-Identifier: Apache-2.0
"""A Node write as kube-apiserver carries it out, for the API server stand-in (kube-api.py):
PATCH /api/v1/nodes/NAME and PATCH /api/v1/nodes/NAME/status, step by step in the server's
order (kubernetes/kubernetes: staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go
at 00f75347, staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go,
Store.Update; pkg/registry/core/node/strategy.go at 6785e9ed;
pkg/apis/core/validation/validation.go at 000f2605):

1. The patch applied to the stored Node (patch.go, patcher.applyPatch):
   application/merge-patch+json as RFC 7386; application/strategic-merge-patch+json with
   the Node's patch strategies (k8s.io/api core/v1 types.go): status.conditions and
   status.addresses merged by `type` (+patchMergeKey=type, +patchStrategy=merge),
   metadata.ownerReferences by `uid`, metadata.finalizers and spec.podCIDRs as sets; every
   other list, spec.taints among them (no patch strategy), replaced whole; a null deletes.
   A merged list's element without its merge key is refused as strategicpatch refuses it
   (mergepatch.ErrNoMergeKey, which interpretStrategicMergePatchError passes on: 500). The
   directives ($patch, $retainKeys, $setElementOrder, $deleteFromPrimitiveList) are not
   implemented: a patch with one is answered 415, a limit of this stand-in.
2. The result decoded as a core/v1 Node (patch.go, applyPatchToObject and
   jsonPatcher.applyPatchToCurrentObject: a decode error is 422 Invalid, `"" is invalid:
   patch: Invalid value: ...`): decode_errors checks the fields the node agent writes:
   the conditions' and taints' fields are strings, their times RFC 3339 (metav1.Time's
   UnmarshalJSON parses time.RFC3339, or null), spec.unschedulable a boolean, labels and
   annotations maps of strings.
3. The precondition (store.go, Store.Update: a patched object whose metadata.resourceVersion
   is not the stored one is apierrors.NewConflict(qualifiedResource, name,
   OptimisticLockErrorMsg)): 409, reason Conflict, `Operation cannot be fulfilled on nodes
   "NAME": the object has been modified; please apply your changes to the latest version
   and try again`; the same for the status subresource, whose StatusREST is a copy of the
   Node's store with UpdateStrategy StatusStrategy (pkg/registry/core/node/storage/
   storage.go, NewStorage). A patch without metadata.resourceVersion (or with "") is
   unconditional, as nodeStrategy.AllowUnconditionalUpdate allows.
4. The strategy (strategy.go, called by rest.BeforeUpdate, which also keeps the stored uid,
   creationTimestamp and generation): nodeStrategy.PrepareForUpdate sets the new Node's
   Status to the stored one, so a PATCH of nodes/NAME changes no status;
   nodeStatusStrategy.PrepareForUpdate sets Spec to the stored one (and drops status.config
   unless it was set), so a status write changes no spec. Neither resets ObjectMeta: the
   labels and annotations of a status write are applied, as the real server applies them.
5. Validation (validation.go; nodeStrategy.ValidateUpdate runs ValidateNode and
   ValidateNodeUpdate, nodeStatusStrategy.ValidateUpdate ValidateNodeUpdate), of what a
   write of ours can get wrong: ValidateObjectMeta's labels and annotations (meta_errors),
   and validateNodeTaints on the path metadata.taints, as the server names it: each key a
   qualified name (ValidateLabelName), each value a label value (IsValidLabelValue), each
   effect NoSchedule, PreferNoSchedule or NoExecute (validateTaintEffect; Required when
   empty), no two taints of one key and effect. 422 Invalid, `Node "NAME" is invalid:
   ERROR` or `[ERROR, ERROR]` (apierrors.NewInvalid; ToAggregate drops repeated messages).
   Of a NodeCondition the server validates nothing past step 2: ValidateNodeUpdate looks at
   status.addresses, capacity and allocatable, never at conditions, so a status "Maybe" or
   an empty reason is stored as sent (tests/k8s/check-requests.mjs refuses them in the
   agent's writes); nor does declarative validation, which for a Node covers
   spec.providerID only (pkg/registry/core/node/declarative_validation_test.go at
   2dad983f). A taint's timeAdded is not validated either.
6. Stored with a new resourceVersion, unless nothing changed (etcd3/store.go,
   GuaranteedUpdate: an object that encodes as the stored one is not written; it keeps its
   resourceVersion and no watch event is sent).
"""
import copy
import datetime
import json
import re

DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
QUALIFIED_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
# metav1.Time's JSON: Go's time.RFC3339 layout, which also takes a fraction of a second.
RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# The messages of k8s.io/apimachinery pkg/util/validation/validation.go.
NAME_WHY = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
            "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
SUBDOMAIN_WHY = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
VALUE_WHY = ("a valid label must be an empty string or consist of alphanumeric characters, '-', "
             "'_' or '.', and must start and end with an alphanumeric character (e.g. "
             "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
             "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")

# The Node's strategic merge patch strategies (k8s.io/api core/v1 types.go).
MERGE_KEYS = {("status", "conditions"): "type", ("status", "addresses"): "type",
              ("metadata", "ownerReferences"): "uid"}
MERGE_SETS = {("spec", "podCIDRs"), ("metadata", "finalizers")}


def failure(code, reason, message, details=None):
    obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code}
    if details:
        obj["details"] = details
    return code, obj


def qualified_name_errors(s):
    """validation.IsQualifiedName: [DNS-subdomain prefix/]name, the name at most 63."""
    parts = s.split("/")
    if len(parts) > 2:
        return ["a qualified name " + NAME_WHY + " with an optional DNS subdomain prefix and "
                "'/' (e.g. 'example.com/MyName')"]
    errs = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix) > 253:
            errs.append("prefix part must be no more than 253 characters")
        elif not DNS1123_SUBDOMAIN.fullmatch(prefix):
            errs.append("prefix part " + SUBDOMAIN_WHY)
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if name and not QUALIFIED_NAME.fullmatch(name):
        errs.append("name part " + NAME_WHY)
    return errs


def qualified_name(s):
    return isinstance(s, str) and not qualified_name_errors(s)


def label_value_errors(v):
    """validation.IsValidLabelValue."""
    errs = []
    if len(v) > 63:
        errs.append("must be no more than 63 characters")
    if not LABEL_VALUE.fullmatch(v):
        errs.append(VALUE_WHY)
    return errs


def rfc3339(t):
    """Whether Go's time.Parse(time.RFC3339, T) takes T."""
    m = RFC3339.fullmatch(t) if isinstance(t, str) else None
    if not m:
        return False
    y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
    try:
        datetime.datetime(y, mo, d, h, mi, s)
    except ValueError:
        return False
    return True


def go_value(v):
    """A value as a field.Error quotes it (%q for a string)."""
    return json.dumps(v) if isinstance(v, str) else str(v)


def taint_errors(taints):
    """validateNodeTaints, as field errors on metadata.taints."""
    errs = []
    seen = set()
    for i, t in enumerate(taints):
        p = "metadata.taints[%d]" % i
        key, value, effect = t.get("key", ""), t.get("value", ""), t.get("effect", "")
        for why in qualified_name_errors(key):
            errs.append(("FieldValueInvalid", p + ".key",
                         "Invalid value: %s: %s" % (go_value(key), why)))
        why = label_value_errors(value)
        if why:
            errs.append(("FieldValueInvalid", p + ".value",
                         "Invalid value: %s: %s" % (go_value(value), ";".join(why))))
        if not effect:
            errs.append(("FieldValueRequired", p + ".effect", "Required value"))
        elif effect not in EFFECTS:
            errs.append(("FieldValueNotSupported", p + ".effect",
                         "Unsupported value: %s: supported values: %s" % (
                             go_value(effect), ", ".join('"%s"' % e for e in EFFECTS))))
        if (key, effect) in seen:
            added = "(*v1.Time)(nil)" if "timeAdded" not in t else "&v1.Time{%s}" % t["timeAdded"]
            errs.append(("FieldValueDuplicate", p, 'Duplicate value: core.Taint{Key:%s, Value:%s, '
                         'Effect:%s, TimeAdded:%s}: taints must be unique by key and effect pair'
                         % (go_value(key), go_value(value), go_value(effect), added)))
            continue
        seen.add((key, effect))
    return errs


def meta_errors(meta):
    """ValidateObjectMeta's checks of labels (ValidateLabels: each key a qualified name, each
    value a label value) and annotations (ValidateAnnotations: each key, lowercased, a
    qualified name; all of them at most 256 KiB), as field errors."""
    errs = []
    for k, v in (meta.get("labels") or {}).items():
        for why in qualified_name_errors(k):
            errs.append(("FieldValueInvalid", "metadata.labels",
                         "Invalid value: %s: %s" % (go_value(k), why)))
        for why in label_value_errors(v):
            errs.append(("FieldValueInvalid", "metadata.labels",
                         "Invalid value: %s: %s" % (go_value(v), why)))
    notes = meta.get("annotations") or {}
    for k in notes:
        for why in qualified_name_errors(k.lower()):
            errs.append(("FieldValueInvalid", "metadata.annotations",
                         "Invalid value: %s: %s" % (go_value(k), why)))
    if sum(len(k) + len(v) for k, v in notes.items()) > 262144:
        errs.append(("FieldValueTooLong", "metadata.annotations",
                     "Too long: must have at most 262144 bytes"))
    return errs


def invalid(name, errs):
    """apierrors.NewInvalid(Node, NAME, ERRS): 422, the messages deduplicated."""
    msgs = []
    for _, f, body in errs:
        if "%s: %s" % (f, body) not in msgs:
            msgs.append("%s: %s" % (f, body))
    return failure(422, "Invalid", 'Node "%s" is invalid: %s' % (
        name, msgs[0] if len(msgs) == 1 else "[%s]" % ", ".join(msgs)),
        {"name": name, "kind": "Node",
         "causes": [{"reason": r, "message": b, "field": f} for r, f, b in errs]})


def decode_errors(node):
    """What decoding the patched Node as a core/v1 Node refuses, of the fields this stand-in's
    clients write; a list of messages."""
    errs = []

    def string(v, where):
        if v is not None and not isinstance(v, str):
            errs.append("%s: expected string, got %s" % (where, json.dumps(v)))

    def time(v, where):
        if v is not None and not rfc3339(v):
            errs.append('%s: parsing time %s as "2006-01-02T15:04:05Z07:00": cannot parse' % (
                where, json.dumps(v)))

    def of(obj, key, kind, where):
        v = obj.get(key)
        if v is None:
            return kind()
        if not isinstance(v, kind):
            errs.append("%s: expected %s, got %s" % (
                where, "object" if kind is dict else "array", json.dumps(v)))
            return kind()
        return v

    meta, spec, st = (of(node, k, dict, k) for k in ("metadata", "spec", "status"))
    for m in ("labels", "annotations"):
        for k, v in of(meta, m, dict, "metadata." + m).items():
            string(v, "metadata.%s[%s]" % (m, k))
    if not isinstance(spec.get("unschedulable", False), bool):
        errs.append("spec.unschedulable: expected bool")
    for i, t in enumerate(of(spec, "taints", list, "spec.taints")):
        if not isinstance(t, dict):
            errs.append("spec.taints[%d]: expected object" % i)
            continue
        for f in ("key", "value", "effect"):
            string(t.get(f), "spec.taints[%d].%s" % (i, f))
        time(t.get("timeAdded"), "spec.taints[%d].timeAdded" % i)
    for i, c in enumerate(of(st, "conditions", list, "status.conditions")):
        if not isinstance(c, dict):
            errs.append("status.conditions[%d]: expected object" % i)
            continue
        for f in ("type", "status", "reason", "message"):
            string(c.get(f), "status.conditions[%d].%s" % (i, f))
        for f in ("lastHeartbeatTime", "lastTransitionTime"):
            time(c.get(f), "status.conditions[%d].%s" % (i, f))
    return errs


def directives(patch):
    """Whether a strategic merge patch holds a $-directive anywhere."""
    if isinstance(patch, list):
        return any(directives(x) for x in patch)
    if isinstance(patch, dict):
        return any(k.startswith("$") or directives(v) for k, v in patch.items())
    return False


class NoMergeKey(Exception):
    pass


def merge_patch(target, patch):
    """RFC 7386, on a copy."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic(target, patch, path=()):
    """A strategic merge patch of a Node (or part of one at PATH), on a copy: lists merged
    as MERGE_KEYS and MERGE_SETS say (the stored elements first, in their order, then the
    new ones), others replaced. Raises NoMergeKey."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        p = path + (k,)
        if v is None:
            out.pop(k, None)
        elif p in MERGE_KEYS and isinstance(v, list):
            key = MERGE_KEYS[p]
            merged = out.get(k) if isinstance(out.get(k), list) else []
            for el in v:
                if not isinstance(el, dict) or key not in el:
                    raise NoMergeKey("map: %s does not contain declared merge key: %s" % (
                        json.dumps(el), key))
                at = [i for i, x in enumerate(merged) if isinstance(x, dict) and
                      x.get(key) == el[key]]
                if at:
                    merged[at[0]] = strategic(merged[at[0]], el, p)
                else:
                    merged.append(strategic({}, el, p))
            out[k] = merged
        elif p in MERGE_SETS and isinstance(v, list):
            merged = out.get(k) if isinstance(out.get(k), list) else []
            out[k] = merged + [x for x in v if x not in merged]
        else:
            out[k] = strategic(out.get(k), v, p)
    return out


def conflict(name):
    return failure(409, "Conflict", 'Operation cannot be fulfilled on nodes "%s": the object '
                   "has been modified; please apply your changes to the latest version and try "
                   "again" % name, {"name": name, "kind": "nodes"})


def patch(node, body, ctype, sub):
    """(status, object, new Node or None) of a PATCH of NODE (the stored one, not changed
    here) with BODY of content type CTYPE; SUB: the status subresource."""
    name = node["metadata"]["name"]
    if not isinstance(body, dict) and ctype != "application/json-patch+json":
        return failure(400, "BadRequest", "the patch is not a JSON object") + (None,)
    if ctype == "application/strategic-merge-patch+json":
        if directives(body):
            return failure(415, "UnsupportedMediaType", "this stand-in does not implement "
                           "strategic merge patch directives ($patch, $retainKeys, "
                           "$setElementOrder, $deleteFromPrimitiveList)") + (None,)
        try:
            new = strategic(node, body)
        except NoMergeKey as e:
            return failure(500, "", str(e)) + (None,)
    elif ctype == "application/merge-patch+json":
        new = merge_patch(node, body)
    elif ctype in ("application/json-patch+json", "application/apply-patch+yaml"):
        return failure(415, "UnsupportedMediaType", "this stand-in does not implement %s"
                       % ctype) + (None,)
    else:
        return failure(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                       "format - accepted media types include: application/json-patch+json, "
                       "application/merge-patch+json, application/apply-patch+yaml, "
                       "application/strategic-merge-patch+json") + (None,)
    bad = decode_errors(new)
    if bad:
        return failure(422, "Invalid", ' "" is invalid: patch: Invalid value: %s: %s' % (
            json.dumps(json.dumps(body)), "; ".join(bad))) + (None,)
    meta = new.setdefault("metadata", {})
    if meta.get("name") != name:
        return failure(400, "BadRequest", "the name of the object (%s) does not match the name "
                       "on the URL (%s)" % (meta.get("name"), name)) + (None,)
    rv = meta.get("resourceVersion") or ""
    if rv and rv != node["metadata"].get("resourceVersion"):
        return conflict(name) + (None,)
    meta["resourceVersion"] = node["metadata"].get("resourceVersion")
    for k in ("uid", "creationTimestamp", "generation"):
        if k in node["metadata"]:
            meta[k] = node["metadata"][k]
    if sub:
        new["spec"] = copy.deepcopy(node.get("spec"))
        if not (node.get("status") or {}).get("config"):
            (new.get("status") or {}).pop("config", None)
        if new["spec"] is None:
            del new["spec"]
    else:
        new["status"] = copy.deepcopy(node.get("status"))
        if new["status"] is None:
            del new["status"]
    errs = meta_errors(meta) + taint_errors((new.get("spec") or {}).get("taints") or [])
    if errs:
        return invalid(name, errs) + (None,)
    if new == node:
        return 200, node, None
    return 200, new, new


def race(node, change):
    """Another writer's change to NODE (the fault "race"): {"taints": [...]} replaces
    spec.taints, {"labels": {...}} is merged into metadata.labels (null deletes). In place."""
    if "taints" in change:
        node.setdefault("spec", {})["taints"] = copy.deepcopy(change["taints"])
    if "labels" in change:
        meta = node.setdefault("metadata", {})
        meta["labels"] = merge_patch(meta.get("labels") or {}, change["labels"])
