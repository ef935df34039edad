"""Human-baseline mode (paper Appendix C.2): people answer questions with the agents' search engine.

Layers: :mod:`.batches` (seeded batches of 25 with constellation code names), :mod:`.session` (one question's
trajectory: searches, page views, citations, and its results line), :mod:`.study` (a batch for one annotator: the
results file, crash-safe appends and resume at the first unanswered question), :mod:`.corpus` (the search index,
page images and page counts the app shows), :mod:`.feedback` (practice-mode scoring, never in test mode) and the
Gradio app (:mod:`.app`, :mod:`.view`), which is the only module that imports gradio.
"""
