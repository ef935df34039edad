"""`madqa bench scale` says PASS/FAIL beside each target; `bench space`/`bench scale` take `--port` (and a busy one is
one line). Figures here are made up: only the report and the options are under test (the stages run in
tests/bench/test_ray_bench_scale.py)."""

from __future__ import annotations

import socket

import pytest

from madqa.cli import build_parser, main


def _stage(**figures: float) -> dict[str, float]:
    return {"wall_s": 1.0, "peak_rss_mib": 100.0, **figures}


def figures(**override: dict[str, float]) -> dict[str, object]:
    f: dict[str, object] = {
        "scale": 1.0,
        "cpus": 2,
        "generate": _stage(documents=800, pages=18619, max_doc_pages=900, bytes=2**30, blank_pages=10),
        "extract": _stage(pages_per_s=450.0),
        "index_tantivy": _stage(build_s=12.0),
        "index_whoosh": _stage(build_s=300.0),  # over its target
        "run": _stage(workers=32, run_s=40.0, ratio=1.2, ideal_s=33.0, errors=0, overhead_ms_per_question=3.0),
        "evaluate": _stage(lines=2250, evaluate_s=0.4),
        "space": _stage(items=2250, submit_s=1.0, board_submissions=1000, refresh_s=0.3),
    }
    f.update(override)
    return f


def test_each_target_has_its_verdict() -> None:
    from madqa.bench.scale import report_lines

    lines = report_lines(figures())
    by_stage = {line.split("  ")[1].strip(): line for line in lines[2:] if line.startswith("  ") and line[2] != " "}
    assert by_stage["extract, text layer"].endswith("PASS")
    assert by_stage["index, Tantivy"].endswith("PASS")
    assert by_stage["index, Whoosh"].endswith("FAIL")
    assert by_stage["evaluate"].endswith("PASS") and by_stage["Space"].endswith("PASS")
    assert not by_stage["generate PDFs"].endswith(("PASS", "FAIL"))  # no target, no verdict
    assert sum(x.endswith(("PASS", "FAIL")) for x in lines[:-1]) == 8  # the two sub-figures (overhead, board) too
    assert lines[-1] == "  7 of 8 targets met, 1 FAIL"


def test_a_run_with_errors_fails_even_when_fast() -> None:
    from madqa.bench.scale import report_lines

    bad = figures(run=_stage(workers=4, run_s=1.0, ratio=1.0, ideal_s=1.0, errors=3, overhead_ms_per_question=1.0))
    row = next(x for x in report_lines(bad) if "run, 4 threads" in x)
    assert row.endswith("FAIL")


@pytest.mark.parametrize("bench", ["space", "scale"])
def test_bench_servers_take_a_port(bench: str) -> None:
    assert build_parser().parse_args(["bench", bench, "--port", "8123"]).port == 8123
    assert build_parser().parse_args(["bench", bench]).port is None


@pytest.mark.parametrize("bench", ["space", "scale"])
def test_a_busy_bench_port_is_one_line(bench: str, caplog) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert main(["bench", bench, "--port", str(port), "--no-startup" if bench == "space" else "--json"]) == 2
    assert f"port {port} on 127.0.0.1 is already in use" in caplog.text and "--port" in caplog.text
