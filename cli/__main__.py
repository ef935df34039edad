"""`python -m madqa.cli`."""

import sys

from . import main

sys.exit(main())
