"""``madqa sweep CONFIG.yaml [--ray]``: many run configurations as one job, one results file each, resumable.

The configuration file (YAML)::

    split: dev                 # defaults for every configuration (any field below)
    limit: 100
    workers: 8
    output_dir: sweep-results  # relative to this file's folder (default: the folder itself)
    configurations:
      - name: bm25-k5          # the results file is OUTPUT_DIR/NAME.jsonl unless `output` is given
        agent: bm25
        model: openai:gpt-4.1
        top_k: 5
      - name: bm25-k5-oracle
        agent: bm25
        model: openai:gpt-4.1
        oracle: true
      - {name: repl, agent: repl, model: "litellm:anthropic/claude-sonnet-4-5", max_steps: 10}

A configuration's fields are :class:`madqa.agents.harness.runner.RunConfig`'s (``model``, ``agent``, ``split``,
``dataset``, ``limit``, ``max_steps``, ``question_timeout``), its agent's options (``top_k``, ``observe``,
``oracle``, ``search_backend`` …: ``madqa run --agent NAME -h``) plus ``name``, ``output``, ``workers`` and
``api_base``. An agent option among the defaults applies to the configurations whose agent has it. Every
configuration is checked before the first question runs (a mistake names the file, the configuration and the
field). Then each runs in turn, resuming its file when it exists (a sweep that was
stopped is completed by running the same command again; ``--retry-errors`` also reruns failed questions), and a
configuration that fails to start is reported while the others go on. The job ends with the ``madqa compare`` table
of all configurations on the split's gold (train/dev), or, where the gold is hidden, each file's line counts.

With ``--ray [ADDRESS]`` every configuration runs on the Ray cluster (``madqa run --ray``), the connection made
once for the whole sweep. From Python, :func:`sweep` does the same with plain arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from madqa.cli import conventions
from madqa.cli.errors import UserError

HELP = "run a list of configurations (agent, model, k, T, …) from a YAML file, one resumable results file each"
EXAMPLES = (
    "madqa sweep sweep.yaml --dry-run",
    "madqa sweep sweep.yaml --only bm25-k5 repl --retry-errors --json --no-progress",
)
logger = logging.getLogger(__name__)
#: ``madqa sweep -h``'s text after the options: the file format (this module's docstring, its one home).
EPILOG = __doc__.split("\n", 2)[2].strip().replace("::", ":").replace("``", "`").replace(":class:", "")

#: Fields of a configuration besides RunConfig's.
EXTRA_FIELDS = ("name", "output", "workers", "api_base")
#: Fields only the top level of the file has.
TOP_FIELDS = ("configurations", "output_dir")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclasses.dataclass(frozen=True)
class SweepEntry:
    """One configuration of a sweep: its name, settings, results file, threads/questions in flight, model URL."""

    name: str
    config: Any  # madqa.agents.harness.runner.RunConfig
    output: Path
    workers: int = 1
    api_base: str | None = None


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``sweep`` arguments."""
    from madqa.cli.run_cmd import add_ray_options

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("config", type=Path, metavar="CONFIG.yaml", help="the YAML file of configurations (below)")
    parser.add_argument("--retry-errors", action="store_true", help="also rerun questions that ended with an error")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these configurations")
    parser.add_argument("--dry-run", action="store_true", help="check the file and list the configurations")
    conventions.add_no_progress_flag(parser)
    conventions.add_json_flag(parser, "the summary")
    add_ray_options(parser)


def _close(key: str, allowed: set[str]) -> str:
    """A did-you-mean for a misspelt field, and the list of fields."""
    from madqa.agents.harness.options import suggest

    close = suggest(key, sorted(allowed))
    return (f"; did you mean {close!r}?" if close else "") + f" (allowed: {', '.join(sorted(allowed))})"


def load_sweep(path: Path) -> list[SweepEntry]:
    """The configurations of a sweep file, each checked (settings, agent, model spec).

    Raises:
        UserError: the file cannot be read, or a configuration is invalid (the message names it and the field).
    """
    import yaml

    from madqa.agents.harness.registry import check_config, option_owners
    from madqa.agents.harness.runner import RunConfig, RunError
    from madqa.agents.models.factory import parse_spec

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"{path}{where}: not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("configurations"), list) or not data["configurations"]:
        raise UserError(f"{path}: expected a mapping with a non-empty list `configurations`")
    run_fields = {f.name for f in dataclasses.fields(RunConfig)} - {"options"}
    owners = option_owners()
    allowed = run_fields | set(EXTRA_FIELDS) | set(owners)
    defaults = {k: v for k, v in data.items() if k not in TOP_FIELDS}
    for key in defaults:
        if key not in allowed or key in ("name", "output"):
            raise UserError(f"{path}: unknown top-level field {key!r}{_close(key, allowed)}")
    out_dir = path.parent / str(data.get("output_dir") or ".")
    entries: list[SweepEntry] = []
    for index, raw in enumerate(data["configurations"]):
        where = f"{path}: configurations[{index}]"
        if not isinstance(raw, dict):
            raise UserError(f"{where}: expected a mapping of fields")
        agent = str(raw.get("agent", defaults.get("agent", "bm25")))
        # a default agent option applies where the configuration's agent has it
        shared = {k: v for k, v in defaults.items() if k not in owners or agent in owners[k]}
        merged = {**shared, **raw}
        name = str(merged.get("name") or f"{merged.get('agent', 'bm25')}-{index + 1}")
        if not _NAME.fullmatch(name):
            raise UserError(f"{where}: name {name!r} must be letters, digits, '.', '_' or '-' (it names a file)")
        where = f"{where} ({name})"
        unknown = sorted(set(merged) - allowed)
        if unknown:
            raise UserError(f"{where}: unknown field {unknown[0]!r}{_close(unknown[0], allowed)}")
        try:
            options = {k: v for k, v in merged.items() if k not in run_fields and k not in EXTRA_FIELDS}
            config = RunConfig(**{k: v for k, v in merged.items() if k in run_fields}, options=options)
            check_config(config)
            parse_spec(str(config.model))
        except (RunError, ValueError, TypeError) as exc:
            raise UserError(f"{where}: {exc}") from None
        workers = merged.get("workers", 1)
        if not isinstance(workers, int) or workers < 1:
            raise UserError(f"{where}: workers must be a positive integer")
        if merged.get("output"):
            output = Path(str(merged["output"]))
            output = output if output.is_absolute() else path.parent / output
        else:
            output = out_dir / f"{name}.jsonl"
        entries.append(SweepEntry(name, config, output, workers, merged.get("api_base")))
    for kind, values in (("name", [e.name for e in entries]), ("output", [str(e.output) for e in entries])):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise UserError(f"{path}: two configurations share the {kind} {twice[0]!r}")
    return entries


def run_sweep(
    entries: Sequence[SweepEntry], *, backend: Any = None, retry_errors: bool = False, progress: bool = True
) -> list[dict[str, Any]]:
    """Run (or resume) every configuration in turn; one status row per configuration.

    A configuration that cannot run (its file holds another model's results, its dataset is missing …) gets its
    error in its row, and the sweep goes on.
    """
    from madqa.agents.harness.runner import RunError, run_benchmark
    from madqa.cli.run_cmd import _Bar, _gold_variants
    from madqa.loading_script.load import DatasetUnavailableError

    rows = []
    for entry in entries:
        entry.output.parent.mkdir(parents=True, exist_ok=True)
        logger.info("sweep: %s -> %s", entry.name, entry.output)
        bar = _Bar(_gold_variants(entry.config.split, entry.config.dataset), enabled=progress)
        row: dict[str, Any] = {"name": entry.name, "output": str(entry.output), "error": None}
        bar.open(entry.config.limit)  # before the agent is prepared, as `madqa run`'s
        try:
            summary = run_benchmark(
                entry.config,
                entry.output,
                resume=True,
                retry_errors=retry_errors,
                workers=entry.workers,
                progress=bar,
                backend=backend,
                model_options={"api_base": entry.api_base} if entry.api_base else {},
            )
            row.update(
                selected=summary.selected, skipped=summary.skipped, written=summary.written, errors=summary.errors
            )
        except (RunError, DatasetUnavailableError, ValueError) as exc:
            logger.error("sweep: %s could not run: %s", entry.name, exc)
            row["error"] = str(exc)
        finally:
            bar.close()
        rows.append(row)
    return rows


def summarize(entries: Sequence[SweepEntry], rows: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], str]:
    """The ``madqa compare`` comparison of the configurations' results on their gold, or the line counts."""
    runs = [(e, r) for e, r in zip(entries, rows, strict=True) if r["error"] is None and e.output.exists()]
    splits = {(e.config.split, e.config.dataset) for e, _ in runs}
    counts = "\n".join(
        f"{r['name']}: FAILED: {r['error']}"
        if r["error"]
        else f"{r['name']}: {r['written']} new line(s), {r['skipped']} already there, {r['errors']} "
        f"error(s) -> {r['output']}"
        for r in rows
    )
    result: dict[str, Any] = {"configurations": list(rows)}
    if not runs or len(splits) != 1 or next(iter(splits))[0] == "test":
        return result, counts + "\n(score test-split runs with `madqa evaluate` where the labels are)"
    from madqa.cli import compare_cmd

    split, dataset = next(iter(splits))
    try:
        outputs, names = [e.output for e, _ in runs], [e.name for e, _ in runs]
        comparison = compare_cmd.score_files(outputs, names, None, split=split, dataset=dataset).result
    except UserError as exc:
        return result, f"{counts}\n(no comparison: {exc})"
    result["comparison"] = comparison
    return result, counts + "\n\n" + compare_cmd.format_comparison(comparison)


def select(entries: Sequence[SweepEntry], only: Sequence[str] | None, config: Path) -> list[SweepEntry]:
    """The configurations named in ``only`` (all when ``None``); a name the file lacks is a user error."""
    if not only:
        return list(entries)
    missing = sorted(set(only) - {e.name for e in entries})
    if missing:
        raise UserError(f"--only {missing[0]}: no configuration of that name in {config}")
    return [e for e in entries if e.name in only]


def sweep(
    config: str | Path,
    *,
    only: Sequence[str] | None = None,
    retry_errors: bool = False,
    progress: bool = True,
    backend: Any = None,
) -> dict[str, Any]:
    """Run (or resume) the configurations of a sweep file: what ``madqa sweep --json`` prints, as a dict.

    ``only`` names the configurations to run (default: all); ``backend`` is a Ray backend (``madqa run --ray``'s;
    ``None``: this process). The dict holds ``configurations`` (one status row each) and, when they share a
    labelled split, ``comparison`` (``madqa compare``'s). Raises :class:`~madqa.cli.errors.UserError` for a
    mistake in the file, before any question runs.
    """
    path = Path(config)
    entries = select(load_sweep(path), only, path)
    return _sweep_entries(entries, retry_errors=retry_errors, progress=progress, backend=backend)[0]


def _sweep_entries(
    entries: Sequence[SweepEntry], *, retry_errors: bool, progress: bool, backend: Any
) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    if backend is not None:
        from madqa.loading_script.ray_cluster import ray_session

        with ray_session(backend.address):  # one connection for the whole sweep
            rows = run_sweep(entries, backend=backend, retry_errors=retry_errors, progress=progress)
    else:
        rows = run_sweep(entries, retry_errors=retry_errors, progress=progress)
    result, text = summarize(entries, rows)
    return result, text, rows


def run(args: argparse.Namespace) -> int:
    """Check the file, run every configuration, print the summary table."""
    from madqa.cli.run_cmd import ray_backend

    entries = select(load_sweep(args.config), args.only, args.config)
    if args.dry_run:
        for e in entries:
            logger.info("%s: agent %s, model %s -> %s", e.name, e.config.agent, e.config.model, e.output)
        return 0
    result, text, rows = _sweep_entries(
        entries, retry_errors=args.retry_errors, progress=not args.no_progress, backend=ray_backend(args)
    )
    if args.json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, default=str) + "\n")
    else:
        sys.stdout.write(text + "\n")
    return 1 if any(r["error"] for r in rows) else 0
