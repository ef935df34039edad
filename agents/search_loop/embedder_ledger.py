"""The ``embedder`` role of a results line's token ledger (:mod:`madqa.metric.ledger`): the query embeddings of the
retrievers a question used (rag, mdoc).

Each search with a retriever that embeds its query (``dense:``, ``colbert:``, ``colpali:``, ``dse:``, and those
inside ``rrf:``/``hybrid:``) is one embedding call per embedding model in it; ``bm25`` embeds nothing. Only calls are
counted: none of these embedders reports a token count through the retriever (the retrievers take a query string and
return pages), so the entry has no ``input_tokens`` rather than a made-up one, and it is priced only where the price
table lists its model (a local model at 0; a priced model without tokens is left unpriced, never free).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: Retriever kinds whose spec names an embedding model after ``kind:``.
EMBEDDING_KINDS = ("dense", "colbert", "colpali", "dse")


def query_embedders(spec: str) -> list[str]:
    """The embedding models a retriever spec (its canonical name) embeds each query with, in order (its leaves as
    :func:`madqa.agents.corpus.retrieval.spec.leaves` reads them, options left out).

    >>> query_embedders("bm25"), query_embedders("dense:wordllama"), query_embedders("rrf:bm25+dense:st:m")
    ([], ['wordllama'], ['st:m'])
    >>> query_embedders("hybrid:candidates=200:dse:a:dim=1536>colpali:b:device=cpu")
    ['dse:a', 'colpali:b']
    """
    from madqa.agents.corpus.retrieval.spec import leaves

    models = []
    for kind, rest in leaves(spec):
        if kind in EMBEDDING_KINDS:
            model = ":".join(part for part in rest.split(":") if "=" not in part)
            models.append(model if kind == "dense" else f"{kind}:{model}")
    return models


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
