"""Everything that produces results lines, by concept: :mod:`.harness` (protocol, registry, runner, records),
:mod:`.models` (model spec to smolagents ``Model``), :mod:`.corpus` (page search, retrieval, embeddings, page images),
:mod:`.sandbox` (the walled worker for model-written code), :mod:`.search_loop` (the search loop several baselines
share), :mod:`.baselines` (the paper's agents, one package each) and :mod:`.integrations` (inspect_ai)."""
