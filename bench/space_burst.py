"""The burst figure of `madqa bench space`: board refresh latency while maximum-size legal submissions are scored.

A worst-case *legal* results file answers every test id with as many answer strings of the longest allowed length
as the parser accepts, under the upload size limit. ``burst`` such files are submitted at once through the running
app while a client refreshes the board in a loop; the p50/p95 refresh latency is reported next to the same figure
with nothing being scored (measured in the same run). Scoring runs in the Space's scoring processes
(:mod:`madqa.space.scoring_pool`), so it does not hold the server's GIL.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from .measure import percentile


def worst_case_text(refs: list[Any], max_bytes: int, seed: int) -> str:
    """The costliest file the parser accepts: every id, answers at the caps, lines padded up to ``max_bytes``."""
    from madqa.metric import schema

    # two strings at the per-string cap fill the per-line cap: the costliest ANLS* case measured (~55 ms a line)
    per_string, per_line = schema.MAX_ANSWER_STRING_CHARS, schema.MAX_ANSWER_LINE_CHARS
    items = max(1, min(schema.MAX_ANSWER_ITEMS, per_line // per_string))
    length = per_string
    size = max_bytes // max(1, len(refs)) - 16  # each line padded to its share of the upload limit
    lines = []
    for i, r in enumerate(refs):
        # near-misses of the gold string: ANLS* computes a full edit distance for each
        answer = [((r.answer_variants[0][0] + f" {seed}{k}") * (length // 8 + 1))[:length] for k in range(items)]
        line = {
            "id": r.id,
            "answer": answer,
            "steps": 1 + i % 10,
            "citations": [{"document": c.document, "page": c.page} for c in r.evidence],
        }
        pad = size - len(json.dumps(line)) - 40
        if pad > 0:  # a long trajectory: legal, costs parsing and memory only
            chunk = min(pad, schema.MAX_LINE_CHARS // 2)
            line["search_history"] = [{"query": "q" * chunk}]
            line["steps"] = 1
        lines.append(line)
    return "".join(json.dumps(x) + "\n" for x in lines)


def _quantiles(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), percentile(values, 0.95)


def refresh_under_burst(
    client: Any,
    folder: Path,
    refs: list[Any],
    form: dict[str, str],
    *,
    burst: int,
    max_bytes: int,
    idle_refreshes: int = 20,
) -> dict[str, Any]:
    """Refresh latency idle, then while ``burst`` worst-case submissions are scored concurrently."""
    from gradio_client import Client, handle_file

    idle = []
    for _ in range(idle_refreshes):
        t = time.perf_counter()
        client.predict("", api_name="/refresh")
        idle.append(time.perf_counter() - t)
    paths = []
    for k in range(burst):
        path = folder / f"worst-{k}.jsonl"
        path.write_text(worst_case_text(refs, max_bytes, k), encoding="utf-8")
        paths.append(path)
    results: list[tuple[str, float]] = []
    lock = threading.Lock()

    def submit(k: int) -> None:
        own = Client(client.src, verbose=False)
        t = time.perf_counter()
        message = own.predict(
            handle_file(str(paths[k])), *{**form, "system": f"worst-{k}"}.values(), api_name="/submit"
        )[0]
        with lock:
            results.append((str(message), time.perf_counter() - t))

    threads = [threading.Thread(target=submit, args=(k,)) for k in range(burst)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    during = []
    while any(th.is_alive() for th in threads):
        t = time.perf_counter()
        client.predict("", api_name="/refresh")
        during.append(time.perf_counter() - t)
    for th in threads:
        th.join()
    burst_s = time.perf_counter() - t0
    rejected = [m for m, _ in results if not m.startswith("**Accepted**")]
    if rejected:
        raise RuntimeError(f"a worst-case legal submission was rejected: {rejected[0][:300]}")
    idle_p50, idle_p95 = _quantiles(idle)
    p50, p95 = _quantiles(during or [0.0])
    return {
        "burst": burst,
        "worst_case_file_bytes": paths[0].stat().st_size,
        "burst_s": burst_s,
        "burst_submit_s": sorted(s for _, s in results),
        "refresh_idle_p50_s": idle_p50,
        "refresh_idle_p95_s": idle_p95,
        "refresh_burst_p50_s": p50,
        "refresh_burst_p95_s": p95,
        "refreshes_during_burst": len(during),
    }
