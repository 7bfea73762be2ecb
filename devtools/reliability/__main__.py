"""`python -m devtools.reliability`: see devtools/reliability/run.py."""

import sys

from devtools.reliability.run import main

sys.exit(main())
