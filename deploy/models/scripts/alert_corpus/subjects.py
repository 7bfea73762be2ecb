"""The things alerts are about: services, hosts, pods, engines, proxies, with their label sets."""

from __future__ import annotations

import random
from typing import Any

from .common import _alnum, _hex
from .data import table

_SUBJECTS = table("subjects")
_CHOICES: dict[str, list[Any]] = _SUBJECTS["choices"]

# -- the things alerts are about ----------------------------------------------------------------

SERVICES: list[str] = _SUBJECTS["services"]
SVC_SUFFIX: list[str] = _SUBJECTS["svc_suffix"]
REGIONS: list[str] = _SUBJECTS["regions"]
CLUSTERS: list[str] = _SUBJECTS["clusters"]
ENVS: list[str] = _SUBJECTS["envs"]
PROJECTS: list[str] = _SUBJECTS["projects"]
DOMAINS: list[str] = _SUBJECTS["domains"]
HOST_PREFIX: dict[str, list[str]] = _SUBJECTS["host_prefix"]
ROLE_ALIAS: dict[str, list[str]] = _SUBJECTS["role_alias"]
ENGINES: dict[str, dict[str, Any]] = _SUBJECTS["engines"]
NETWORK_WORKLOADS: list[tuple[str, str]] = [tuple(row) for row in _SUBJECTS["network_workloads"]]
DAEMONSETS: frozenset[str] = frozenset(_SUBJECTS["daemonsets"])
# Brokers and identity services in pods: the application team's (see the default policy).
APP_WORKLOADS: list[str] = _SUBJECTS["app_workloads"]
PROXIES: list[tuple[str, str, str]] = [tuple(row) for row in _SUBJECTS["proxies"]]


def _service(rng: random.Random) -> str:
    return rng.choice(SERVICES) + rng.choice(SVC_SUFFIX)


def _host(rng: random.Random, role: str) -> tuple[str, dict[str, str]]:
    """A host name, and a label saying its role when the name does not."""
    n = rng.randint(1, 40)
    if rng.random() < 0.15:
        return f"ip-10-{rng.randint(0, 9)}-{rng.randint(0, 255)}-{rng.randint(2, 254)}", {
            rng.choice(_CHOICES["role_label_keys"]): rng.choice(ROLE_ALIAS[role])
        }
    prefix = rng.choice(HOST_PREFIX[role])
    form = rng.randrange(5)
    name = [
        f"{prefix}-{n}",
        f"{prefix}{n:02d}",
        f"{prefix}-prod-{n}",
        f"{prefix}-{n}",
        f"{prefix}-{chr(97 + n % 3)}{n}",
    ][form]
    return name, {}


def _pod(rng: random.Random, workload: str, controller: str) -> str:
    if controller == "statefulset":
        return f"{workload}-{rng.randint(0, 4)}"
    if controller == "daemonset":
        return f"{workload}-{_alnum(rng, 5)}"
    return f"{workload}-{_hex(rng, 9)}-{_alnum(rng, 5)}"


def subject(rng: random.Random, kind: str, role: str, engines: tuple[str, ...]) -> dict[str, Any]:
    """What an alert is about: template fields, its labels (as an exporter would attach them), the
    team that owns it, and what the SDK-style states call it."""
    f: dict[str, Any] = {"role": role, "region": rng.choice(REGIONS), "cluster": rng.choice(CLUSTERS)}
    labels: dict[str, str] = {}
    if kind == "host":
        host, extra = _host(rng, role)
        f["host"] = host
        f["instance"] = host + rng.choice(_CHOICES["node_exporter_ports"])
        labels.update(instance=f["instance"], job=rng.choice(_CHOICES["node_jobs"]))
        labels.update(extra)
        f["subject"], f["subject_key"] = host, "host"
    elif kind == "pod":
        if role == "database":
            engine = rng.choice(engines or tuple(ENGINES))
            workload = rng.choice(ENGINES[engine]["workloads"])
            controller = "statefulset"
            ns = rng.choice(["databases", "data", "db", engine, rng.choice(SERVICES)])
        elif role == "network":
            workload, ns = rng.choice(NETWORK_WORKLOADS)
            controller = (
                "daemonset"
                if workload in DAEMONSETS
                else "statefulset"
                if workload == "consul-server"
                else "deployment"
            )
        elif rng.random() < 0.15:
            workload = rng.choice(APP_WORKLOADS)
            controller = (
                "statefulset" if workload in ("kafka", "rabbitmq", "zookeeper", "nats") else "deployment"
            )
            ns = rng.choice([workload.split("-")[0], "messaging", "prod", "identity"])
        else:
            workload = _service(rng)
            controller = "statefulset" if rng.random() < 0.1 else "deployment"
            ns = rng.choice([workload.split("-")[0], "prod", "default", "shop", "apps", "production"])
        pod = _pod(rng, workload, controller)
        container = (
            workload if rng.random() < 0.6 else rng.choice(["app", "main", "server", workload.split("-")[0]])
        )
        f.update(workload=workload, controller=controller, namespace=ns, pod=pod, container=container)
        f["Controller"] = {"statefulset": "StatefulSet", "daemonset": "DaemonSet"}.get(
            controller, "Deployment"
        )
        labels.update(namespace=ns, pod=pod)
        if rng.random() < 0.6:
            labels["container"] = container
        if rng.random() < 0.4:
            labels[controller] = workload
        labels["job"] = rng.choice(_CHOICES["pod_jobs"])
        f["subject"], f["subject_key"] = f"{ns}/{pod}", "pod"
    elif kind == "node":
        node = rng.choice(
            [
                f"gke-{f['cluster']}-pool-{rng.randint(1, 3)}-{_hex(rng, 8)}-{_alnum(rng, 4)}",
                f"ip-10-0-{rng.randint(1, 250)}-{rng.randint(2, 250)}.ec2.internal",
                f"aks-nodepool1-{rng.randint(10**7, 10**8 - 1)}-vmss00000{rng.randint(0, 9)}",
            ]
        )
        f["node"] = node
        labels.update(node=node, job="kube-state-metrics")
        if rng.random() < 0.5:
            labels.update(condition="Ready", status=rng.choice(_CHOICES["node_condition_status"]))
        f["subject"], f["subject_key"] = node, "node"
    elif kind == "db":
        engine = rng.choice(engines or tuple(ENGINES))
        e = ENGINES[engine]
        host = f"{rng.choice(e['hosts'])}-{rng.randint(1, 9)}"
        port = e["port"] if rng.random() < 0.5 else e["exporter"]
        f.update(engine=engine, Engine=rng.choice(e["names"]), host=host, instance=f"{host}:{port}", db=host)
        labels.update(instance=f["instance"], job=rng.choice(e["jobs"]))
        if rng.random() < 0.3:
            labels["cluster"] = rng.choice([host.rsplit("-", 1)[0], f"{engine}-main", f"{engine}-prod"])
        if rng.random() < 0.25:
            labels.update(
                namespace=rng.choice(["databases", "data", engine]),
                pod=f"{rng.choice(e['workloads'])}-{rng.randint(0, 3)}",
            )
        f["subject"], f["subject_key"] = host, rng.choice(_CHOICES["db_subject_keys"])
    elif kind == "service":
        svc = _service(rng)
        f.update(service=svc, namespace=rng.choice([svc.split("-")[0], "prod", "default", "shop"]))
        labels[rng.choice(_CHOICES["service_label_keys"])] = svc
        if rng.random() < 0.5:
            labels["namespace"] = f["namespace"]
        f["subject"], f["subject_key"] = svc, "service"
    elif kind == "queue":
        svc = _service(rng)
        topic = rng.choice(_CHOICES["topics"])
        f.update(
            service=svc,
            topic=topic,
            group=f"{svc.split('-')[0]}-{rng.choice(_CHOICES['consumer_groups'])}",
            queue=f"{topic}.{rng.choice(_CHOICES['queue_events'])}",
        )
        f["subject"], f["subject_key"] = topic, rng.choice(_CHOICES["queue_subject_keys"])
    elif kind == "edge":
        proxy, Proxy, job = rng.choice(PROXIES)
        backend = _service(rng)
        f.update(
            proxy=proxy,
            Proxy=Proxy,
            backend=backend,
            lb=f"{proxy}-{rng.choice(_CHOICES['lb_names'])}-{rng.randint(1, 4)}",
        )
        labels["job"] = job
        labels[rng.choice(_CHOICES["backend_label_keys"])] = backend
        if proxy == "ingress-nginx" or rng.random() < 0.3:
            labels["namespace"] = rng.choice(_CHOICES["ingress_namespaces"])
        f["subject"], f["subject_key"] = f["lb"], rng.choice(_CHOICES["lb_subject_keys"])
    elif kind == "dns":
        server = rng.choice(_CHOICES["dns_servers"])
        f.update(server=server, dns_host=f"{rng.choice(_CHOICES['dns_hosts'])}-{rng.randint(1, 4)}")
        labels["job"] = server if server != "resolver" else "dns-resolver"
        if server in ("coredns", "kube-dns"):
            labels.update(namespace="kube-system", server=rng.choice(_CHOICES["coredns_servers"]))
        else:
            labels["instance"] = f"{f['dns_host']}:53"
        f["subject"], f["subject_key"] = server, "server"
    elif kind == "cert":
        domain = rng.choice(
            [
                f"{rng.choice(SERVICES)}.{rng.choice(DOMAINS)}",
                f"api.{rng.choice(DOMAINS)}",
                f"*.{rng.choice(DOMAINS)}",
                f"www.{rng.choice(DOMAINS)}",
            ]
        )
        f.update(
            domain=domain,
            issuer=rng.choice(_CHOICES["cert_issuers"]),
        )
        if rng.random() < 0.6:
            labels.update(
                instance=rng.choice([f"https://{domain.lstrip('*.')}", f"{domain.lstrip('*.')}:443"]),
                job=rng.choice(_CHOICES["cert_jobs"]),
            )
        else:
            labels.update(
                namespace=rng.choice(_CHOICES["cert_namespaces"]),
                name=domain.lstrip("*.").replace(".", "-") + "-tls",
                issuer_name=f["issuer"],
            )
        f["subject"], f["subject_key"] = domain, "domain"
    elif kind == "link":
        device = f"{rng.choice(_CHOICES['network_devices'])}-{rng.randint(1, 12)}"
        iface = rng.choice(_CHOICES["device_ifaces"])
        zones = rng.sample(
            [
                "us-east1-b",
                "us-east1-c",
                "eu-west-1a",
                "eu-west-1b",
                "dc1",
                "dc2",
                "on-prem",
                "europe-west4-a",
            ],
            2,
        )
        f.update(
            device=device,
            interface=iface,
            a=zones[0],
            b=zones[1],
            peer=f"AS{rng.choice(_CHOICES['bgp_peer_asns'])}",
            tunnel=f"vpn-{rng.choice(_CHOICES['vpn_tunnels'])}-{rng.randint(1, 2)}",
        )
        labels.update(instance=device, job=rng.choice(_CHOICES["network_device_jobs"]))
        f["subject"], f["subject_key"] = device, rng.choice(_CHOICES["link_subject_keys"])
    elif kind == "endpoint":
        svc = _service(rng)
        path = rng.choice(_CHOICES["health_paths"])
        url = f"https://{svc.split('-')[0]}.{rng.choice(DOMAINS)}{path}"
        host = url.split("/")[2]
        module = rng.choice(_CHOICES["probe_modules"])
        target = {"icmp": host, "tcp_connect": f"{host}:443"}.get(module, url)
        probe_jobs = {
            "icmp": ["blackbox-icmp", "blackbox_icmp", "ping"],
            "tcp_connect": ["blackbox-tcp", "blackbox_tcp_connect"],
        }.get(module, ["blackbox", "blackbox-http", "uptime", "blackbox_http_2xx", "blackbox-exporter"])
        f.update(
            service=svc,
            url=url,
            target=target,
            module=module,
            tech=module.split("_")[0].replace("https", "http"),
        )
        labels.update(instance=target, job=rng.choice(probe_jobs))
        if rng.random() < 0.3:
            labels["module"] = module
        f["subject"], f["subject_key"] = target, "url" if target == url else "target"
    elif kind == "container":
        if role == "database":
            name = rng.choice(_CHOICES["database_containers"])
        elif role == "network":
            name = rng.choice(_CHOICES["network_containers"])
        else:
            name = _service(rng)
        image = {
            "postgres": "postgres:16",
            "mysql": "mysql:8.0",
            "redis": "redis:7-alpine",
            "mongo": "mongo:7",
            "elasticsearch": "docker.elastic.co/elasticsearch/elasticsearch:8.13.4",
            "mariadb": "mariadb:11",
            "nginx": "nginx:1.27",
            "haproxy": "haproxy:2.9",
            "traefik": "traefik:v3.1",
            "envoy": "envoyproxy/envoy:v1.30",
            "caddy": "caddy:2",
            "bind9": "ubuntu/bind9:9.18",
            "coredns": "coredns/coredns:1.11.1",
        }.get(name, f"registry.example.com/{name.split('-')[0]}:{rng.randint(1, 9)}.{rng.randint(0, 30)}")
        host = (
            f"{rng.choice(['docker', 'dockerhost', 'vm', rng.choice(HOST_PREFIX[role])])}-{rng.randint(1, 9)}"
        )
        container = rng.choice(
            [name, f"{name}-1", f"{rng.choice(_CHOICES['compose_projects'])}_{name}_1", f"{name}-prod"]
        )
        f.update(container=container, host=host, instance=f"{host}:8080", image=image)
        labels.update(
            name=container,
            image=image,
            instance=f["instance"],
            job=rng.choice(_CHOICES["container_jobs"]),
        )
        if rng.random() < 0.3:
            labels["id"] = f"/docker/{_hex(rng, 12)}"
        f["subject"], f["subject_key"] = container, "container"
    f["labels"] = labels
    f["team"] = role
    return f
