"""Model adapters: a spec string to a smolagents ``Model`` (:mod:`.factory`), provider options (:mod:`.options`),
what a self-hosted server accepts (:mod:`.server_compat`) and the bundled local model (:mod:`.llamacpp`)."""
