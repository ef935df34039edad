"""What inspect loads for ``inspect eval madqa/...``: pyproject's ``[project.entry-points.inspect_ai]`` names this
module (inspect_evals' convention); importing it registers the tasks (``madqa/bm25``)."""

from madqa.agents.integrations.inspect_task.task import madqa_bm25

__all__ = ["madqa_bm25"]
