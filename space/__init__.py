"""The MADQA Gradio Space: leaderboard, submission scoring and the interactive agent tab."""

from madqa.space.gradio_stubs import skip_stub_writing

skip_stub_writing()  # before any Space module imports gradio: its .pyi writer is a second of each start (issue 47)
