"""Widget of the MADQA metric Space: upload a results file, pick a public split, read the report and plots.

On a metric Space the repository root *is* this folder (``madqa publish metric``), so this file runs flat with
``python app.py``: no ``madqa`` package, one relative import (below). It loads the metric the way any user would,
``evaluate.load("<this folder>/madqa.py")``, and scores with its ``compute``. Only to name the line and field of a
bad file does it call the loaded metric's own validators (``inputs.parse_results_text`` and
``matching.match_predictions``, the modules evaluate copied next to the script), so the messages are the metric's.

Gold questions come from the public dev and train splits: of ``$MADQA_DATASET`` when it names a local dataset
folder (its README's ``configs:`` are read, as the ``datasets`` parquet builder would), else of the Hub dataset it
names, else of ``OxRML/MADQA``. The test split is never offered: its labels are hidden (score it on the
leaderboard Space). Accuracy is ANLS*-thresholded here; the LLM-judge mode needs a model and runs locally.

Uploads pass the gate of ``upload_gate.py`` (results files by the names gradio stores, within
:data:`MAX_FILE_BYTES`; the same gate as the leaderboard Space's), and each upload is deleted once it is scored,
accepted or not; uploads never scored are deleted by gradio's ``delete_cache`` after an hour. ``upload_gate`` is
the one sibling this file imports: run flat, the folder is made a package first so the relative import resolves
(``madqa publish metric`` stages the relative imports of ``app.py``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import inspect
import logging
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any


def _flat_package(folder: Path) -> str:
    """Register ``folder`` as the package ``madqa_metric_widget`` (for a flat run) and return that name."""
    name = "madqa_metric_widget"
    if name not in sys.modules:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        sys.modules[name] = importlib.util.module_from_spec(spec)
    return name


if not __package__:  # run flat (``python app.py``, as on the metric Space): this folder's files form one package
    __package__ = _flat_package(Path(__file__).resolve().parent)

from .upload_gate import RESULTS_SUFFIXES, UploadGate, discard_upload  # noqa: E402

logger = logging.getLogger("madqa.metric.app")

METRIC_DIR = Path(__file__).resolve().parent
HUB_DATASET = "OxRML/MADQA"
ENV_DATASET = "MADQA_DATASET"
#: Splits whose labels are public; the test split's are hidden and never offered.
PUBLIC_SPLITS = ("dev", "train")
HIDDEN_SPLIT = "test"
#: Upload limit (enforced by gradio on upload, and again here).
MAX_FILE_BYTES = 25 * 1024 * 1024
#: Gold fields the metric reads (others, such as document metadata, are left out).
GOLD_FIELDS = ("id", "question", "answer_variants", "evidence", "hop_type", "domain", "document_category")

_COMPUTE_LOCK = threading.Lock()  # an evaluate.Metric instance keeps per-call state: one compute at a time

INTRO = """\
# MADQA metric

Score a results file (JSONL, one line per question: `id`, `answer`, `citations`, `search_history` or `steps`)
against the public **dev** or **train** split. The report gives accuracy (ANLS* ≥ 0.5) with its 95% CI, ANLS*,
Page F1, Doc F1, the Kuiper statistic of effort calibration, coverage, and the per-item curves behind it.

The **test** split is not offered: its labels are hidden. Submit test results to the MADQA leaderboard Space.
The LLM-judge accuracy needs a model: run `madqa evaluate --mode judge` locally.
"""


class WidgetError(Exception):
    """A problem to show the user as text (never a traceback); ``problems`` are the metric's own messages."""

    def __init__(self, message: str, problems: list[str] | None = None, count: int | None = None):
        super().__init__(message)
        self.problems = list(problems or [])
        self.count = count if count is not None else len(self.problems)


def dataset_spec() -> str:
    """Where gold comes from: ``$MADQA_DATASET`` (a local folder or Hub id), else the public release."""
    return os.environ.get(ENV_DATASET, "").strip() or HUB_DATASET


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def local_split_files(folder: Path, split: str, config: str = "default") -> list[Path]:
    """Parquet files of ``split`` in ``config``, from the ``configs:`` of the folder's README front matter."""
    import yaml

    readme = folder / "README.md"
    if not readme.is_file():
        raise WidgetError(f"{folder} has no README.md with `configs:` (not a dataset folder)")
    text = readme.read_text(encoding="utf-8")
    meta = yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else None
    configs = [c for c in (meta or {}).get("configs", []) if isinstance(c, dict) and c.get("config_name") == config]
    if not configs:
        raise WidgetError(f"{readme} declares no config '{config}'")
    for spec in configs[0].get("data_files", []):
        if spec.get("split") == split:
            patterns = spec["path"] if isinstance(spec["path"], list) else [spec["path"]]
            files = sorted({p for pattern in patterns for p in folder.glob(pattern)})
            if not files:
                raise WidgetError(f"{folder}: no file matches {patterns} (split '{split}')")
            return files
    raise WidgetError(f"{folder}: config '{config}' has no split '{split}'")


@functools.lru_cache(maxsize=8)
def read_gold(spec: str, split: str) -> tuple[dict[str, Any], ...]:
    """The labelled questions of a public split (cached; errors are not)."""
    if split == HIDDEN_SPLIT:
        raise WidgetError("the test split's labels are hidden: submit test results to the MADQA leaderboard Space")
    if split not in PUBLIC_SPLITS:
        raise WidgetError(f"unknown split {split!r}: choose {' or '.join(PUBLIC_SPLITS)}")
    folder = Path(spec).expanduser()
    try:
        if folder.is_dir():
            import pyarrow.parquet as pq

            rows = [r for f in local_split_files(folder, split) for r in pq.read_table(f).to_pylist()]
        else:
            import datasets

            rows = list(datasets.load_dataset(spec, "default", split=split))
    except WidgetError:
        raise
    except Exception as exc:  # network, missing repo, bad parquet: one line for the user, details in the log
        logger.warning("cannot load split %s of %s", split, spec, exc_info=True)
        raise WidgetError(f"cannot load split '{split}' of {spec}: {_one_line(exc)}") from None
    if not rows:
        raise WidgetError(f"split '{split}' of {spec} has no questions")
    return tuple({k: row.get(k) for k in GOLD_FIELDS} for row in rows)


@functools.lru_cache(maxsize=1)
def load_metric() -> Any:
    """The metric, loaded from this folder's script as ``evaluate.load`` loads any local metric."""
    from .light_import import import_evaluate

    return import_evaluate().load(str(METRIC_DIR / "madqa.py"), keep_in_memory=True)


def metric_module(metric: Any, name: str) -> Any:
    """A sibling module of the loaded script (evaluate copied it next to ``madqa.py`` in one package)."""
    package = type(metric).__module__.rpartition(".")[0]
    return importlib.import_module(f"{package}.{name}" if package else name)


def read_upload(path: str | os.PathLike[str]) -> str:
    """The uploaded file as text (size and encoding checked)."""
    file = Path(path)
    size = file.stat().st_size
    if size > MAX_FILE_BYTES:
        raise WidgetError(f"{file.name}: {size} bytes; the limit is {MAX_FILE_BYTES} bytes")
    try:
        return file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WidgetError(f"{file.name}: not UTF-8 text ({exc})") from None


def score_text(text: str, source: str, split: str, spec: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Score a results text against a public split: ``(compute's report, notes about the file)``.

    Lines that match no gold question are ignored by the metric; they are dropped before ``compute`` (which needs
    at most one prediction per reference) and listed in the notes. The metric's input warnings (lines without
    ``answer``, pages above the cap, misspelt field names) are the file's, as ``madqa evaluate`` gives them: every
    line counted, each message naming the file's line. They replace the report's ``input_notes`` and ``warnings``
    (compute saw only the matching lines, named ``predictions[i]``) and are in the notes as ``warnings``. Raises
    :class:`WidgetError` for a bad file.
    """
    spec = spec or dataset_spec()
    gold = list(read_gold(spec, split))
    metric = load_metric()
    inputs, matching, jsonl = (metric_module(metric, n) for n in ("inputs", "matching", "jsonl"))
    try:
        references = inputs.parse_references(gold, f"split {split} of {spec}")
    except inputs.InputError as exc:  # the dataset's fault, not the file's
        raise WidgetError(f"the gold of split '{split}' cannot be used: {_one_line(exc)}") from None
    try:
        parsed = inputs.parse_results(text, source)
        match = matching.match_predictions(parsed.predictions, references)
    except inputs.InputError as exc:
        raise WidgetError(f"{source}: {exc.count} problem(s); nothing was scored", exc.problems, exc.count) from None
    rows = [value for _, value in jsonl.read_jsonl_text(text, source)]
    kept = sorted(pos for pos in match.orders if pos >= 0)  # file order, so kuiper_order="file" still holds
    padded = [rows[pos] for pos in kept] + [None] * (len(gold) - len(kept))
    try:
        with _COMPUTE_LOCK:
            report = metric.compute(predictions=padded, references=gold)
    except ValueError as exc:  # the metric's InputError is a ValueError
        raise WidgetError(f"{source}: nothing was scored: {_one_line(exc)}") from None
    warnings = parsed.notes.warnings()  # from the file alone
    report = {**report, "input_notes": parsed.notes.summary(), "warnings": warnings}
    notes = {
        "source": source,
        "lines": len(rows),
        "unknown": list(match.unknown),
        "split": split,
        "dataset": spec,
        "warnings": warnings,
    }
    return report, notes


def _pct(value: Any) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _num(value: Any, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(pair: Any, pct: bool = True) -> str:
    if not pair:
        return "—"
    return f"[{_pct(pair[0])}, {_pct(pair[1])}]" if pct else f"[{_num(pair[0])}, {_num(pair[1])}]"


def _plain(text: str) -> str:
    """Text safe inside a Markdown code span (an uploaded file's name may hold backticks)."""
    return text.replace("`", "'")


def _fenced(lines: list[str]) -> str:
    """Lines in a code fence longer than any backtick run inside (user text is shown verbatim, not rendered)."""
    body = "\n".join(lines)
    runs = [len(r) for r in re.findall(r"`+", body)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}text\n{body}\n{fence}"


def format_error(error: WidgetError) -> str:
    """Markdown for a file that could not be scored: the summary and the metric's own line/field messages."""
    parts = [f"**Not scored.** {error}"]
    if error.problems:
        more = error.count - len(error.problems)
        parts.append(_fenced(error.problems + ([f"… and {more} more problem(s)"] if more > 0 else [])))
    return "\n\n".join(parts)


def format_report(report: dict[str, Any], notes: dict[str, Any]) -> str:
    """Markdown of compute's report: headline metrics, coverage, input warnings, breakdown by hop type, errors."""
    r = report
    rows = [
        ("Accuracy (ANLS* ≥ 0.5)", _pct(r["accuracy"]), _ci(r["accuracy_ci"])),
        ("ANLS*", _pct(r["anls"]), ""),
        ("Page F1", _pct(r["page_f1"]), ""),
        ("Doc F1", _pct(r["doc_f1"]), ""),
        (
            "Kuiper (effort calibration)",
            f"{_num(r['kuiper'])} (K/N {_num(r['kuiper_normalized'], 4)})",
            _ci(r["kuiper_ci"], pct=False),
        ),
        ("Wasted-effort ratio", _num(r["wasted_effort_ratio"]), ""),
    ]
    unknown = notes["unknown"]
    lines = [
        f"### `{_plain(notes['source'])}` on the {notes['split']} split of `{_plain(notes['dataset'])}`",
        "",
        "| metric | value | 95% CI |",
        "| --- | --- | --- |",
        *[f"| {name} | {value} | {ci} |" for name, value, ci in rows],
        "",
        f"**Coverage:** {r['n_predicted']} of {r['n']} questions answered ({_pct(r['n_predicted'] / r['n'])}); "
        f"{r['missing']} missing (scored incorrect); {notes['lines']} lines read; "
        f"{len(unknown)} line(s) match no question of this split (ignored); "
        f"{r['matched_by_question']} matched by question text; {r['unscored']} unscored; "
        f"{r['kuiper_excluded']} without effort (left out of Kuiper).",
    ]
    if unknown and r["n_predicted"] == 0:
        lines.append(f"\n**No line matches a question of the {notes['split']} split.** Is it the right split?")
    if unknown:
        shown = ", ".join(str(u)[:80] for u in unknown[:5]) + (" …" if len(unknown) > 5 else "")
        lines.append(_fenced([f"ignored: {shown}"]))
    warnings = notes.get("warnings") or []
    if warnings:  # they quote the file's field names: shown verbatim in a fence, never rendered
        lines += ["", f"**Warnings** ({len(warnings)}; the file was scored anyway):", _fenced(list(warnings))]
    lines += ["", "| hop type | n | accuracy | Page F1 | Doc F1 |", "| --- | --- | --- | --- | --- |"]
    for name, g in r["by_hop"].items():
        lines.append(f"| {name} | {g['n']} | {_pct(g['accuracy'])} | {_pct(g['page_f1'])} | {_pct(g['doc_f1'])} |")
    errors = r["errors"]
    parts = [f"{k} {v}" for k, v in errors["counts"].items() if v]
    lines += ["", f"**Errors** ({errors['n_incorrect']} incorrect): " + (", ".join(parts) or "none")]
    return "\n".join(lines)


def plot_report(report: dict[str, Any]) -> Any:
    """Two panels from compute's plot data: the Kuiper cumulative-difference curve and accuracy by step budget."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(10, 3.8))
    left, right = fig.subplots(1, 2)
    curve = report["kuiper_curve"]
    if report["kuiper_n"]:
        left.plot(curve["k"], curve["d"], marker=".", color="tab:blue")
        left.axhline(0.0, color="grey", linewidth=0.8)
        left.set_title(f"Kuiper cumulative difference (K = {_num(report['kuiper'])})")
    else:
        left.text(0.5, 0.5, "no effort (steps) in the file", ha="center", va="center", transform=left.transAxes)
        left.set_title("Kuiper cumulative difference")
    left.set_xlabel("items sorted by effort (search steps)")
    left.set_ylabel("cumulative difference D_k")
    budget = report["budget_curve"]
    if budget:
        right.step([p["budget"] for p in budget], [100 * p["accuracy"] for p in budget], where="post", marker=".")
        right.xaxis.set_major_locator(MaxNLocator(integer=True))
        right.set_ylim(0, 100)
    right.set_title("Accuracy by step budget")
    right.set_xlabel("step budget N")
    right.set_ylabel("accuracy within budget (%)")
    fig.tight_layout()
    return fig


def score(file: Any, split: str) -> tuple[str, Any, dict[str, Any]]:
    """The button's handler: ``(markdown, figure or None, JSON)``; every failure becomes text, never a traceback."""
    path = None if not file else Path(file if isinstance(file, (str, os.PathLike)) else file.name)
    try:
        if path is None:
            raise WidgetError("upload a results file (.jsonl) first")
        if not path.name.lower().endswith(RESULTS_SUFFIXES):
            raise WidgetError(f"{path.name}: only results files ({', '.join(RESULTS_SUFFIXES)}) are scored")
        report, notes = score_text(read_upload(path), path.name, split)
        return format_report(report, notes), plot_report(report), report
    except WidgetError as exc:
        return format_error(exc), None, {"error": str(exc), "problems": exc.problems, "problem_count": exc.count}
    except Exception as exc:  # a bug, not the user's fault: log it, show one line
        logger.exception("scoring failed")
        return f"**Internal error:** {_one_line(exc)}", None, {"error": _one_line(exc)}
    finally:
        discard_upload(path)  # the server's copy (only files under gradio's upload folder are touched)


def build_demo() -> Any:
    """The Blocks app (not launched)."""
    import gradio as gr

    with gr.Blocks(title="MADQA metric", delete_cache=(3600, 3600)) as demo:
        gr.Markdown(INTRO)
        with gr.Row():
            upload = gr.File(label="results JSONL", file_types=[*RESULTS_SUFFIXES], type="filepath", elem_id="upload")
            split = gr.Dropdown(
                choices=list(PUBLIC_SPLITS),
                value=PUBLIC_SPLITS[0],
                label="Split (public labels)",
                info=f"Gold questions from {dataset_spec()}; the test split's labels are hidden.",
                elem_id="split",
            )
        run = gr.Button("Score", variant="primary", elem_id="score")
        report = gr.Markdown(elem_id="report")
        figure = gr.Plot(label="Curves", elem_id="curves")
        raw = gr.JSON(label="Full report (compute output)", elem_id="raw")
        run.click(score, [upload, split], [report, figure, raw], api_name="score", concurrency_limit=2)
    return demo


def launch(**kwargs: Any) -> Any:
    """Build, queue and launch the widget behind the upload gate; ``kwargs`` go to ``Blocks.launch``.

    Args:
        **kwargs: ``Blocks.launch`` arguments (such as ``server_port`` or ``prevent_thread_lock``).

    Returns:
        The launched ``gr.Blocks``.
    """
    from starlette.middleware import Middleware

    demo = build_demo()
    demo.queue(default_concurrency_limit=2)
    app_kwargs = dict(kwargs.pop("app_kwargs", None) or {})
    app_kwargs["middleware"] = [*app_kwargs.get("middleware", []), Middleware(UploadGate, max_bytes=MAX_FILE_BYTES)]
    # gradio's own check of the local URL gives up after one 3 s HEAD, which a busy machine can miss although the
    # server is up (issue 39); launch() has already awaited the server's start-up events. The harness's apps do the
    # same through madqa.space.gradio_launch, which this self-contained folder cannot import.
    if "_frontend" in inspect.signature(demo.launch).parameters:
        kwargs["_frontend"] = False
    demo.launch(max_file_size=MAX_FILE_BYTES, app_kwargs=app_kwargs, **kwargs)
    return demo


def main() -> None:
    """``python app.py``: launch the widget (port and host from GRADIO_SERVER_PORT / GRADIO_SERVER_NAME)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    launch()


if __name__ == "__main__":
    main()
