"""The numbers behind the paper's search-dynamics figures (H.5, H.6), response time (§5.2) and evidence distance (H.1).

Each function turns :class:`~.paper_data.PaperRuns` into one :class:`~.paper_data.Figure` through the metric's pure
functions (:mod:`madqa.metric.dynamics`, :mod:`madqa.metric.correlates`). Embeddings come from an injected
``embed(texts) -> vectors`` (``madqa figures --embedder``, default the offline ``wordllama``); page texts from the
dataset's ``pages`` config, passed in by the caller. A figure whose input is missing (no run with a
``search_history`` that records the pages each query returned, no embedder, no page texts, no elapsed times) is
skipped with the reason, and a run left out of a drawn figure is named with why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from madqa.metric import dynamics
from madqa.metric.correlates import distance_vs_accuracy, elapsed_seconds, hop_distance, time_vs_accuracy
from madqa.metric.difficulty import item_p_values
from madqa.metric.dynamics import (
    Trajectory,
    drift_accuracy_correlation,
    drift_by_system,
    recovery_after_failure,
    retrieval_by_iteration,
    single_vs_multi_query,
    trajectory_drift,
)
from madqa.metric.schema import Citation
from madqa.metric.scoring import doc_key

from .paper_data import Figure, PaperRuns, plain

#: ``embed(texts)`` → one vector per text (rows), as :mod:`madqa.agents.corpus.embeddings` embedders give.
Embed = Callable[[list[str]], Any]


class FiguresError(ValueError):
    """A run whose lines the figures cannot read (the message names the run)."""


def trajectories(runs: PaperRuns, name: str) -> list[Trajectory]:
    """One :class:`~madqa.metric.dynamics.Trajectory` per gold item of run ``name`` (no line: no history).

    Raises:
        FiguresError: a ``search_history`` the metric cannot read.
    """
    try:
        return dynamics.trajectories(list(runs.records[name].values()), runs.items[name])
    except ValueError as exc:
        raise FiguresError(f"run {name}: {exc}") from None


def _evidence(runs: PaperRuns) -> dict[str, tuple[Citation, ...]]:
    return {r.id: r.evidence for r in runs.references}


def _no_usable(traj: Sequence[Trajectory]) -> str:
    if all(t.searches is None for t in traj):
        return "no search_history"
    return "its search_history does not record the pages each query returned"


def retrieval(runs: PaperRuns) -> tuple[Figure, Figure]:
    """Fig. 23 (document and page found by search iteration) and Fig. 24 (recovery after a failed first query)."""
    curves = Figure("retrieval_by_iteration", "Gold document / page found by search iteration", "Fig. 23 (H.5)")
    recovery = Figure("recovery", "Recovery after a failed first query", "Fig. 24 (H.5)")
    evidence = _evidence(runs)
    for name in runs.names:
        traj = trajectories(runs, name)
        curve = retrieval_by_iteration(traj, evidence)
        if curve.n == 0:
            curves.skipped_systems[name] = recovery.skipped_systems[name] = _no_usable(traj)
            continue
        curves.data[name] = plain(curve)
        rec = recovery_after_failure(traj, evidence, level="document")
        page = recovery_after_failure(traj, evidence, level="page")
        recovery.data[name] = {"document": plain(rec), "page": plain(page)}
        if rec.n_failed_first == 0:
            recovery.skipped_systems[name] = "no first query missed the gold document"
    if not curves.data:
        reason = "no run has a search_history with the pages each query returned"
        return curves.skip(reason), recovery.skip(reason)
    if all(v["document"]["n_failed_first"] == 0 for v in recovery.data.values()):
        recovery.skip("no run's first query missed the gold document: nothing to recover from")
    return curves, recovery


def single_multi(runs: PaperRuns) -> Figure:
    """H.6: accuracy on items answered with one query against items with several, per run."""
    fig = Figure("single_vs_multi_query", "Single- vs multi-query accuracy", "H.6")
    for name in runs.names:
        traj = trajectories(runs, name)
        result = single_vs_multi_query(traj)
        if result.n_no_history == len(traj):
            fig.skipped_systems[name] = "no search_history"
            continue
        fig.data[name] = plain(result)
    if not fig.data:
        return fig.skip("no run has a search_history")
    return fig


def _vectors(embed: Embed, texts: Sequence[str]) -> dict[str, np.ndarray]:
    unique = list(dict.fromkeys(texts))
    if not unique:
        return {}
    matrix = np.asarray(embed(unique), dtype=np.float64)
    if matrix.shape[0] != len(unique):
        raise ValueError(f"the embedder returned {matrix.shape[0]} vectors for {len(unique)} texts")
    return {t: matrix[i] for i, t in enumerate(unique) if float(np.linalg.norm(matrix[i])) > 0}


def drift(runs: PaperRuns, embed: Embed | None, embed_reason: str | None = None) -> tuple[Figure, Figure]:
    """Fig. 25 (mean drift per step of each trajectory, by run) and Fig. 26 (median drift against accuracy)."""
    dist = Figure("drift", "Query reformulation drift per system", "Fig. 25 (H.6)")
    corr = Figure("drift_vs_accuracy", "Reformulation drift vs accuracy", "Fig. 26 (H.6)")
    if embed is None:
        reason = f"no embedder: {embed_reason or 'none given'}"
        return dist.skip(reason), corr.skip(reason)
    histories = {n: trajectories(runs, n) for n in runs.names}
    queries = [s.query for traj in histories.values() for t in traj for s in t.searches or ()]
    vectors = _vectors(embed, queries)
    drifts: dict[str, list[float | None]] = {}
    per_item: dict[str, dict[str, Any]] = {}
    for name, traj in histories.items():
        if all(t.searches is None for t in traj):
            dist.skipped_systems[name] = corr.skipped_systems[name] = "no search_history"
            continue
        values: list[float | None] = []
        for t in traj:
            qs = [s.query for s in t.searches or ()]
            values.append(trajectory_drift([vectors[q] for q in qs]) if all(q in vectors for q in qs) else None)
        drifts[name] = values
        per_item[name] = {
            t.id: {"drift": d, "correct": t.correct, "queries": len(t.searches or ())}
            for t, d in zip(traj, values, strict=True)
        }
    summaries = drift_by_system(drifts)
    for name, summary in summaries.items():
        if summary.n == 0:
            dist.skipped_systems[name] = corr.skipped_systems[name] = "no trajectory with two or more queries"
    kept = {n: s for n, s in summaries.items() if s.n > 0}
    accuracy = {n: runs.reports[n]["accuracy"] for n in kept}
    dist.data = {
        "summaries": plain(kept),
        "items": per_item,
        "definition": "mean over consecutive query pairs of 1 - cos(q_i, q_i+1); None with fewer than two queries",
    }
    corr.data = {
        "points": {
            n: {"median_drift": s.median, "mean_drift": s.mean, "accuracy": accuracy[n], "human": runs.human[n]}
            for n, s in kept.items()
        },
        "median": plain(drift_accuracy_correlation(kept, accuracy, statistic="median")),
        "mean": plain(drift_accuracy_correlation(kept, accuracy, statistic="mean")),
    }
    if not kept:
        reason = "no run has a trajectory with two or more queries"
        return dist.skip(reason), corr.skip(reason)
    return dist, corr


def response_time(runs: PaperRuns) -> Figure:
    """§5.2: accuracy by response-time bin (``elapsed_s``) and the time/correctness correlation, per run."""
    fig = Figure("response_time", "Response time vs accuracy", "§5.2")
    for name in runs.names:
        records = runs.records[name]
        seconds = [elapsed_seconds(records[it.id]) if it.id in records else None for it in runs.items[name]]
        if all(s is None for s in seconds):
            fig.skipped_systems[name] = "no elapsed_s (or started_at/ended_at) in its lines"
            continue
        fig.data[name] = {
            "human": runs.human[name],
            **plain(time_vs_accuracy(seconds, [it.correct for it in runs.items[name]])),
        }
    if not fig.data:
        return fig.skip("no run records response times")
    return fig


def evidence_distance(
    runs: PaperRuns,
    embed: Embed | None,
    page_texts: Mapping[tuple[str, int], str] | None,
    *,
    embed_reason: str | None = None,
    pages_reason: str | None = None,
) -> Figure:
    """H.1: accuracy (share of model runs correct) by semantic distance of multi-hop evidence, and page gap."""
    fig = Figure("evidence_distance", "Semantic vs physical distance of multi-hop evidence", "H.1 (Fig. 15)")
    if embed is None:
        return fig.skip(f"no embedder: {embed_reason or 'none given'}")
    if page_texts is None:
        return fig.skip(f"no page texts: {pages_reason or 'none given'}")
    multi = [r for r in runs.references if r.hop_type != "single"]
    if not multi:
        return fig.skip("the split has no multi-hop question")
    wanted = sorted({(doc_key(c.document), c.page) for r in multi for c in r.evidence if c.page is not None})
    texts = {key: page_texts[key] for key in wanted if (page_texts.get(key) or "").strip()}
    vectors = _vectors(embed, list(texts.values()))
    embeddings = {key: vectors[t] for key, t in texts.items() if t in vectors}
    distances = {r.id: hop_distance(r.evidence, embeddings) for r in multi}
    systems = runs.models or runs.names
    pv = item_p_values({n: {it.id: it.correct for it in runs.items[n]} for n in systems}).by_id()
    accuracy = {q: pv[q].p if q in pv else None for q in distances}
    fig.data = {
        "systems": systems,
        "n_multi_hop": len(multi),
        "n_pages_without_text": len(wanted) - len(texts),
        "questions": {
            q: None
            if d is None
            else {
                "same_document": d.same_document,
                "semantic": d.semantic,
                "physical": d.physical,
                "accuracy": accuracy[q],
            }
            for q, d in distances.items()
        },
        "same_document": plain(distance_vs_accuracy(distances, accuracy, same_document=True)),
        "cross_document": plain(distance_vs_accuracy(distances, accuracy, same_document=False)),
        "note": "accuracy of a question: the share of the model runs that answered it correctly",
    }
    if all(d is None for d in distances.values()):
        return fig.skip("no multi-hop question has text on two or more of its evidence pages")
    return fig


def build_dynamics(
    runs: PaperRuns,
    embed: Embed | None,
    page_texts: Mapping[tuple[str, int], str] | None,
    *,
    embed_reason: str | None = None,
    pages_reason: str | None = None,
) -> list[Figure]:
    """Every figure of this module, in the paper's order."""
    curves, recovery = retrieval(runs)
    dist, corr = drift(runs, embed, embed_reason)
    distance = evidence_distance(runs, embed, page_texts, embed_reason=embed_reason, pages_reason=pages_reason)
    return [curves, recovery, single_multi(runs), dist, corr, response_time(runs), distance]
