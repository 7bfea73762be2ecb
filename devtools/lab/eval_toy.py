"""`make eval-toy` and `make calibrate-toy`: the trained toy model on a local stack started here,
then `dgemma eval` (every read policy, both option orders) or `dgemma calibrate` (one policy) on the
test split of its task (300 alerts).

python -m devtools.lab.eval_toy [eval|calibrate] [--out DIR] [extra flags of that command]
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console

from deploy.cli import main as dgemma
from devtools.harness.local_stack import ROOT, local_stack

DATA = ROOT / "evals" / "data" / "toy-alerts-test.jsonl"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("command", nargs="?", choices=("eval", "calibrate"), default="eval")
    parser.add_argument(
        "--out", type=Path, help="default: reports/eval-toy or reports/calibrate-toy/calibration.json"
    )
    args, extra = parser.parse_known_args(argv)
    reports = ROOT / "reports"
    out = args.out or (
        reports / "eval-toy" if args.command == "eval" else reports / "calibrate-toy" / "calibration.json"
    )
    with ExitStack() as cleanup:
        with Console(stderr=True).status("starting the local stack on the toy model (about 45 s)"):
            stack = cleanup.enter_context(local_stack(ROOT / ".cache" / "eval-engine.log", model="toy"))
        return dgemma([args.command, "--data", str(DATA), "--url", stack.url, "--out", str(out), *extra])


if __name__ == "__main__":
    sys.exit(main())
