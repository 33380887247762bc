# SPDX-License-Identifier: Apache-2.0
"""The GPUs a flavour supports (scripts/bdp/sources.py): NVIDIA's supported-gpus.json read
from the driver's source or given with --pci-ids open=FILE.json (what the refusal of an
open package without them names as the fix), and a file that is not that list refused."""
import json
import types
import unittest

from bdp_test import Case

from bdp import sources

CHIPS = {"chips": [
    {"devid": "0x2330", "name": "NVIDIA H100 80GB HBM3", "features": ["kernelopen"]},
    {"devid": "0x1DB6", "name": "Tesla V100-PCIE-32GB", "features": []},
    {"devid": "0x1B38", "name": "Tesla P40", "legacybranch": "535"},
]}


class SupportedGpus(Case):
    def test_flavours(self):
        p = self.write("supported-gpus.json", json.dumps(CHIPS))
        self.assertEqual(sources.supported_gpus_json(p, "open"),
                         {"10de:2330": "NVIDIA H100 80GB HBM3"})
        self.assertEqual(sorted(sources.supported_gpus_json(p, "proprietary")),
                         ["10de:1db6", "10de:2330"])

    def test_pci_ids_json(self):
        p = self.write("gpus.json", json.dumps(CHIPS))
        fl = types.SimpleNamespace(name="open", pci_ids=p)
        self.assertEqual(sources.flavour_gpus(fl, self.path("src"), "535.261.03", {}, None),
                         {"ids": {"10de:2330": "NVIDIA H100 80GB HBM3"}, "source": "--pci-ids"})

    def test_not_the_list(self):
        p = self.write("gpus.json", '{"chips": [{"name": "no devid", "features": ["kernelopen"]}]}')
        self.assertEqual(self.refused(sources.supported_gpus_json, p, "open"),
                         "%s is not NVIDIA's supported-gpus.json (KeyError: 'devid')" % p)
        p = self.write("broken.json", '{"chips": [')
        self.assertIn("is not NVIDIA's supported-gpus.json (JSONDecodeError: ",
                      self.refused(sources.supported_gpus_json, p, "open"))


if __name__ == "__main__":
    unittest.main()
