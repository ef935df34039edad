"""The walled worker that runs model-written code: :mod:`.worker` (the process and its protocol), :mod:`.sandbox`
(the program it runs) and :mod:`.walls` (its Landlock and seccomp layers)."""
