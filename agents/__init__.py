"""MADQA agents (smolagents): the BM25 search agent, the code-REPL agent and the batch runner."""
