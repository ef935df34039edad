"""The code-REPL agent of the paper (G.5): :mod:`.agent` (the smolagents agent), :mod:`.executor` (the executor proxy
and sub-model calls), :mod:`.corpus` (the REPL variables) and :mod:`.prepare` (its
:class:`~madqa.agents.harness.protocol.Agent`, registered as ``repl``). Its code runs in
:mod:`madqa.agents.sandbox`."""
