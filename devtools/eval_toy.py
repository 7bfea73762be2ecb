"""`make eval-toy`: the trained toy model on a local stack started here, scored by `dgemma eval` on
the test split of its task (300 alerts; every read policy, both option orders).

python -m devtools.eval_toy [--limit N] [--out reports/eval-toy] [extra `dgemma eval` flags]
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console

from deploy.cli import main as dgemma
from devtools.stack import ROOT, local_stack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "eval-toy")
    args, extra = parser.parse_known_args(argv)
    with ExitStack() as cleanup:
        with Console(stderr=True).status("starting the local stack on the toy model (about 45 s)"):
            stack = cleanup.enter_context(local_stack(ROOT / ".cache" / "eval-engine.log", model="toy"))
        data = ROOT / "evals" / "data" / "toy-alerts-test.jsonl"
        return dgemma(["eval", "--data", str(data), "--url", stack.url, "--out", str(args.out), *extra])


if __name__ == "__main__":
    sys.exit(main())
