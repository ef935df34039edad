"""The paper's baseline agents, one package each; an agent imports the harness, models, corpus, sandbox and search
loop, never another agent (``tests/test_architecture.py``)."""
