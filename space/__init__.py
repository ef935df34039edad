"""The MADQA Gradio Space: leaderboard, submission scoring and the interactive agent tab."""
