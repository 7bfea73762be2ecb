"""The magnitude kinds about hosts and Kubernetes (the owner is the host's or workload's role)."""

from __future__ import annotations

from .common import TEAMS, _num, _pct, _secs
from .kinds import Kind, _disk_more, _fixed, _pick, _replica_facts, scale

HOST_KINDS: list[Kind] = [
    # -- hosts: the owner is the host's role (disk of db-1: database) ---------------------------
    Kind(
        "host_cpu",
        "host",
        TEAMS,
        (
            "CPU Usage High",
            "High CPU Usage",
            "Node CPU Saturated",
            "CPU Busy",
            "Host CPU Pressure",
            "Cpu Utilisation High",
            "Load Average High",
        ),
        {"info": 0.2, "warning": 0.45, "error": 0.35},
        scale(
            {"info": (60, 75), "warning": (75, 90), "error": (90, 100)},
            _pct,
            lambda rng, level, v, f: {
                "cores": (c := rng.choice([4, 8, 16, 32])),
                "load": _num(c * v / 100 * rng.uniform(1.0, 1.6)),
            },
        ),
        (
            "CPU usage on {host} is {value}",
            "{host}: CPU at {value} for {dur}",
            "CPU busy {value} on {host}",
            "High CPU on {host} ({value})",
            "{host} CPU utilisation {value}",
        ),
        (
            "CPU utilisation has been above {threshold} for {dur}.",
            "Load average is {load} on {cores} cores.",
            "{host} has used {value} of its CPU for the last {dur}.",
        ),
        "node_cpu_seconds_total",
        numeric=True,
    ),
    Kind(
        "host_memory",
        "host",
        TEAMS,
        (
            "Memory Usage High",
            "Low Available Memory",
            "Node Memory Pressure",
            "Memory Almost Exhausted",
            "Host Swapping",
        ),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        scale(
            {"warning": (85, 93), "error": (93, 97.5), "critical": (97.5, 100)},
            _pct,
            _pick(
                {
                    "warning": ["Swap is unused.", "Page cache is shrinking."],
                    "error": ["Swapping has started.", "Page cache is nearly gone."],
                    "critical": [
                        "The OOM killer has started killing processes.",
                        "oom-killer invoked 4 times in 10 minutes.",
                    ],
                }
            ),
        ),
        (
            "Memory usage on {host} is {value}",
            "{host} memory {value} used",
            "{host}: only {free_mem} of memory available",
            "Available memory on {host} is low ({value} used)",
        ),
        ("{note}", "Memory has been above {threshold} for {dur}. {note}"),
        "node_memory_MemAvailable_bytes",
        numeric=True,
    ),
    Kind(
        "host_disk",
        "host",
        TEAMS,
        (
            "Disk Usage High",
            "Disk Space Low",
            "Filesystem Almost Full",
            "Root Volume Filling",
            "Node Disk Pressure",
            "Volume Space Low",
            "Disk Will Fill Soon",
        ),
        {"info": 0.1, "warning": 0.35, "error": 0.25, "critical": 0.3},
        scale(
            {"info": (65, 78), "warning": (78, 89), "error": (89, 95), "critical": (95, 100)},
            _pct,
            _disk_more,
        ),
        (
            "Disk usage on {host} is {value}",
            "{mount} on {host} is {value} full",
            "Only {free} free on {host}:{mount}",
            "{host} {mount} {value} used",
            "Filesystem {device} on {host} at {value}",
            "{host}: disk {value}",
        ),
        (
            "{mount} has been above {threshold} for {dur}.",
            "At the current rate it fills in {eta}.",
            "{free} left on {mount}; it fills in {eta} at this rate.",
            "Filesystem {device} mounted on {mount} is {value} full.",
        ),
        "node_filesystem_avail_bytes",
        numeric=True,
    ),
    Kind(
        "host_inodes",
        "host",
        TEAMS,
        ("Inodes Running Out", "Inode Usage High", "Filesystem Inodes Exhausted", "Out Of Inodes"),
        {"warning": 0.4, "error": 0.3, "critical": 0.3},
        scale({"warning": (80, 90), "error": (90, 96.5), "critical": (96.5, 100)}, _pct, _disk_more),
        (
            "Inode usage on {host}:{mount} is {value}",
            "{host} is running out of inodes on {mount} ({value} used)",
            "{value} of inodes used on {host} {mount}",
        ),
        ("Small files are filling {mount}.", "When inodes run out no new file can be created on {mount}."),
        "node_filesystem_files_free",
        numeric=True,
    ),
    Kind(
        "clock_skew",
        "host",
        TEAMS,
        (
            "Clock Skew",
            "Clock Drift Detected",
            "NTP Offset High",
            "Time Not Synchronised",
            "Chrony Out Of Sync",
        ),
        {"info": 0.25, "warning": 0.45, "error": 0.3},
        scale({"info": (0.02, 0.3), "warning": (0.3, 4), "error": (4, 120)}, _secs),
        (
            "Clock on {host} is off by {value}",
            "{host} clock offset {value} from NTP",
            "NTP sync lost on {host}: offset {value}",
            "Time drift of {value} on {host}",
        ),
        ("The clock has drifted {value} from the NTP servers.", "chronyd reports an offset of {value}."),
        "node_timex_offset_seconds",
        numeric=True,
    ),
    Kind(
        "host_reboot",
        "host",
        TEAMS,
        ("Host Rebooted", "Unexpected Reboot", "Node Restarted", "Server Reboot Detected", "Uptime Reset"),
        {"info": 0.5, "warning": 0.35, "error": 0.15},
        _fixed(
            {
                "info": lambda rng, f: {
                    "value": "rebooted for a kernel update",
                    "num": 1,
                    "thr": 1,
                    "note": rng.choice(["Planned maintenance window.", "Patch reboot, services came back."]),
                },
                "warning": lambda rng, f: {
                    "value": f"rebooted unexpectedly {rng.randint(3, 50)}m ago",
                    "num": 1,
                    "thr": 1,
                    "note": rng.choice(["Services are back up.", "Cause unknown; host healthy since."]),
                },
                "error": lambda rng, f: {
                    "value": f"rebooted {rng.randint(3, 8)} times in the last hour",
                    "num": rng.randint(3, 8),
                    "thr": 2,
                    "note": rng.choice(["The host is in a reboot loop.", "Kernel panics on boot."]),
                },
            }
        ),
        ("{host} {value}", "{host} was restarted ({value})", "Uptime on {host} reset: {value}"),
        ("{note}", "node_boot_time changed. {note}"),
        "node_boot_time_seconds",
    ),
    Kind(
        "nic_errors",
        "host",
        ("network",),
        (
            "NIC Errors",
            "Network Interface Errors",
            "Interface Receive Errors",
            "NIC Packet Drops",
            "Bond Degraded",
            "Link Errors On Host",
        ),
        {"info": 0.15, "warning": 0.35, "error": 0.3, "critical": 0.2},
        scale(
            {"info": (0.01, 0.2), "warning": (0.2, 2), "error": (2, 12), "critical": (12, 60)},
            _pct,
            lambda rng, level, v, f: {"iface": rng.choice(["eth0", "ens5", "eno1", "bond0", "enp3s0"])},
        ),
        (
            "{iface} on {host} is dropping {value} of packets",
            "{host}: {value} receive errors on {iface}",
            "Interface {iface} errors {value} on {host}",
            "Packet errors on {host} {iface}: {value}",
        ),
        (
            "The NIC {iface} reports errors on {value} of received packets.",
            "Check the cable and the switch port of {host}.",
        ),
        "node_network_receive_errs_total",
        numeric=True,
    ),
    # -- Kubernetes: the owner is the workload's (postgres-0: database, coredns: network) -----------
    Kind(
        "crash_loop",
        "pod",
        TEAMS,
        (
            "Pod Crash Looping",
            "Container Restarting",
            "Pod Restart Storm",
            "CrashLoopBackOff",
            "Workload Crash Loop",
            "Container Keeps Restarting",
        ),
        {"warning": 0.35, "error": 0.35, "critical": 0.3},
        _fixed({lv: _replica_facts(lv) for lv in ("warning", "error", "critical")}),
        (
            "Pod {namespace}/{pod} restarted {restarts} times in the last hour",
            "{pod} is in CrashLoopBackOff ({ready}/{total} ready)",
            "Container {container} of {pod} keeps restarting ({ready}/{total} ready)",
            "{workload}: {restarts} restarts in 1h, {value}",
        ),
        (
            "{ready} of {total} replicas of {workload} are ready.",
            "Back-off restarting failed container {container}; {ready}/{total} pods ready.",
            "The container exits with code 1 shortly after start.",
        ),
        "kube_pod_container_status_restarts_total",
    ),
    Kind(
        "oom_killed",
        "pod",
        TEAMS,
        ("Container OOM Killed", "OOM Kill Detected", "Pod Out Of Memory", "Memory Limit Reached"),
        {"info": 0.25, "warning": 0.35, "error": 0.25, "critical": 0.15},
        _fixed(
            {
                "info": lambda rng, f: {
                    "kills": 1,
                    "window": "24h",
                    "value": "1 OOM kill in 24h",
                    "num": 1,
                    "thr": 1,
                    "state": "it restarted and is healthy",
                },
                "warning": lambda rng, f: {
                    "kills": (k := rng.randint(2, 4)),
                    "window": "1h",
                    "value": f"{k} OOM kills in 1h",
                    "num": k,
                    "thr": 2,
                    "state": "other replicas are serving",
                },
                "error": lambda rng, f: {
                    "kills": (k := rng.randint(6, 20)),
                    "window": "1h",
                    "value": f"{k} OOM kills in 1h",
                    "num": k,
                    "thr": 5,
                    "state": "half of the replicas are down at any time",
                },
                "critical": lambda rng, f: {
                    "kills": (k := rng.randint(10, 40)),
                    "window": "30m",
                    "value": f"all replicas OOM-killed, {k} kills in 30m",
                    "num": k,
                    "thr": 5,
                    "state": "no replica stays up",
                },
            }
        ),
        (
            "Container {container} in {pod} was OOM-killed {kills} times in {window}",
            "{pod} hit its memory limit ({value})",
            "OOMKilled: {namespace}/{pod} ({value})",
            "{workload} OOMKilled: {value}",
        ),
        ("The container exceeded its {limit} memory limit; {state}.", "Last state: OOMKilled. {state}."),
        "kube_pod_container_status_last_terminated_reason",
    ),
    Kind(
        "pods_pending",
        "pod",
        TEAMS,
        ("Pods Pending", "Pod Not Scheduled", "Unschedulable Pods", "Pod Stuck Pending"),
        {"warning": 0.5, "error": 0.35, "critical": 0.15},
        _fixed(
            {
                "warning": lambda rng, f: {
                    "n": (n := rng.randint(1, 3)),
                    "value": f"{n} pods pending",
                    "num": n,
                    "thr": 1,
                    "dur": rng.choice(["10m", "15m"]),
                    "state": "the other replicas are serving",
                },
                "error": lambda rng, f: {
                    "n": (n := rng.randint(5, 25)),
                    "value": f"{n} pods pending",
                    "num": n,
                    "thr": 5,
                    "dur": rng.choice(["1h", "45m"]),
                    "state": "capacity is short for the next traffic peak",
                },
                "critical": lambda rng, f: {
                    "n": (n := rng.randint(3, 12)),
                    "value": f"0/{n} replicas scheduled",
                    "num": n,
                    "thr": 1,
                    "dur": rng.choice(["20m", "30m"]),
                    "state": "no replica is running",
                },
            }
        ),
        (
            "{n} pods pending in {namespace} for {dur}",
            "{pod} cannot be scheduled ({value}): {reason}",
            "{workload}: {value} for {dur}",
        ),
        ("0/{nodes} nodes are available: {reason}; {state}.", "Pods of {workload} stay Pending: {reason}."),
        "kube_pod_status_phase",
    ),
    Kind(
        "node_not_ready",
        "node",
        ("application",),
        ("Node Not Ready", "Kubelet Not Ready", "Worker Node Down", "K8s Node Unready"),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        _fixed(
            {
                "warning": lambda rng, f: {
                    "k": 1,
                    "nodes": (t := rng.randint(8, 40)),
                    "value": f"1/{t} nodes NotReady",
                    "num": 1,
                    "thr": 1,
                    "dur": "5m",
                },
                "error": lambda rng, f: {
                    "k": (k := rng.randint(2, 4)),
                    "nodes": (t := rng.randint(10, 30)),
                    "value": f"{k}/{t} nodes NotReady",
                    "num": k,
                    "thr": 2,
                    "dur": "30m",
                },
                "critical": lambda rng, f: {
                    "k": (k := rng.randint(5, 9)),
                    "nodes": (t := k + rng.randint(0, 5)),
                    "value": f"{k}/{t} nodes NotReady",
                    "num": k,
                    "thr": 2,
                    "dur": "10m",
                },
            }
        ),
        (
            "{node} has been NotReady for {dur}",
            "{k} of {nodes} nodes NotReady in {cluster}",
            "Kubelet on {node} stopped posting status ({value})",
        ),
        ("Pods on the affected nodes are being evicted.", "{value} in cluster {cluster}."),
        "kube_node_status_condition",
    ),
    Kind(
        "pvc_full",
        "pod",
        ("database", "application"),  # stateful workloads; DNS and ingress pods keep no volume
        ("PVC Almost Full", "Persistent Volume Filling", "Volume Claim Usage High", "PV Space Low"),
        {"info": 0.1, "warning": 0.35, "error": 0.25, "critical": 0.3},
        scale(
            {"info": (65, 78), "warning": (78, 89), "error": (89, 95), "critical": (95, 100)},
            _pct,
            lambda rng, level, v, f: {
                **_disk_more(rng, level, v, {**f, "mount": "/data"}),
                "labels": {"persistentvolumeclaim": f"data-{f['pod']}"},
            },
        ),
        (
            "PersistentVolumeClaim data-{pod} in {namespace} is {value} full",
            "Volume data-{pod} has {free} free",
            "PVC data-{pod} usage {value}",
            "{namespace}/data-{pod}: {value} used",
        ),
        ("It fills in {eta} at this rate.", "The volume of {pod} is {value} full."),
        "kubelet_volume_stats_available_bytes",
        numeric=True,
    ),
    Kind(
        "hpa_maxed",
        "pod",
        ("application",),
        ("HPA At Max Replicas", "Autoscaler Maxed Out", "Hpa Max Reached", "Scaling Limit Reached"),
        {"info": 0.35, "warning": 0.45, "error": 0.2},
        _fixed(
            {
                "info": lambda rng, f: {
                    "max": (m := rng.choice([5, 10, 20])),
                    "value": f"at {m}/{m} replicas, CPU {rng.randint(55, 70)}%",
                    "num": m,
                    "thr": m,
                    "dur": "10m",
                },
                "warning": lambda rng, f: {
                    "max": (m := rng.choice([5, 10, 20])),
                    "value": f"at {m}/{m} replicas, CPU {rng.randint(85, 97)}%",
                    "num": m,
                    "thr": m,
                    "dur": "45m",
                },
                "error": lambda rng, f: {
                    "max": (m := rng.choice([5, 10, 20])),
                    "value": f"at {m}/{m} replicas, requests queueing",
                    "num": m,
                    "thr": m,
                    "dur": "2h",
                },
            }
        ),
        (
            "HPA {workload} in {namespace} has been at {max} replicas for {dur}",
            "{workload} autoscaler {value}",
            "{workload} cannot scale further: {value}",
        ),
        ("maxReplicas {max} reached; {value}.",),
        "kube_horizontalpodautoscaler_status_current_replicas",
    ),
    Kind(
        "replicas_mismatch",
        "pod",
        TEAMS,
        (
            "Deployment Replicas Unavailable",
            "Replicas Mismatch",
            "StatefulSet Not Ready",
            "Rollout Replicas Missing",
            "Desired Replicas Not Met",
        ),
        {"warning": 0.4, "error": 0.35, "critical": 0.25},
        _fixed({lv: _replica_facts(lv) for lv in ("warning", "error", "critical")}),
        (
            "{controller} {namespace}/{workload} has {ready} of {total} replicas available",
            "{workload}: only {ready}/{total} replicas ready for {dur}",
            "{workload} replicas {value}",
        ),
        ("{down} replicas have been unavailable for {dur}.", "Desired {total}, available {ready}."),
        "kube_deployment_status_replicas_available",
    ),
    Kind(
        "job_failed",
        "job",
        TEAMS,
        {
            "info": ("Job Failed", "CronJob Failed", "Job Took Longer Than Usual", "Kube Job Slow"),
            "warning": ("Job Failed", "CronJob Failed", "Batch Job Failure", "Scheduled Job Error"),
            "error": (
                "CronJob Failed",
                "Job Did Not Complete",
                "Job Failing Repeatedly",
                "Batch Job Failure",
            ),
            "critical": (
                "CronJob Failing Repeatedly",
                "Job Failing Repeatedly",
                "Kube Job Failed",
                "CronJob Failed",
            ),
        },
        {"info": 0.2, "warning": 0.35, "error": 0.25, "critical": 0.2},
        _fixed(
            {
                "info": lambda rng, f: rng.choice(
                    [
                        {
                            "value": "failed once, the retry succeeded",
                            "num": 1,
                            "thr": 1,
                            "note": "The retry succeeded.",
                        },
                        {
                            "value": f"took {rng.randint(2, 5)}h, usually 40m; it completed",
                            "num": 1,
                            "thr": 1,
                            "note": "It completed, slower than usual.",
                        },
                    ]
                ),
                "warning": lambda rng, f: {
                    "value": "failed; next run in 1h",
                    "num": 1,
                    "thr": 1,
                    "note": "BackoffLimitExceeded; the next run is in 1h.",
                },
                "error": lambda rng, f: {
                    "value": f"failed {(n := rng.randint(2, 3))} runs in a row; "
                    f"last success {rng.randint(3, 9)}h ago",
                    "num": n,
                    "thr": 2,
                    "note": f"BackoffLimitExceeded for {f['job']}; the pod exited with code 1.",
                },
                "critical": lambda rng, f: {
                    "value": f"failed {(n := rng.randint(6, 30))} runs in a row; "
                    f"no success for {rng.randint(2, 6)} days",
                    "num": n,
                    "thr": 5,
                    "note": "BackoffLimitExceeded on every run; nothing has succeeded for days.",
                },
            }
        ),
        (
            "Job {namespace}/{job} {value}",
            "CronJob {job} {value}",
            "{job}: {value}",
            "Job {job} did not complete: {value}",
        ),
        ("{note}", "Job {job}: {note}"),
        "kube_job_status_failed",
    ),
]
