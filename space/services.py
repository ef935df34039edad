"""Wire the Space's parts from a :class:`SpaceConfig`: store (+ Hub mirror), scorer, rate limiter, seeding.

Called by ``app.main`` and ``madqa space`` at start-up, never at import.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import SpaceConfig
from .hub import HubMirror, download_labels, restore_from_hub
from .practice_runs import PracticeShelf
from .storage import SubmissionStore
from .submission import RateLimiter, Scorer

logger = logging.getLogger(__name__)


@dataclass
class Services:
    """Everything the UI handlers use."""

    config: SpaceConfig
    store: SubmissionStore
    scorer: Scorer
    limiter: RateLimiter
    practice: PracticeShelf | None = None


def _other_split_ids(dataset: str) -> dict[str, str]:
    from madqa.loading_script.load import load_questions

    out: dict[str, str] = {}
    for split in ("train", "dev"):
        try:
            out.update({str(q["id"]): split for q in load_questions(split, dataset)})
        except Exception as exc:  # noqa: BLE001 - only used to word rejections better
            logger.warning("could not read the %s ids of %s: %s", split, dataset, exc)
    return out


def _judge(config: SpaceConfig) -> Any:
    if not config.judge_model:
        return None
    from madqa.agents.models.factory import make_model
    from madqa.metric.judge import Judge

    cache = config.db_path.parent / "judge_cache.jsonl"
    return Judge(make_model(config.judge_model), config.judge_model, cache)


def labels_file(config: SpaceConfig) -> Path:
    """The private labels file: the configured path, else a download from the private labels repo."""
    if config.labels_path.is_file() or not config.labels_repo:
        return config.labels_path
    return download_labels(config.labels_repo, config.hub_token, config.db_path.parent / "private")


def create_services(config: SpaceConfig, *, seed: bool = True, hub_api: Any = None) -> Services:
    """Open the store, load the private labels, build the scorer and seed an empty board (when ``seed``)."""
    mirror = None
    if config.hub_repo and config.hub_token:
        mirror = HubMirror(config.hub_repo, config.hub_token, config.db_path.parent / "mirror", api=hub_api)
    store = SubmissionStore(config.db_path)
    if mirror is not None:
        try:  # a fresh Space (no persistent disk) gets its board back from the mirror dataset
            restored = restore_from_hub(store, mirror.repo_id, mirror.token, config.db_path.parent / "restore")
            logger.info("restored %d submission(s) from %s", restored, mirror.repo_id)
        except Exception as exc:  # noqa: BLE001 - the local store keeps working
            logger.warning("could not restore the board from %s: %s", mirror.repo_id, exc)
        store.mirror = mirror
    scorer = Scorer.from_labels(
        labels_file(config),
        store,
        other_split_ids=_other_split_ids(config.dataset),
        mode=config.mode,
        judge=_judge(config),
        n_resamples=config.n_resamples,
        max_bytes=config.max_file_bytes,
        private_share=config.private_share,
    )
    if config.score_workers and scorer.judge is None:
        scorer.use_pools(config.score_workers, config.score_cpu_s)
    resumed = scorer.resume_private()
    if resumed:
        logger.info("scoring the private part of %d submission(s) left by the previous process", resumed)
    if seed:
        from .seed import seed_board

        # The baselines are our own small files: scored here (milliseconds each), so the start-up does not wait
        # for a just-spawned scoring process to import the metric (issue 47). Nothing else scores yet (the server
        # is not serving), and their private parts still go to the private part's process.
        public_pool, scorer.pool = scorer.pool, None
        try:
            seed_board(scorer, config.dataset, config.db_path.parent / "seed_results")
        except Exception as exc:  # noqa: BLE001 - an unseeded board is still a working board
            logger.warning("could not seed the board: %s", exc)
        finally:
            scorer.pool = public_pool
    limiter = RateLimiter(config.rate_limit, config.rate_window_s)
    practice = PracticeShelf(config.db_path, limiter, login_required=config.on_spaces)
    return Services(config, store, scorer, limiter, practice)
