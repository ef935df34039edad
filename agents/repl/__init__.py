"""The code-REPL agent of the paper (G.5): :mod:`.agent` (the smolagents agent), :mod:`.executor` (the executor proxy
and sub-model calls), :mod:`.worker` (the walled worker process), :mod:`.sandbox` (the program that process runs),
:mod:`.walls` (its Landlock and seccomp layers), :mod:`.corpus` (the REPL variables) and :mod:`.prepare` (its
:class:`~madqa.agents.protocol.Agent`, registered as ``repl``)."""
