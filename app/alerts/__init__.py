"""The alert router: a Jev client of the gateway that turns monitoring webhooks into pages.

Alertmanager, Grafana and Cloud Monitoring post alerts (`formats`, authenticated per source by
`senders`); each firing alert is classified by the gateway (`gateway`, an ID token for a private
service) under a policy (`policy`: questions, thresholds, routes, an uncertain band); the page goes
out through sinks (`sinks`: PagerDuty Events v2, Slack, a JSON webhook, the console). When the model
cannot answer in time, the page goes out anyway, unclassified, on the fallback route (`router`).
"""
