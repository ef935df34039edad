"""Other harnesses' views of MADQA: the inspect_ai task (:mod:`.inspect_task`), the MTEB tasks (:mod:`.mteb_task`)."""
