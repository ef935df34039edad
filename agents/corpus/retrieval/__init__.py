"""Page retrieval for evaluation and for agents: one :class:`~.base.Retriever` interface over several rankers.

``make_retriever(spec, pages)`` (:mod:`.spec`) builds one from a spec string: ``bm25`` (the page search index of
:mod:`madqa.agents.corpus.search`, queried with an OR of the question's words), ``dense:EMBEDDER`` (cosine similarity
of
page and query vectors from :mod:`madqa.agents.corpus.embeddings`; ``dense:wordllama`` runs offline, page vectors
cached
on disk by embedder, settings and page content), ``rrf:A+B`` (reciprocal-rank fusion) and ``hybrid:A>B``
(candidates from A re-ranked by B). :mod:`.evaluation` scores rankings against the gold evidence pages.
"""
