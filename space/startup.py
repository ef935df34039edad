"""Start-up of the Space: settings, the public dataset, the private test labels, the board's database, the services.

A Space must start anywhere. With no variables it builds (idempotently) and serves the sample, as ``make demo``
does. With the release configured (``MADQA_DATASET``, ``MADQA_PAGES_REPO``, ``MADQA_SPACE_LABELS`` or
``MADQA_SPACE_LABELS_REPO``) it prepares the public dataset and loads the private labels. A missing or wrong
variable is a :class:`ConfigError` naming it. ``python app.py`` (:func:`serve`) then logs one ERROR line and serves
a small page that names the variable, on the same host and port, instead of a traceback and a crash loop.
``madqa space`` turns it into a one-line error and exit status 2. The cheap checks run first, so a wrong variable
is reported before minutes of dataset preparation.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .config import SpaceConfig

logger = logging.getLogger(__name__)

ENV_HOME, ENV_DATASET, ENV_PAGES_REPO = "MADQA_HOME", "MADQA_DATASET", "MADQA_PAGES_REPO"
ENV_LABELS, ENV_LABELS_REPO, ENV_DB, ENV_SEED = (
    "MADQA_SPACE_LABELS",
    "MADQA_SPACE_LABELS_REPO",
    "MADQA_SPACE_DB",
    "MADQA_SPACE_SEED",
)
SAMPLE = "sample"
LABELS_HINT = (
    f"set {ENV_LABELS} (a test_labels.jsonl file on the Space's storage) or {ENV_LABELS_REPO} (a "
    "private Hub dataset holding test_labels.jsonl, read with the HF_TOKEN secret)"
)
#: What the page says about an unexpected failure (the traceback goes to the server log only).
GENERIC_ERROR = (
    "The Space could not start because of an internal error (not a configuration problem). The "
    "details are in the server log (the Space's Logs tab)."
)
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
_VARIABLE = re.compile(r"\b(?:MADQA|HF|GRADIO)_[A-Z0-9_]+\b")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the configuration: the variables to fix (may be none) and what is wrong."""

    variables: tuple[str, ...]
    message: str


class ConfigError(Exception):
    """The configuration is wrong or incomplete; ``str()`` is one line that names the variables to fix."""

    def __init__(self, problems: Problem | list[Problem]):
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__("; ".join(p.message for p in self.problems))

    @property
    def variables(self) -> tuple[str, ...]:
        """Every variable named by a problem, in order, once."""
        return tuple(dict.fromkeys(v for p in self.problems for v in p.variables))


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    return dict(os.environ if env is None else env)


def _layout(env: Mapping[str, str]) -> Any:
    from madqa.loading_script.paths import Layout

    return Layout(Path(env[ENV_HOME]).expanduser().resolve()) if env.get(ENV_HOME) else Layout.default()


def read_config(env: Mapping[str, str] | None = None) -> SpaceConfig:
    """:meth:`SpaceConfig.from_env`, with a malformed variable as a :class:`ConfigError` naming it."""
    try:
        return SpaceConfig.from_env(_env(env))
    except ValueError as exc:
        names = tuple(dict.fromkeys(_VARIABLE.findall(str(exc))))
        raise ConfigError(Problem(names, str(exc))) from None


def is_sample(config: SpaceConfig) -> bool:
    """Whether the Space serves the embedded sample (no ``MADQA_DATASET``, or ``sample``)."""
    return config.dataset == SAMPLE


def labels_source(config: SpaceConfig, env: Mapping[str, str]) -> str:
    """Where the test labels come from: ``file``, ``repo`` or ``sample`` (raises :class:`ConfigError`).

    An existing ``MADQA_SPACE_LABELS`` file wins; else ``MADQA_SPACE_LABELS_REPO``; else, with the sample only,
    the labels its set-up writes. A release never falls back to a sample's labels left in ``MADQA_HOME``.
    """
    named = bool(env.get(ENV_LABELS))
    if named and config.labels_path.is_file():
        return "file"
    if config.labels_repo:
        return "repo"
    if named:
        what = "is a folder, not a file" if config.labels_path.is_dir() else "names no existing file"
        raise ConfigError(Problem((ENV_LABELS,), f"{ENV_LABELS}: {config.labels_path} {what}"))
    if is_sample(config):
        return "sample"
    raise ConfigError(
        Problem(
            (ENV_LABELS, ENV_LABELS_REPO),
            f"the hidden test labels of dataset '{config.dataset}' are not configured: {LABELS_HINT}",
        )
    )


def preflight(config: SpaceConfig, env: Mapping[str, str]) -> list[Problem]:
    """Cheap checks before any slow work: every problem found, so one restart can fix them all."""
    problems: list[Problem] = []
    spec = config.dataset
    if spec != SAMPLE and not Path(spec).expanduser().is_dir():
        if spec.startswith((".", "/", "~")) or not _HUB_ID.fullmatch(spec):
            problems.append(
                Problem(
                    (ENV_DATASET,),
                    f"{ENV_DATASET}: '{spec}' is neither 'sample', an existing "
                    "dataset folder, nor a Hub dataset id (ORG/NAME)",
                )
            )
    if (
        config.pages_repo
        and not Path(config.pages_repo).expanduser().is_dir()
        and not _HUB_ID.fullmatch(config.pages_repo)
    ):
        problems.append(
            Problem(
                (ENV_PAGES_REPO,),
                f"{ENV_PAGES_REPO}: '{config.pages_repo}' is neither a folder nor a Hub dataset id (ORG/NAME)",
            )
        )
    if config.labels_repo and not _HUB_ID.fullmatch(config.labels_repo):
        problems.append(
            Problem(
                (ENV_LABELS_REPO,), f"{ENV_LABELS_REPO}: '{config.labels_repo}' is not a Hub dataset id (ORG/NAME)"
            )
        )
    try:
        labels_source(config, env)
    except ConfigError as exc:
        problems.extend(exc.problems)
    db_var = ENV_DB if env.get(ENV_DB) else ENV_HOME
    folder = config.db_path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        writable = os.access(folder, os.W_OK) and not config.db_path.is_dir()
    except OSError as exc:
        problems.append(Problem((db_var,), f"{db_var}: cannot create the board's folder {folder} ({exc.strerror})"))
    else:
        if not writable:
            problems.append(Problem((db_var,), f"{db_var}: the board's database {config.db_path} is not writable"))
    return problems


def _unreachable(exc: BaseException) -> bool:
    """Network, Hub and file-system failures: the environment's fault, not a bug of ours."""
    try:
        from huggingface_hub.utils import httpx as hub_httpx

        transport: tuple[type[BaseException], ...] = (hub_httpx.HTTPError,)
    except (ImportError, AttributeError):  # pragma: no cover - another huggingface_hub
        transport = ()
    return isinstance(exc, (OSError, TimeoutError, *transport))


def _hub_reason(exc: BaseException) -> str:
    """A short, secret-free reason for a failed Hub download."""
    from huggingface_hub import errors

    if isinstance(exc, errors.GatedRepoError):
        return "the repository is gated and HF_TOKEN has no access"
    if isinstance(exc, errors.RepositoryNotFoundError):
        return "repository not found, or HF_TOKEN (a secret) is missing or cannot read it"
    if isinstance(exc, errors.RemoteEntryNotFoundError):
        return "the repository has no file test_labels.jsonl"
    if isinstance(exc, (errors.OfflineModeIsEnabled, errors.LocalEntryNotFoundError)):
        return "the Hub cannot be reached (offline, or HF_HUB_OFFLINE is set) and no copy is cached"
    if isinstance(exc, errors.HfHubHTTPError) and exc.response is not None:
        return f"the Hub answered HTTP {exc.response.status_code}"
    return f"{type(exc).__name__}: the Hub cannot be reached"


def prepare_dataset(config: SpaceConfig, env: Mapping[str, str], *, progress: bool = False) -> SpaceConfig:
    """The config with ``dataset`` set to a local folder: the sample built, or the release prepared."""
    from madqa.loading_script.extract import OcrUnavailableError
    from madqa.loading_script.load import DatasetUnavailableError
    from madqa.loading_script.release import ensure_dataset

    names = (ENV_DATASET, ENV_PAGES_REPO) if config.pages_repo else (ENV_DATASET,)
    layout = _layout(env)
    if is_sample(config) and not (layout.dataset_dir / "README.md").is_file():
        logger.info("no built sample in %s: building it first (as `madqa setup`; a few minutes)", layout.root)
    try:
        folder = ensure_dataset(config.dataset, pages_repo=config.pages_repo, layout=layout, progress=progress)
    except DatasetUnavailableError as exc:
        raise ConfigError(Problem(names, f"{names[0]}: {exc}")) from None
    except OcrUnavailableError as exc:
        raise ConfigError(Problem((), f"{exc} (on a Space: list tesseract-ocr in packages.txt)")) from None
    except Exception as exc:
        if not _unreachable(exc):
            raise
        if is_sample(config):
            raise ConfigError(
                Problem(
                    (ENV_HOME,),
                    f"{ENV_HOME}: the sample could not be built in {layout.root} "
                    f"({type(exc).__name__}: {getattr(exc, 'strerror', None) or exc})",
                )
            ) from None
        raise ConfigError(
            Problem(names, f"{ENV_DATASET}: '{config.dataset}' could not be prepared ({_hub_reason(exc)})")
        ) from None
    return replace(config, dataset=str(folder))


def _labels_problem(exc: BaseException) -> str:
    """Where a labels file is wrong, without quoting its content (the answers are secret)."""
    problems = getattr(exc, "problems", None)
    if problems:
        first = str(problems[0]).split(":", 1)[0]
        return f"{getattr(exc, 'count', len(problems))} invalid record(s), the first at {first}"
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text"
    return str(exc)[:300]


def check_labels(path: Path, variable: str) -> int:
    """Parse the labels as the scorer will; returns how many test items they label."""
    from madqa.loading_script.io import read_jsonl
    from madqa.loading_script.load import DatasetUnavailableError, load_gold
    from madqa.metric.inputs import parse_references

    try:
        try:
            parse_references(read_jsonl(path), "test labels")  # the raw records first: problems with their place
            return len(parse_references(load_gold("test", labels_path=path), "test labels"))  # as the scorer reads
        except (KeyError, TypeError) as exc:  # a shape the loader's normalisation does not expect
            reason = f"a record's field has an unexpected shape ({type(exc).__name__} {str(exc)[:80]})"
            raise ValueError(reason) from None
    except (ValueError, DatasetUnavailableError, OSError) as exc:
        raise ConfigError(
            Problem(
                (variable,), f"{variable}: the test labels file {path.name} cannot be used: {_labels_problem(exc)}"
            )
        ) from None


def resolve_labels(config: SpaceConfig, env: Mapping[str, str]) -> Path:
    """The checked labels file: the named file, a download from the labels repo, or the sample's own."""
    source = labels_source(config, env)
    if source == "repo":
        from .hub import download_labels

        assert config.labels_repo is not None
        try:
            path = download_labels(config.labels_repo, config.hub_token, config.db_path.parent / "private")
        except Exception as exc:
            if not _unreachable(exc):
                raise
            raise ConfigError(
                Problem(
                    (ENV_LABELS_REPO, "HF_TOKEN"),
                    f"{ENV_LABELS_REPO}: cannot download "
                    f"test_labels.jsonl from '{config.labels_repo}': {_hub_reason(exc)}",
                )
            ) from None
        variable = ENV_LABELS_REPO
    else:
        path, variable = config.labels_path, (ENV_LABELS if source == "file" else ENV_HOME)
        if not path.is_file():
            raise ConfigError(Problem((ENV_HOME,), f"{ENV_HOME}: the sample set-up wrote no test labels at {path}"))
    n = check_labels(path, variable)
    logger.info("test labels: %d item(s) from %s", n, variable if source != "sample" else "the sample")
    return path


def prepare(env: Mapping[str, str] | None = None, *, progress: bool = False) -> SpaceConfig:
    """Steps 1-3: the config with the dataset prepared and the labels file resolved (raises :class:`ConfigError`)."""
    env = _env(env)
    config = read_config(env)
    problems = preflight(config, env)
    if problems:
        raise ConfigError(problems)
    prepared = prepare_dataset(config, env, progress=progress)
    return replace(prepared, labels_path=resolve_labels(config, env))  # the spec as given decides the labels


def check_board(config: SpaceConfig, env: Mapping[str, str]) -> None:
    """Step 4a: ``PRAGMA integrity_check`` of the board's database (:mod:`.db_health`). A damaged file is moved
    aside (never deleted); the board is then restored from the Hub mirror when one is configured, else (or when the
    restore fails) a :class:`ConfigError` says so and where the damaged copy is kept."""
    from .db_health import DatabaseUnusable, check_database

    variable = ENV_DB if env.get(ENV_DB) else ENV_HOME
    try:
        damaged = check_database(config.db_path)
    except DatabaseUnusable as exc:
        raise ConfigError(
            Problem((variable,), f"{variable}: the board's database {config.db_path} cannot be opened: {exc}")
        ) from None
    if damaged is None:
        return
    what = (
        f"{variable}: the board's database {damaged.path} is damaged ({damaged.reason}); it was moved aside "
        f"to {damaged.kept} (kept, not deleted)"
    )
    if not (config.hub_repo and config.hub_token):
        raise ConfigError(
            Problem(
                (variable, "MADQA_SPACE_HUB_REPO"),
                f"{what}. No Hub mirror is configured to "
                "restore the board from: repair the kept copy (sqlite3 .recover) and put it back, "
                "or restart to start an empty board",
            )
        )
    from .db_health import discard_partial
    from .hub import restore_from_hub
    from .storage import SubmissionStore

    try:
        restored = restore_from_hub(
            SubmissionStore(config.db_path), config.hub_repo, config.hub_token, config.db_path.parent / "restore"
        )
    except Exception as exc:  # noqa: BLE001 - the page says what failed; a bug's traceback goes to the log
        discard_partial(config.db_path)  # the next start restores again, from nothing
        if _unreachable(exc):
            reason = _hub_reason(exc)
        else:
            logger.warning("restoring the board from %s failed", config.hub_repo, exc_info=True)
            reason = f"{type(exc).__name__} (details in the server log)"
        raise ConfigError(
            Problem(
                (variable, "MADQA_SPACE_HUB_REPO", "HF_TOKEN"),
                f"{what}; restoring the board from '{config.hub_repo}' failed: {reason}",
            )
        ) from None
    logger.warning("%s; restored %d submission(s) from the Hub mirror %s", what, restored, config.hub_repo)


def start(env: Mapping[str, str] | None = None, *, seed: bool | None = None, progress: bool = False) -> Any:
    """The whole sequence up to the services (``seed``: default from ``MADQA_SPACE_SEED``, on unless ``0``)."""
    from .services import create_services

    env = _env(env)
    config = prepare(env, progress=progress)
    check_board(config, env)
    if seed is None:
        seed = env.get(ENV_SEED, "1").strip() != "0"
    return create_services(config, seed=seed)


def _redact(text: str, env: Mapping[str, str]) -> str:
    """Remove secret values (tokens) from a message meant for a public page."""
    for key, value in env.items():
        if value and len(value) >= 8 and ("TOKEN" in key or "SECRET" in key or "KEY" in key):
            text = text.replace(value, "***")
    return re.sub(r"\bhf_[A-Za-z0-9]{8,}\b", "hf_***", text)


def error_page(error: ConfigError | None, env: Mapping[str, str] | None = None) -> Any:
    """A minimal page for a Space that cannot start: the problems and the variables to set, or a generic line."""
    import gradio as gr

    env = _env(env)
    heading = "MADQA Space: configuration error" if error is not None else "MADQA Space: could not start"
    with gr.Blocks(title=heading) as demo:
        gr.Markdown(f"# {heading}")
        if error is None:
            gr.Markdown(GENERIC_ERROR, elem_id="config-error")
        else:
            names = ", ".join(f"`{v}`" for v in error.variables)
            gr.Markdown(
                "The Space is not configured correctly and serves this page instead of the leaderboard. "
                + (f"Variables to fix: {names}. " if names else "")
                + "Set them in the Space's settings (*Variables and secrets*) and restart the Space; "
                "see the Space's README for each variable."
            )
            text = "\n".join(_redact(p.message, env) for p in error.problems)
            gr.Textbox(
                value=text,
                label="What is wrong",
                lines=max(2, len(error.problems)),
                interactive=False,
                elem_id="config-error",
            )
    return demo


def serve(
    launch: Callable[..., Any],
    env: Mapping[str, str] | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
) -> None:
    """Start the Space and serve until stopped; a start-up failure serves :func:`error_page` instead.

    ``launch(services, port=, host=)`` builds and serves the app (:func:`madqa.space.app.launch`; passed in so that
    this module does not import the app that calls it). ``host``/``port`` default to gradio's
    (``GRADIO_SERVER_NAME``, ``GRADIO_SERVER_PORT``; Spaces set them).
    """
    import madqa.space

    env = _env(env)
    logger.info("starting the MADQA Space (madqa.space from %s)", Path(madqa.space.__file__).parent)
    failure: ConfigError | None
    try:
        services = start(env)
    except ConfigError as exc:
        logger.error("configuration error: %s", _redact(str(exc), env))
        failure = exc
    except Exception:  # noqa: BLE001 - a bug: the log gets the traceback, the page a generic line
        logger.exception("the Space could not start")
        failure = None
    else:
        launch(services, port=port, host=host)
        return
    from madqa.space.gradio_launch import launch as launch_gradio

    launch_gradio(error_page(failure, env), server_name=host, server_port=port)
