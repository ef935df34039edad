"""MADQA as an `inspect_ai <https://inspect.aisi.org.uk>`_ task, and inspect logs as our results lines.

Optional extra ``pip install 'madqa[inspect]'``; only this package imports ``inspect_ai`` (the CLI's
``madqa import-inspect`` imports it lazily). Modules:

* :mod:`.task`: the task ``madqa/bm25`` (``inspect eval madqa/bm25 --model PROVIDER/MODEL -T split=dev``), also
  runnable by file path (``inspect eval agents/integrations/inspect_task/task.py@bm25``); :mod:`._registry` is the
  module that
  pyproject's ``[project.entry-points.inspect_ai]`` names, as inspect_evals does.
* :mod:`.solver`: the search agent's loop (paper G.1) as an inspect solver: at most T model calls, the last one
  offering only ``final_answer``; its tools ``search_documents`` and ``final_answer`` are those of
  :mod:`madqa.agents.search_loop.tools` and :mod:`madqa.agents.harness.answer` (same query syntax, pages, prompts,
  answer checks).
* :mod:`.scorer`: one scorer over the metric's pure functions (:func:`madqa.metric.scoring.score_item`): accuracy
  (ANLS* >= 0.5), ANLS*, Page F1 and Doc F1 per sample, with means, the Kuiper statistic and accuracy by hop type as
  inspect metrics.
* :mod:`.lines`: an inspect log's samples as results lines (:func:`madqa.agents.harness.record.build_record`), and the
  sample store keys the tools write (no ``inspect_ai`` import at module level).
"""
