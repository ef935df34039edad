"""The managed RAG services of paper G.2 (OpenAI File Search, Gemini File Search) as ``--agent file-search``."""
