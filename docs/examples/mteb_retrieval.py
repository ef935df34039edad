"""MADQA's evidence-page retrieval as an MTEB task, offline, on the dataset `madqa setup` prepared (the sample here).

Needs the `mteb` extra (`pip install 'madqa[mteb]'`, or `bash scripts/mteb_check.sh` for an environment with it).
`RetrieverSearch` hands mteb the rankings of a `madqa retrieval` retriever; `WordllamaEncoder` lets mteb search
itself over the offline embedder's vectors. Both need no download.
"""

import mteb

from madqa.agents.integrations.mteb_task import tasks
from madqa.agents.integrations.mteb_task.search import RetrieverSearch, WordllamaEncoder

MEASURES = (("nDCG@10", "ndcg_at_10"), ("R@1", "recall_at_1"), ("MRR@10", "mrr_at_10"))
text_task, image_task = tasks(dataset="sample", splits=["dev"])
for model in (RetrieverSearch("bm25"), RetrieverSearch("dense:wordllama"), WordllamaEncoder()):
    result = mteb.evaluate(model, text_task, cache=None, co2_tracker=False, show_progress_bar=False)
    (scores,) = result.task_results[0].scores["dev"]
    measures = "  ".join(f"{label} {scores[key]:.4f}" for label, key in MEASURES)
    print(f"{model.mteb_model_meta.name}: {measures}")
