"""A local multi-node Ray cluster for the ``--ray`` tests, started once per test module that uses it.

``ray.cluster_utils.Cluster``: a head and one worker node, 1 CPU each, no dashboard, 80 MB object stores, usage
stats off; workers import the tests' fake models through ``PYTHONPATH``. Tests needing it skip, with the reason,
where Ray is not installed (``make test`` installs the ``ray`` extra).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest

from helpers.paths import TESTS

STORE_BYTES = 80 * 2**20
RAY_MISSING = "Ray is not installed (pip install 'madqa[ray]'); `make test` installs it"

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason=RAY_MISSING)


@pytest.fixture(scope="module")
def cluster(layout, request) -> Iterator[Any]:
    """The connected cluster (after ``layout``: MADQA_HOME is set before the nodes start)."""
    pytest.importorskip("ray", reason=RAY_MISSING)
    import ray
    from ray.cluster_utils import Cluster

    os.environ["RAY_DISABLE_USAGE_STATS"] = "1"
    saved = os.environ.get("PYTHONPATH")
    # the test module's folder too: its model factories (``py:test_…``) are imported by name in the workers
    here = str(request.path.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, str(TESTS), saved) if p)
    nodes = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False, "object_store_memory": STORE_BYTES},
    )
    try:
        nodes.add_node(num_cpus=1, object_store_memory=STORE_BYTES)
        ray.init(address=nodes.address, include_dashboard=False, log_to_driver=False)
        nodes.wait_for_nodes()
        yield nodes
    finally:
        ray.shutdown()
        nodes.shutdown()
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
