"""``python3 -m uniflow.inspect``: see :mod:`uniflow.inspect._cli`."""

import sys

from ._cli import main

sys.exit(main())
