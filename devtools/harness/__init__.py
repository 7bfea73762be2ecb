"""The harnesses: servers on loopback (loopback.py), real binaries on free ports (Alertmanager,
Prometheus, the GCS emulator), the local stack and single services, fakes of the cloud, the GPU
host and Google's identity endpoints. Tests, benchmarks and the lab use them; they import neither."""
