"""The ``embedder`` role of a results line's token ledger (:mod:`madqa.metric.ledger`): the query embeddings of the
retrievers a question used (rag, mdoc).

Each search with a retriever that embeds its query (``dense:``, ``colbert:``, ``colpali:``, ``dse:``, and those
inside ``rrf:``/``hybrid:``) is one embedding call per embedding model in it; ``bm25`` embeds nothing. Only calls are
counted: none of these embedders reports a token count through the retriever (the retrievers take a query string and
return pages), so the entry has no ``input_tokens`` rather than a made-up one, and it is priced only where the price
table lists its model (a local model at 0; a priced model without tokens is left unpriced, never free).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: Retriever kinds whose spec names an embedding model after ``kind:``.
EMBEDDING_KINDS = ("dense", "colbert", "colpali", "dse")
_OPTION = re.compile(r"^[a-z_]+=")


def query_embedders(spec: str) -> list[str]:
    """The embedding models a retriever spec (its canonical name) embeds each query with, in order.

    >>> query_embedders("bm25"), query_embedders("dense:wordllama"), query_embedders("rrf:bm25+dense:st:m")
    ([], ['wordllama'], ['st:m'])
    >>> query_embedders("hybrid:candidates=200:dse:a:dim=1536>colpali:b:device=cpu")
    ['dse:a', 'colpali:b']
    """
    kind, _, rest = spec.partition(":")
    if kind == "rrf":
        return [m for part in rest.split("+") for m in query_embedders(part)]
    if kind == "hybrid":
        parts = rest.split(":")
        while parts and _OPTION.match(parts[0]):  # hybrid's own options come first
            parts.pop(0)
        return [m for part in ":".join(parts).split(">") for m in query_embedders(part)]
    if kind not in EMBEDDING_KINDS:
        return []
    model = ":".join(p for p in rest.split(":") if not _OPTION.match(p))
    return [model if kind == "dense" else f"{kind}:{model}"]


def embedder_role(retrievers: Sequence[str], searches: int) -> dict[str, dict[str, Any]]:
    """``{"embedder": {"calls", "model"}}`` for ``searches`` searches with each of ``retrievers`` (canonical
    names); empty when none of them embeds. Several embedding models are named together (``a+b``): one entry per
    role, priced only if the table lists that combination.

    >>> embedder_role(["dense:wordllama"], 1), embedder_role(["bm25"], 1)
    ({'embedder': {'calls': 1, 'model': 'wordllama'}}, {})
    """
    models = [m for spec in retrievers for m in query_embedders(spec)]
    if not models:
        return {}
    return {"embedder": {"calls": searches * len(models), "model": "+".join(dict.fromkeys(models))}}
