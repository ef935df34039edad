"""The paper's baseline agents, one package each; an agent imports the harness, models, corpus, sandbox and search
loop, never another agent (``tests/project/test_architecture.py``)."""
