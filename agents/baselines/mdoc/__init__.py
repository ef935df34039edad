"""MDocAgent (``madqa run --agent mdoc``): text and image retrieval, then five agents, one model call each."""
