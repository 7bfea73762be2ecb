"""`make bench`: the gateway's overhead against the raw engine, on a local stack started here.

python -m devtools.bench [--rounds 40] [--plot reports/overhead.png]
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console

from devtools.harness.local_stack import local_stack
from loadtest import overhead


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--plot", type=Path, default=Path("reports/overhead.png"))
    args = parser.parse_args(argv)
    with ExitStack() as cleanup:
        with Console(stderr=True).status("starting the local stack (about 45 s)"):
            stack = cleanup.enter_context(local_stack(Path(".cache/bench-engine.log"), model="random"))
        overhead.report(overhead.run(stack.url, stack.engine_url, args.rounds), args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
