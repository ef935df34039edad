"""The options the agents that show pages to a model share (bm25, rag, mdoc), light: ``--help`` and the Space read
them without loading an agent. Both are ``None`` by default and resolved from the model when the agent is
prepared (:func:`madqa.agents.search_loop.resources.load_models`, :func:`~.resources.default_page_chars`)."""

from __future__ import annotations

from typing import Any

from madqa.agents.harness.options import option

__all__ = ["observe_option", "page_chars_option"]


def observe_option(help: str) -> Any:  # noqa: A002 - argparse's word, as in option()
    """``observe``: whether pages are shown as images or as their texts (``help`` says which pages)."""
    return option(None, choices=("image", "text"), help=help, default_text="text for text-only models, else image")


def page_chars_option(help: str) -> Any:  # noqa: A002 - argparse's word, as in option()
    """``page_chars``: how much of a page's text is shown (``help`` says where)."""
    return option(None, metavar="N", help=help, default_text="by model")
