"""Prompt files of the agents (``<name>.yaml``) and the one loader both agents use.

A prompt file holds smolagents' ``PromptTemplates`` (Jinja) plus a ``madqa`` section of this project's texts. What
several prompt sets must say alike is written once, in ``shared.yaml``: a line that holds only ``[[NAME]]`` is
replaced by the fragment ``NAME`` of that file, indented like the marker, before the YAML is parsed.

>>> "[[" in str(load_prompts("bm25")) or "[[" in str(load_prompts("repl"))
False
>>> load_prompts("bm25")["system_prompt"].count(shared_fragments()["answer_format"].splitlines()[0])
1
"""

from __future__ import annotations

import importlib.resources
import re
from functools import lru_cache
from typing import Any

import yaml

#: A fragment marker: a line of only ``[[name]]`` (any indentation).
MARKER = re.compile(r"^(?P<indent>[ \t]*)\[\[(?P<name>\w+)\]\][ \t]*$", flags=re.MULTILINE)


def _read(filename: str) -> str:
    return importlib.resources.files(__name__).joinpath(filename).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def shared_fragments() -> dict[str, str]:
    """The fragments of ``shared.yaml`` by name (texts that several prompt sets include)."""
    data = yaml.safe_load(_read("shared.yaml"))
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError("prompt file shared.yaml must map fragment names to texts")
    return data


@lru_cache(maxsize=4)
def load_prompts(name: str) -> dict[str, Any]:
    """The prompt file ``<name>.yaml`` of this package as a dict, with its ``[[fragment]]`` lines filled in.

    Raises:
        ValueError: an unknown fragment, or a file without ``system_prompt`` or ``madqa``.
    """
    fragments = shared_fragments()

    def fill(match: re.Match[str]) -> str:
        fragment = fragments.get(match["name"])
        if fragment is None:
            raise ValueError(f"prompt file {name}.yaml includes [[{match['name']}]], which shared.yaml lacks")
        return "\n".join(match["indent"] + line if line else "" for line in fragment.splitlines())

    data = yaml.safe_load(MARKER.sub(fill, _read(f"{name}.yaml")))
    if not isinstance(data, dict) or "system_prompt" not in data or "madqa" not in data:
        raise ValueError(f"prompt file {name}.yaml lacks 'system_prompt' or 'madqa'")
    return data
