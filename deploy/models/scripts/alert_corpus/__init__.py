"""Realistic alerts, as the kit's alert router sends them to the model, with their right answers.

Standard library only, and the kit's own standard-library modules (app/alerts/records.py: the
label fingerprint, the summary, `Alert.state()`; app/gateway/decisions/orders.py: option orders;
evals/alerts/gofmt.py: Go's printing), never copies of them: the training script (engine python)
imports this package with the checkout's root on sys.path, the kit's tests load it as
deploy/devstack/stack.py loads toy_task.py. Data in data/*.toml (terms, subjects, technologies,
phrasings, senders' words, weights, the kinds, the state kinds and their states), read by `data`;
modules: `common` (terms, helpers, names), `subjects`, `tech`, `kinds` (a kind, its facts'
drawers), `states` (a state kind's facts and drawers), `catalog` (the kinds built from the data,
drawers resolved by name, draw weights, and `configure`: draw with a sweep's mix of weights),
`facts_*` (the named drawers the data refers to), `alerts` (one alert), `render` (senders'
payloads), `streams`.

An alert is drawn from one of 75 kinds: 56 mostly about magnitudes (hosts, Kubernetes, databases,
caches, queues, DNS, TLS, load balancers, network, application SLOs), each with its own names
(rendered CamelCase, snake_case or as a sentence, as each sender's users write them), value scale,
summaries and descriptions, and 19 about states (something down, no leader or lost quorum, split
brain, replication broken, no healthy backend, crash-looping, throughput at zero, probes failing,
workloads with 0 replicas, WAL/fsync/backups failing, storage full, config reloads, brokers' alarms,
runtimes, GitOps syncs), written for the 54 technologies of TECH (data stores and their proxies,
DNS, proxies, meshes and CNIs, brokers, identity and LLM gateways, app runtimes) with their exporters'
job names, ports and label sets. Kinds are drawn by weight, so that state alerts (about two fifths)
are seen often enough at a fixed training budget. Label sets vary by subject and never name a team.
An alert is rendered as a real sender's payload for each source the router reads (Alertmanager
webhook v4, Grafana webhook, Cloud Monitoring incident: the shapes of tests/data/alerts/ and
app/alerts/formats.py), and with it the `state` that `Alert.state()` builds from that payload
(app/alerts/records.py, and formats.py's merging of Cloud Monitoring's labels, its policy severity
among them), so that training needs none of the kit's third-party dependencies; the kit's test
(tests/deploy/models/test_alert_corpus.py) checks the two agree. Prometheus-style rules are written as
people write them: plain sentences, short summaries ("Postgresql down (instance pg-1:9187)"), and
the widely copied community template ("<sentence>\n  VALUE = {{ $value }}\n  LABELS = {{ $labels }}",
in Go's float and map printing).
Also plain dict and string states like the README's SDK example. And a share of reads (`catalogue_share`)
are the public rule catalogue's own alerts (data/catalogue.jsonl.gz, CC BY 4.0, data/NOTICE.md):
its rules outside the eval set's categories, rendered as the eval renders its rules, asked page and
severity, half of them without their severity label.

The right answers, in the default policy's terms (app/alerts/default_policy.toml):
  team     : database / network / application, the owner of the system the alert is about (for
             hosts, pods and jobs: the role of the host or workload, e.g. disk on db-1: database);
             data stores, caches, their pools and proxies and etcd: database; DNS, proxies, meshes,
             CNIs, Consul, certificates and blackbox probes: network; services, runtimes, containers,
             brokers (and the Zookeeper coordinating them), identity, GitOps: application;
  severity : info / warning / error / critical, decided by the value for magnitude kinds (disk 97 %
             vs 82 %, 5xx 8 % vs 1.5 %, lag 900 s vs 20 s) and by the state for the others, as SRE
             practice rates them: availability loss of a production service (down, unreachable, no
             leader, lost quorum, split brain, no healthy backend, rejects all writes, crash-looping,
             throughput at zero) or data-loss risk (replication broken, WAL archiving or fsync
             failing, disk full) is critical; degraded but serving (1 of 3 nodes down, a few leader
             changes, one backend of 4 unhealthy, config reload failed, high but not exhausted
             usage) is warning or error; events (a restart, a version mismatch, a slow job) info or
             warning. Non-critical states share the critical ones' words ("down", "leader",
             "unhealthy"), so the level is read from the state, not from a keyword; the values of
             state alerts are 0/1 or small counts, as `up == 0`-style rules give them;
  page     : `needs_page(severity)`: true iff critical, i.e. user-facing impact, data loss, or a
             failure that will spread before working hours: a human is needed now.

A share of alerts (`ambiguous` in data/weights.toml, of the magnitude kinds) sits at the boundary
between two adjacent levels of its scale, with no severity label, and its level is drawn between
the two: as in toy_task.py, no model can always be right on those, and 0.5 is the right
probability for them.

Everything is drawn from a seeded random.Random: a seed gives the same alerts on any machine.
Splits use different seeds (train 0, dev 1, test 2); the kinds and phrasings are shared, so
held-out alerts are new combinations of known phrasings and values, not new phrasings.
"""

from __future__ import annotations

from app.alerts.records import Alert, labels_fingerprint
from app.gateway.decisions.orders import option_order
from evals.alerts.gofmt import go_labels, go_value

from .alerts import make_alert
from .catalog import configure, kind, kinds, weights_table
from .common import (
    LEVELS,
    POLICY,
    SDK_LEVELS,
    SDK_PAGE,
    SDK_TEAMS,
    SOURCES,
    SPLIT_SEEDS,
    TEAMS,
    TO_SDK_LEVEL,
    camel_identifier,
    needs_page,
    sentence,
    snake,
)
from .kinds import Kind
from .render import RENDERERS, render_alertmanager, render_cloud_monitoring, render_grafana, sdk_state
from .streams import (
    CATALOGUE,
    SDK_QUESTIONS,
    Question,
    Read,
    answer_index,
    catalogue,
    catalogue_answers,
    catalogue_stream,
    example,
    examples,
    policy_questions,
    read_of,
    sdk_answers,
    sdk_examples,
    train_stream,
    unlabelled,
)
from .tech import TECH, Tech

__all__ = [
    "CATALOGUE",
    "LEVELS",
    "POLICY",
    "RENDERERS",
    "SDK_LEVELS",
    "SDK_PAGE",
    "SDK_QUESTIONS",
    "SDK_TEAMS",
    "SOURCES",
    "SPLIT_SEEDS",
    "TEAMS",
    "TECH",
    "TO_SDK_LEVEL",
    "Alert",
    "Kind",
    "Question",
    "Read",
    "Tech",
    "answer_index",
    "camel_identifier",
    "catalogue",
    "catalogue_answers",
    "catalogue_stream",
    "configure",
    "example",
    "examples",
    "go_labels",
    "go_value",
    "kind",
    "kinds",
    "labels_fingerprint",
    "make_alert",
    "needs_page",
    "option_order",
    "policy_questions",
    "read_of",
    "render_alertmanager",
    "render_cloud_monitoring",
    "render_grafana",
    "sdk_answers",
    "sdk_examples",
    "sdk_state",
    "sentence",
    "snake",
    "train_stream",
    "unlabelled",
    "weights_table",
]
