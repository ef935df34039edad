"""The BM25 search agent of the paper (G.1): :mod:`.agent` (the smolagents agent), :mod:`.tools` (its search tool)
and :mod:`.prepare` (its :class:`~madqa.agents.protocol.Agent`, registered as ``bm25``)."""
