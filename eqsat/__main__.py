"""``python -m eqsat``: the command line (see :mod:`eqsat.cli`)."""

import sys

from eqsat.cli import main

if __name__ == "__main__":
    sys.exit(main())
