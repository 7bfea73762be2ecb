"""Development tools, in three rooms: `harness/` (loopback servers, real binaries, fakes, the local
stack), `bench/` (benchmarks) and `lab/` (GPU-host campaigns and the analyzers of their reports).
The harness imports neither of the others, and bench and lab never import each other.

Not part of the installed package or the image; run from a checkout (tests, `make bench`).
"""
