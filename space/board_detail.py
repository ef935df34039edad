"""One board row in full: the detail panel shown when a row of the live board is selected (pure, Markdown).

Everything comes from the stored submission: its form (the contact is never shown), its public report
(:func:`.disclosure.public_report`: aggregates only, groups under :data:`.disclosure.MIN_GROUP` items withheld)
and the input warnings it was accepted with. Text from the form is escaped, so a name cannot format the panel; the
traces URL, when given, is a link written by :func:`.traces_link.traces_anchor` (checked again, escaped, new tab).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from madqa.metric.board_cost import cost_note
from madqa.metric.schema import HOP_TYPES

from .disclosure import BOARD_BUDGETS, MIN_GROUP, input_warnings, public_report
from .display import NONE, interval, number, share, spread, usd
from .storage import ORIGINS, StoredSubmission
from .traces_link import is_traces_url, traces_anchor, traces_label

#: What the form's disclosure fields are called in the panel (the contact is stored but never shown).
DISCLOSURES = (("models_used", "Models used"), ("training_data", "Training data"), ("compute", "Compute budget"))
HOP_NAMES = {"single": "single page", "cross_page": "cross-page (X-Page)", "cross_doc": "cross-document (X-Doc)"}
EMPTY = "Select a row of the board to see its details here: disclosures, per-hop numbers and submission info."


def md_text(text: Any) -> str:
    """``text`` as literal Markdown (backslash-escaped), on one line."""
    flat = " ".join(str(text).split())
    return "".join("\\" + ch if ch in "\\`*_{}[]()#<>|~" else ch for ch in flat)


def _beside(text: str) -> str:
    return f" {text}" if text else ""


def _kuiper_text(r: Mapping[str, Any]) -> str:
    """The Kuiper value with its CI, or "n/a (fixed effort)" where the run's steps do not vary."""
    from madqa.metric.kuiper import NOT_APPLICABLE, not_applicable

    if not_applicable(r):
        return NOT_APPLICABLE
    return number(r.get("kuiper")) + _beside(interval(r.get("kuiper_ci"), shares=False))


def score_lines(report: Mapping[str, Any]) -> list[str]:
    """The headline numbers of a public report, one Markdown table row each."""
    r = report
    se = r.get("accuracy_se")
    steps = r.get("mean_steps")
    rows = [
        (
            "Accuracy",
            share(r.get("accuracy"))
            + ("" if se is None else f" {spread(100 * se)}")
            + _beside(interval(r.get("accuracy_ci"))),
        ),
        ("ANLS*", share(r.get("anls"))),
        ("Page F1", share(r.get("page_f1"))),
        ("Doc F1", share(r.get("doc_f1"))),
        ("Kuiper (↓)", _kuiper_text(r)),
        ("Mean steps", number(steps)),
        ("Coverage", f"{r.get('n_predicted', NONE)} of {r.get('n', NONE)} items answered"),
    ]
    return ["| Score | Value |", "| --- | --- |", *(f"| {name} | {value} |" for name, value in rows)]


def effort_lines(report: Mapping[str, Any], cost: Mapping[str, Any] | None) -> list[str]:
    """More rows of the score table: accuracy within 1, 3 and 10 steps, and the file's inference cost with what it
    is based on (how many lines were priced, the models not priced, the prices' date), or why there is none."""
    budgets = report.get("accuracy_at_budgets") or {}
    rows = [
        f"| Accuracy within {b} step{'s' if b > 1 else ''} | {share(budgets.get(str(b)))} |" for b in BOARD_BUDGETS
    ]
    note = cost_note(cost)
    if cost is None or not note:
        text = note or f"{usd(cost['usd_per_question'])} ({cost.get('n_priced')} of {cost.get('n_lines')} lines priced"
        text += "" if note else f", list prices as of {cost.get('prices_as_of') or 'an undated table'})"
    else:
        models = ", ".join(md_text(str(m)[:80]) for m in (cost.get("unknown_models") or [])[:3])  # the file's own
        text = note + (f": {models}" if models else "")
    return [*rows, f"| Inference cost per question | {text} |"]


def hop_lines(report: Mapping[str, Any]) -> list[str]:
    """Accuracy by hop type where the group is shown; the withheld groups named as such."""
    groups = report.get("by_hop") or {}
    lines = ["| Hop type | Items | Accuracy |", "| --- | --- | --- |"]
    for hop in HOP_TYPES:
        g = groups.get(hop)
        if isinstance(g, Mapping):
            shown = share(g.get("accuracy")) + _beside(interval(g.get("accuracy_ci")))
            lines.append(f"| {HOP_NAMES[hop]} | {g.get('n')} | {shown} |")
        else:
            lines.append(f"| {HOP_NAMES[hop]} | under {MIN_GROUP} | — (withheld) |")
    return lines


def error_line(report: Mapping[str, Any]) -> str:
    """The H.3 error classes of the wrong answers, as counts (empty when not reported)."""
    errors = report.get("errors")
    counts = errors.get("counts") if isinstance(errors, Mapping) else None
    if not isinstance(counts, Mapping) or not counts:
        return ""
    parts = ", ".join(f"{md_text(str(k).replace('_', ' '))} {v}" for k, v in counts.items())
    return f"**Wrong answers by cause** (of {errors.get('n_incorrect', '?')}): {parts}"


def detail_markdown(sub: StoredSubmission | None, rank: int | None = None) -> str:
    """The detail panel of one submission (``None``: the hint to select a row)."""
    if sub is None:
        return EMPTY
    form, report = sub.form, public_report(sub.report)
    where = f"rank {rank} · " if rank is not None else ""
    head = [
        f"### #{sub.id} {md_text(form.get('system', ''))}",
        f"{where}{sub.system_type} · {md_text(ORIGINS.get(sub.origin, sub.origin))} · submitted {sub.created} UTC by "
        f"**{md_text(form.get('submitter', ''))}** · scoring mode `{sub.mode}` · metric {md_text(sub.metric_version)}",
        f"**Agent:** {md_text(form.get('agent', ''))} · **Model:** {md_text(form.get('model', ''))}"
        + traces_line(form.get("traces")),
    ]
    disclosed = [f"- **{label}:** {md_text(form.get(key) or 'not given')}" for key, label in DISCLOSURES]
    parts = [
        head[0],
        head[1],
        "",
        head[2],
        "",
        *score_lines(report),
        *effort_lines(report, sub.cost),
        "",
        *hop_lines(report),
        "",
        "**Disclosures**",
        *disclosed,
    ]
    errors = error_line(report)
    if errors:
        parts += ["", errors]
    warnings = input_warnings(report)
    if warnings:
        parts += ["", "**Scored with warnings:**", *(f"- {md_text(w)}" for w in warnings)]
    return "\n".join(parts)


def traces_line(url: Any) -> str:
    """`` · **Traces:** <link>`` for a stored traces URL that passes today's check, ``""`` otherwise."""
    if not is_traces_url(url):
        return ""
    return f" · **Traces:** {traces_anchor(url, traces_label(url))}"


def submission_of(subs: Sequence[StoredSubmission], row: Sequence[Any] | None, columns: Sequence[str]) -> Any:
    """The submission of a selected board row (its ``#`` cell), or ``None``."""
    if not row or "#" not in columns:
        return None
    try:
        sid = int(row[list(columns).index("#")])
    except (TypeError, ValueError, IndexError):
        return None
    return next((s for s in subs if s.id == sid), None)
