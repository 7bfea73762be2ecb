"""`python -m devtools.bench.reliability`: see devtools/bench/reliability/run.py."""

import sys

from devtools.bench.reliability.run import main

sys.exit(main())
