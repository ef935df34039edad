"""The harness every agent runs in: the agent protocol, the registry, ``RunConfig``, the runner (local and Ray), the
results-line records and writer, the error kinds and the per-question deadline."""
