// SPDX-License-Identifier: Apache-2.0
// A schema made strict as the API server's strict field validation is (kubectl apply asks
// for Strict; without it unknown fields are pruned, silently): every object schema that
// lists its properties takes no others, unless Kubernetes says it keeps unknown fields
// (x-kubernetes-preserve-unknown-fields). NODE is changed in place.
export function strict(node) {
  if (Array.isArray(node)) return node.forEach(strict);
  if (!node || typeof node !== "object") return;
  if (node.type === "object" && node.properties && !node["x-kubernetes-preserve-unknown-fields"] &&
      node.additionalProperties === undefined)
    node.additionalProperties = false;
  Object.values(node).forEach(strict);
}
