"""The Hub client's retries on the console (issue 41, item 6): one line per retry, saying what to set offline.

``huggingface_hub`` logs two warnings per retry and prints them through a stderr handler of its own as well as
through ours: four lines per retry before. Here a real Hub client asks a loopback port that refuses connections
(``HF_ENDPOINT``), in a fresh process as a user runs ``madqa setup --dataset``; its back-off waits are skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers.paths import TESTS
from helpers.refused_hub import refused_hub_env, refusing_port

CHILD = r"""
import json, sys, types
import huggingface_hub.utils._http as hub_http
hub_http.time = types.SimpleNamespace(sleep=lambda seconds: None)  # keep the retries, skip their waits
from madqa.cli import main
sys.exit(main(json.loads(sys.argv[1])))
"""


def test_each_hub_retry_is_one_line_naming_the_offline_flag(tmp_path: Path) -> None:
    with refusing_port() as port:
        env = refused_hub_env(tmp_path, port, [TESTS])
        argv = ["setup", "--dataset", "OxRML/MADQA"]
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(argv)], env=env, capture_output=True, text=True, timeout=300
        )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    retries = [line for line in lines if "[Retry " in line]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert len(retries) >= 2, proc.stderr[-3000:]  # the client really retried
    numbers = [line.split("[Retry ", 1)[1].split("/", 1)[0] for line in retries]
    assert len(numbers) == len(set(numbers)), proc.stderr[-3000:]  # each retry once, not twice
    assert not [line for line in lines if "thrown while requesting" in line and "[Retry " not in line], proc.stderr
    for line in retries:
        assert "thrown while requesting" in line and "set HF_HUB_OFFLINE=1" in line, line
    assert lines[-1].startswith("ERROR madqa: "), lines[-1]
