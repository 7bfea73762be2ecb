"""The GPU-host campaigns and the analyzers that rebuild their committed reports: engine arms,
cold starts, toy sweeps, profiles, the bf16 checkpoint and the toy's eval; gpu_host/ holds the
host's shell steps."""
