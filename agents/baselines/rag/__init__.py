"""The static RAG baseline (``madqa run --agent rag``): one retrieval of ``top_k`` pages, one model call."""
