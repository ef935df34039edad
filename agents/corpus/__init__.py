"""Access to the document collection: page search (:mod:`.search`), retrievers (:mod:`.retrieval`), text
embeddings (:mod:`.embeddings`) and page images (:mod:`.render`)."""
