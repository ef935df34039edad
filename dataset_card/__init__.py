"""The Hub dataset card (``README.md`` in this folder), shipped as package data so `madqa setup` can copy it."""
