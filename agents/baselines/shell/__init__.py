"""The Semtools-style shell agent (``madqa run --agent shell``): semantic search and read-only Unix tools, walled."""
