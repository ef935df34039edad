"""The run explorer (``madqa view`` and the Space's Explore tab): results files joined with the gold set.

Layers: :mod:`.runs` (parse, match, score: the metric's functions), :mod:`.run_info` (a run's recorded settings,
a person's page views), :mod:`.table` (question table, filters, agreement, κ), :mod:`.detail` (one question's
trajectory as data), :mod:`.thumbs` (cached page thumbnails), :mod:`.figures` and :mod:`.html` (one renderer for
the app and the export), :mod:`.export` (self-contained HTML), :mod:`.ui` (the Gradio app of ``madqa view``) and
:mod:`.tab` (the Space's dev-only tab). Only the last two import gradio.
"""
