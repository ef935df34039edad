"""`madqa bench …`: benchmarks that print figures measured side by side in one run (never used by tests)."""

from __future__ import annotations

import argparse
import importlib
import json
import sys

HELP = "benchmarks: `madqa bench extract` (page extraction), `madqa bench metric` (scoring), `madqa bench search`"

#: (name, module, configure function, run function): each benchmark lives next to the code it measures.
BENCHES: tuple[tuple[str, str, str, str], ...] = (
    ("extract", "madqa.cli.bench_cmd", "configure_extract", "run_extract"),
    ("metric", "madqa.cli.bench_metric", "configure_metric_bench", "run_metric_bench"),
    ("search", "madqa.cli.bench_search", "configure_search_bench", "run_search_bench"),
    ("space", "madqa.cli.bench_space", "configure_space_bench", "run_space_bench"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add one sub-parser per benchmark (a benchmark whose module is missing is left out)."""
    sub = parser.add_subparsers(dest="bench", metavar="BENCH", required=True)
    for name, module_name, conf, runner in BENCHES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        sp = sub.add_parser(name, help=f"{name} benchmark")
        getattr(module, conf)(sp)
        sp.set_defaults(_bench=getattr(module, runner))


def run(args: argparse.Namespace) -> int:
    """Dispatch to the chosen benchmark."""
    return int(args._bench(args) or 0)


def emit(figures: dict, lines: list[str], as_json: bool) -> int:
    """Print a benchmark's figures: one JSON object on stdout with ``--json``, else the readable lines."""
    if as_json:
        json.dump(figures, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


def configure_extract(parser: argparse.ArgumentParser) -> None:
    """Options of `madqa bench extract`."""
    parser.add_argument("--pdfs", default=None, help="folder of PDFs (default: the sample's, after `madqa setup`)")
    parser.add_argument("--repeats", type=int, default=3, help="best-of repeats for the text-layer timings")
    parser.add_argument("--workers", type=int, default=None, help="processes for the text-layer pool figure")
    parser.add_argument("--ocr-processes", type=int, default=2,
                        help="processes for both OCR figures, ours and the raw tesseract command (default 2)")
    parser.add_argument("--ocr-repeats", type=int, default=2, help="best-of repeats for the OCR timings")
    parser.add_argument("--no-a0", action="store_true", help="skip the A0-scan memory figure (about a minute)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")


def run_extract(args: argparse.Namespace) -> int:
    """Run the extraction benchmark and print its figures."""
    from pathlib import Path

    from madqa.cli import UserError
    from madqa.loading_script.bench import bench_extract
    from madqa.loading_script.extract import list_pdfs
    from madqa.loading_script.paths import Layout

    folder = Path(args.pdfs) if args.pdfs else Layout.default().sample_dir / "documents"
    if not folder.is_dir():
        raise UserError(f"no PDF folder at {folder}: run `madqa setup` or pass --pdfs FOLDER")
    for option in ("repeats", "ocr_processes", "ocr_repeats"):
        if getattr(args, option) < 1:
            raise UserError(f"--{option.replace('_', '-')} {getattr(args, option)}: use 1 or more")
    pdfs = list_pdfs(folder)
    if not pdfs:
        raise UserError(f"no *.pdf files in {folder}")
    r = bench_extract(pdfs, repeats=args.repeats, workers=args.workers, ocr_processes=args.ocr_processes,
                      ocr_repeats=args.ocr_repeats, a0=not args.no_a0)  # fmt: skip
    lines = [
        f"madqa bench extract: {r['pdfs']} PDFs, {r['pages']} pages ({folder})",
        f"  raw page.get_text()          {r['raw_get_text_pages_per_s']:10.1f} pages/s  (reference)",
        f"  text layer, 1 process        {r['text_layer_pages_per_s']:10.1f} pages/s  "
        f"time ratio vs raw {r['text_layer_vs_raw_time_ratio']:.2f}x (target <= 1.5x)",
        f"  text layer, process pool     {r['text_layer_pool_pages_per_s']:10.1f} pages/s",
    ]
    if "ocr_pages" in r:
        lines += [
            f"  OCR: {r['ocr_pages']} pages ({r['ocr_runs']} runs) at {r['ocr_dpi']} dpi, {r['ocr_processes']} "
            f"processes each, languages {', '.join(r['ocr_languages'])}",
            f"    project's OCR (render, OCR, OSD) {r['ocr_pages_per_s']:6.2f} pages/s  cores busy "
            f"{r['ocr_cpu_busy']:.2f}  peak RSS per worker {r['ocr_worker_peak_rss_mib']:.0f} MiB",
            f"    raw tesseract CLI, same images   {r['tesseract_cli_pages_per_s']:6.2f} pages/s  cores busy "
            f"{r['tesseract_cli_cpu_busy']:.2f}  peak RSS per tesseract {r['tesseract_cli_peak_rss_mib']:.0f} MiB",
            f"    ratio project / raw CLI          {r['ocr_vs_cli_ratio']:6.2f}x (target >= 0.9x)",
        ]
    else:
        lines.append("  OCR                          n/a (no Tesseract, or no page without a text layer)")
    if "a0_peak_rss_mib" in r:
        lines.append(f"  A0 scan (300 dpi gray), 1 OCR worker: peak RSS {r['a0_peak_rss_mib']:.0f} MiB (target < 600),"
                     f" {r['a0_seconds']:.0f} s, {r['a0_chars']} characters, cap {r['a0_max_pixels']:,} pixels")
    lines.append(f"  peak RSS of this process     {r['peak_rss_mib']:.0f} MiB")
    return emit(r, lines, args.json)
