"""The command line's one exception type, in its own module so that command modules need not import the package.

``madqa.cli`` (the entry point and the registry of commands) imports every command module by name; if the commands
imported ``UserError`` from ``madqa.cli`` itself, the package and its commands would import each other.
"""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input or environment: printed as one clear line, exit status 2."""
