"""Development and test harnesses: the local stack on free ports, the GCS emulator, benchmarks.

Not part of the installed package or the image; run from a checkout (tests, `make bench`).
"""
