"""MADQA agents: the agent protocol and registry, the BM25 search agent, the code-REPL agent and the batch runner."""
