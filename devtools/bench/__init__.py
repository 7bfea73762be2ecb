"""The benchmarks, on the harnesses: `python -m devtools.bench` (the gateway's overhead, `make bench`),
`cost`, `alerts`, `ledger` (with the ledger's outage rig), `weights`, `verify`, and `reliability`."""
