"""The search loop the bm25, rag, mdoc and shell baselines share: :mod:`.agent` (the smolagents tool-calling agent),
:mod:`.tools` (the search tool and what it shows) and :mod:`.resources` (models, corpus and model-dependent
defaults)."""
