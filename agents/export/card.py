"""The dataset card (``README.md``) of a Hub dataset of MADQA traces, written by ``madqa publish traces``.

Built from the session headers of the folder ``madqa export traces`` wrote (pure: headers in, card text out): the
run's agent(s), model(s), dataset and split, the harness version, how many sessions and, when they were scored, the
share answered correctly; then how the traces were redacted (:mod:`madqa.agents.export.redact`, and the check
before upload, :mod:`madqa.agents.export.check`), their format and their license.

The YAML header is what the Hub reads (huggingface/hub-docs ``docs/hub/datasets-cards.md``): ``license`` (the
benchmark's: the sessions quote its questions and document pages), ``pretty_name``, ``task_categories``,
``size_categories``, ``tags`` (``agent-traces``, as the Hub's trace datasets are tagged, ``madqa``, ...). It has no
``configs``: the Hub's agent-traces page has the raw ``*.jsonl`` sessions uploaded as they are, and finds them
itself; a ``configs`` entry would make the generic JSON builder read sessions as a table instead. The header is
written by ``yaml.safe_dump``, so a model name cannot break out of it, and the Markdown body escapes what it quotes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from madqa.agents.export.redact import Redactor

#: The license of the traces: MADQA's (the questions, answers and page texts quoted in them are CC BY-NC 4.0).
LICENSE = "cc-by-nc-4.0"
#: The card's tags: ``agent-traces`` is the Hub's tag of trace datasets.
TAGS: tuple[str, ...] = ("agent-traces", "madqa", "document-question-answering", "agents", "benchmark")
#: Keys the header must hold (tests check them).
REQUIRED_KEYS: tuple[str, ...] = ("license", "pretty_name", "tags", "task_categories", "size_categories")
#: The Hub's size categories, by upper bound of the number of sessions.
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def read_headers(files: Iterable[Path]) -> list[dict[str, Any]]:
    """The ``session`` header (first line) of each session file."""
    headers = []
    for path in files:
        with path.open(encoding="utf-8") as handle:
            headers.append(json.loads(handle.readline()))
    return headers


def _md(text: Any) -> str:
    """``text`` as literal Markdown on one line (backslash-escaped, ``<`` and ``>`` as entities)."""
    flat = " ".join(str(text).split())
    out = "".join("\\" + ch if ch in "\\`*_{}[]()#!|~" else ch for ch in flat)
    return out.replace("<", "&lt;").replace(">", "&gt;")


def _values(headers: Sequence[Mapping[str, Any]], get: Any) -> list[str]:
    """The distinct values of ``get(meta)`` over the sessions, most frequent first (``?`` for none)."""
    counts = Counter(str(get(h.get("madqa") or {}) or "?") for h in headers)
    return [value for value, _ in counts.most_common()]


def _size_category(n: int) -> str:
    return next((name for bound, name in _SIZES if n < bound), "n>1M")


def card_facts(headers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the card states about the run, from its session headers."""
    human = any((h.get("madqa") or {}).get("system_type") == "human" for h in headers)
    scores = [(h.get("madqa") or {}).get("score") for h in headers]
    scored = [s for s in scores if isinstance(s, Mapping)]
    correct = [s.get("correct") for s in scored if s.get("correct") is not None]
    return {
        "agents": ["human"] if human else _values(headers, lambda m: m.get("agent")),
        "models": _values(headers, lambda m: m.get("model") or ("a person" if human else None)),
        "datasets": _values(headers, lambda m: (m.get("dataset") or {}).get("name")),
        "revisions": _values(headers, lambda m: (m.get("dataset") or {}).get("revision")),
        "splits": _values(headers, lambda m: m.get("split")),
        "harness_versions": sorted({str(h.get("harnessVersion") or "?") for h in headers}),
        "sessions": len(headers),
        "scored": len(scored),
        "modes": sorted({str(s.get("mode")) for s in scored if s.get("mode")}),
        "accuracy": (sum(bool(c) for c in correct) / len(correct)) if correct else None,
    }


def card_metadata(facts: Mapping[str, Any]) -> dict[str, Any]:
    """The card's YAML header."""
    what = f"{', '.join(facts['agents'])} with {', '.join(facts['models'])}"
    return {
        "license": LICENSE,
        "pretty_name": f"MADQA traces: {what} ({', '.join(facts['splits'])})"[:200],
        "task_categories": ["question-answering"],
        "size_categories": [_size_category(int(facts["sessions"]))],
        "tags": list(TAGS),
    }


def traces_card(headers: Sequence[Mapping[str, Any]], repo_id: str, redactor: Redactor | None = None) -> str:
    """The ``README.md`` of a traces dataset ``repo_id`` whose sessions have these headers.

    Raises:
        ValueError: no headers, or the card would hold something :class:`Redactor` changes (a key, a local path).
    """
    if not headers:
        raise ValueError("no sessions: nothing to describe")
    facts = card_facts(headers)
    meta = yaml.safe_dump(card_metadata(facts), sort_keys=False, allow_unicode=True, width=1000)
    accuracy = facts["accuracy"]
    score = (
        f"{facts['scored']} of {facts['sessions']} sessions scored against the gold ({', '.join(facts['modes'])} "
        f"mode): {100 * accuracy:.1f}% answered correctly"
        if accuracy is not None
        else "not scored (exported with `--no-score`)"
    )
    rows = [
        ("Agent", facts["agents"]),
        ("Model", facts["models"]),
        ("Dataset", facts["datasets"]),
        ("Dataset revision", facts["revisions"]),
        ("Split", facts["splits"]),
        ("Harness", [f"madqa {v}" for v in facts["harness_versions"]]),
    ]
    table = "\n".join(f"| {name} | {', '.join(_md(v) for v in values)} |" for name, values in rows)
    body = f"""# MADQA traces: {_md(", ".join(facts["agents"]))} with {_md(", ".join(facts["models"]))}

Trajectories of one [MADQA](https://huggingface.co/datasets/OxRML/MADQA) run: one session per question
({facts["sessions"]} sessions), in the Hub's
[Session Trace Simple Format](https://huggingface.co/docs/hub/session-traces-format), so that the Hub's trace
viewer shows each question's searches, page reads, tool calls and answer. Written by `madqa export traces` and
uploaded by `madqa publish traces` to {_md(repo_id)}.

| | |
| --- | --- |
{table}
| Sessions | {facts["sessions"]}; {score} |

## How the traces were redacted

Every string of the run went through MADQA's redactor (`agents/export/redact.py`) before the sessions were written:

1. the values of the exporting machine's secret environment variables (`*_API_KEY`, `*TOKEN*`, `*SECRET*`,
   `*PASSWORD*`) were replaced by `[REDACTED:NAME]`;
2. anything shaped like a key (provider prefixes such as `sk-`, `hf_`, `AIza`, `ghp_`, `AKIA`, bearer tokens,
   `api_key=...`, long mixed-case runs of letters and digits) by `[REDACTED:key]`;
3. the data folder by `$MADQA_HOME` and the home folder by `~`;
4. any other path under a temporary or per-user folder by `<local>/` and its last part.

`madqa publish traces` then checked every file again (the format's required fields, each tool result answering an
earlier call, no string the redactor would still change) and refused the whole upload otherwise. The redaction is
pattern-based: it cannot know every secret. Read the traces before sharing them further.

## Format

`<question id>.jsonl`: a `session` line (harness `madqa`, its version, and in `madqa` the question id, split,
the run's settings and the item's score), then one `message` line per system, user, assistant and tool message
(tool calls with JSON-string arguments, tool results linked by `toolCallId`). A person's run (`madqa human`) is
written as that person's searches and page views.

## License

CC BY-NC 4.0, as MADQA: the sessions quote its questions, answers and the text of its document pages.
"""
    card = f"---\n{meta}---\n\n{body}"
    if (redactor or Redactor()).text(card) != card:
        raise ValueError("the dataset card would hold what looks like a secret or a local path")
    return card
