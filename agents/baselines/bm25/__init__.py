"""The BM25 search agent of the paper (G.1): :mod:`.prepare` (its :class:`~madqa.agents.harness.protocol.Agent`,
registered as ``bm25``) over the shared :mod:`madqa.agents.search_loop`."""
