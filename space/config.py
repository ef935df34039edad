"""Settings of the Space, read once from the environment into a frozen dataclass (no clients, no I/O at import).

Environment variables (all optional):

``MADQA_SPACE_DB``            SQLite file of the board (default ``$MADQA_HOME/space/leaderboard.sqlite``).
``MADQA_SPACE_LABELS``        the private test-labels JSONL (default: ``Layout.test_labels`` of ``MADQA_HOME``).
``MADQA_SPACE_LABELS_REPO``   a *private* Hub dataset holding ``test_labels.jsonl`` (used when no local file exists).
``MADQA_DATASET``             the public dataset spec (``sample``, a folder, or a Hub id) for dev questions and pages.
``MADQA_PAGES_REPO``          a Hub dataset holding the published page corpus of ``MADQA_DATASET`` (``madqa publish
                             pages``): a Space downloads it instead of extracting the release's PDFs at start.
``MADQA_SPACE_MAX_MB``        upload size limit in MB (default 20).
``MADQA_SPACE_RATE_LIMIT``    accepted submissions per user per window (default 5; 0 disables the limit).
``MADQA_SPACE_RATE_WINDOW_S`` the rate-limit window in seconds (default 86400: 5 accepted files per user per day).
``MADQA_SPACE_TRUSTED_PROXIES`` comma-separated proxy addresses/networks whose ``X-Forwarded-For`` names the client
                             (default: none; the direct peer address is the client).
``MADQA_SPACE_HUB_REPO``      Hub dataset that mirrors accepted submissions (needs ``HF_TOKEN``).
``MADQA_SPACE_JUDGE``         a judge model spec; when set, submissions are scored in ``judge`` mode.
``MADQA_SPACE_RESAMPLES``     bootstrap resamples of the Kuiper CI (default 1000).
``MADQA_SPACE_SCORE_WORKERS`` scoring processes, i.e. submissions scored at once (default 1; 0 = in-thread).
``MADQA_SPACE_SCORE_CPU_S``   CPU seconds one submission's scoring may use (default 0: 30 s + 0.25 s per test item).
``MADQA_SPACE_AGENT_MODEL``   model spec(s) of the "Try an agent" tab, comma-separated; the first is the default
                             (default ``local``).
``MADQA_SPACE_PRIVATE_SHARE`` share of the test labels in the private part (default 0.5; rows of the labels file
                             with an explicit ``part`` keep it).
``MADQA_SPACE_LADDER_MARGIN`` the Ladder's margin of the official ranking (default 0.01: one accuracy point).
``MADQA_SPACE_PRACTICE_NEW_RUNS`` new practice runs one client may start per hour (default 20; read by the practice
                             tab, ``space/human/practice.py``).
``MADQA_SPACE_SNAPSHOT_DAYS`` days between automatic snapshots of the official ranking (default 7; 0: only
                             ``python -m madqa.space.ladder snapshot``).
``MADQA_SPACE_ANSWER_GRID_S`` the first point of the submit answer's time grid, in seconds (default 4; 0: answer at
                             once, which lets the answer's time reveal the labels; ``space/quiet.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def _int(env: dict[str, str], key: str, default: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {raw!r}") from None


def _fraction(env: dict[str, str], key: str, default: float, *, low: float, high: float) -> float:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{key} must be a number, got {raw!r}") from None
    if not low <= value <= high:  # also refuses nan
        raise ValueError(f"{key} must be between {low:g} and {high:g}, got {raw!r}")
    return value


def _proxies(raw: str) -> list[str]:
    """Validated proxy addresses or networks (``10.0.0.1``, ``10.0.0.0/8``, ``::1``)."""
    import ipaddress

    out = []
    for item in (x.strip() for x in raw.split(",")):
        if not item:
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(f"MADQA_SPACE_TRUSTED_PROXIES: {item!r} is not an IP address or network") from None
        out.append(item)
    return out


@dataclass(frozen=True)
class SpaceConfig:
    """Everything the Space needs to know, resolved once.

    Attributes:
        db_path: SQLite file of submissions and per-item scores.
        labels_path: private test labels (server side only; never inside ``space/``).
        labels_repo: private Hub dataset with the labels (optional).
        dataset: public dataset spec.
        pages_repo: Hub dataset with the published page corpus of ``dataset`` (``None``: extract the pages).
        max_file_bytes: upload limit.
        rate_limit: accepted attempts per user per window (0 = unlimited).
        rate_window_s: window length in seconds.
        trusted_proxies: proxies whose ``X-Forwarded-For`` is believed (empty: forwarded headers are ignored).
        hub_repo: Hub dataset mirroring submissions (optional).
        hub_token: token used for the mirror and the labels repo (``None`` = not configured).
        judge_model: judge model spec (``None`` = ``anls`` mode).
        n_resamples: Kuiper bootstrap resamples.
        score_workers: scoring processes (submissions scored at once; 0 scores in the request thread).
        score_cpu_s: CPU seconds one submission's scoring may use (0: automatic, see ``scoring_pool.PoolLimits``).
        agent_models: model specs the agent tab offers (the first is preselected); no other spec runs.
        on_spaces: running on Hugging Face Spaces (``SPACE_ID`` set): enables the HF login button.
        private_share: share of the test labels in the private part (labels rows without an explicit ``part``).
        ladder_margin: the Ladder's margin η (a private score is published only when it beats the identity's
            previous one by more than η, rounded to a multiple of η; ``space/ladder.py``).
        snapshot_days: days between automatic snapshots of the official ranking (0: only by the maintainers).
        answer_grid_s: the first point of the submit answer's doubling time grid (:mod:`.quiet`; 0: none).
    """

    db_path: Path
    labels_path: Path
    labels_repo: str | None = None
    dataset: str = "sample"
    pages_repo: str | None = None
    max_file_bytes: int = 20 * 1024 * 1024
    rate_limit: int = 5
    rate_window_s: int = 86400
    trusted_proxies: tuple[str, ...] = ()
    hub_repo: str | None = None
    hub_token: str | None = None
    judge_model: str | None = None
    n_resamples: int = 1000
    score_workers: int = 1
    score_cpu_s: int = 0
    agent_models: tuple[str, ...] = ("local",)
    on_spaces: bool = False
    private_share: float = 0.5
    ladder_margin: float = 0.01
    snapshot_days: float = 7.0
    answer_grid_s: float = 4.0

    @property
    def agent_model(self) -> str:
        """The agent tab's default model spec."""
        return self.agent_models[0]

    @property
    def mode(self) -> str:
        """Scoring mode: ``judge`` when a judge model is configured, else ``anls``."""
        return "judge" if self.judge_model else "anls"

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> SpaceConfig:
        """Read the settings from ``env`` (default ``os.environ``)."""
        from madqa.loading_script.paths import Layout

        env = dict(os.environ if env is None else env)
        home = Layout.default() if "MADQA_HOME" not in env else Layout(Path(env["MADQA_HOME"]).expanduser())
        db = env.get("MADQA_SPACE_DB") or str(home.root / "space" / "leaderboard.sqlite")
        labels = env.get("MADQA_SPACE_LABELS") or str(home.test_labels)
        max_mb = _int(env, "MADQA_SPACE_MAX_MB", 20)
        if max_mb < 1:
            raise ValueError("MADQA_SPACE_MAX_MB must be at least 1")
        return cls(
            db_path=Path(db).expanduser(),
            labels_path=Path(labels).expanduser(),
            labels_repo=env.get("MADQA_SPACE_LABELS_REPO") or None,
            dataset=env.get("MADQA_DATASET") or "sample",
            pages_repo=env.get("MADQA_PAGES_REPO") or None,
            max_file_bytes=max_mb * 1024 * 1024,
            rate_limit=max(0, _int(env, "MADQA_SPACE_RATE_LIMIT", 5)),
            rate_window_s=max(1, _int(env, "MADQA_SPACE_RATE_WINDOW_S", 86400)),
            trusted_proxies=tuple(_proxies(env.get("MADQA_SPACE_TRUSTED_PROXIES", ""))),
            hub_repo=env.get("MADQA_SPACE_HUB_REPO") or None,
            hub_token=env.get("HF_TOKEN") or None,
            judge_model=env.get("MADQA_SPACE_JUDGE") or None,
            n_resamples=max(0, _int(env, "MADQA_SPACE_RESAMPLES", 1000)),
            score_workers=max(0, _int(env, "MADQA_SPACE_SCORE_WORKERS", 1)),
            score_cpu_s=max(0, _int(env, "MADQA_SPACE_SCORE_CPU_S", 0)),
            agent_models=tuple(
                s.strip() for s in (env.get("MADQA_SPACE_AGENT_MODEL") or "local").split(",") if s.strip()
            )
            or ("local",),
            on_spaces=bool(env.get("SPACE_ID")),
            private_share=_fraction(env, "MADQA_SPACE_PRIVATE_SHARE", 0.5, low=0.0, high=0.9),
            ladder_margin=_fraction(env, "MADQA_SPACE_LADDER_MARGIN", 0.01, low=0.001, high=0.2),
            snapshot_days=_fraction(env, "MADQA_SPACE_SNAPSHOT_DAYS", 7.0, low=0.0, high=3650.0),
            answer_grid_s=_fraction(env, "MADQA_SPACE_ANSWER_GRID_S", 4.0, low=0.0, high=60.0),
        )
