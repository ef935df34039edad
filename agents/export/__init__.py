"""Results lines in other formats, for where results are published: the Hub's Session Trace Simple Format
(:mod:`.sts`, with :mod:`.redact` removing keys and local paths first)."""
