"""A tiny randomly initialised BERT (two attention heads; feed-forward and positions scaled from the hidden size),
for tests that need a real transformers checkpoint in a few kilobytes. Needs transformers (import it only where
the caller has checked for it)."""

from __future__ import annotations

from typing import Any


def tiny_bert(vocab_size: int, hidden_size: int, layers: int) -> Any:
    """A random ``BertModel`` of ``layers`` layers of ``hidden_size``."""
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden_size,
        max_position_embeddings=4 * hidden_size,
    )
    return BertModel(config)
