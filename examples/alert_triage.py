"""Classify an alert with the unchanged `typesafe-sdk`, pointed at this kit by TYPESAFE_BASE_URL.

TYPESAFE_BASE_URL=http://127.0.0.1:8080 TYPESAFE_API_KEY=any python examples/alert_triage.py
"""

from typesafe_sdk import Choice, Noul, Score, TypeSafeClient

with TypeSafeClient(timeout=60) as client:
    response = client.system_one(
        state={"alert": "DiskUsageHigh", "host": "db-1", "value": "97%", "for": "15m"},
        questions={
            "page": Noul(instructions="Should on-call be paged now?"),
            "team": Choice(criteria={"database": None, "network": None, "app": None}),
            "severity": Score(criteria=["low", "medium", "high"]),
        },
    )
    print(f"model {response.model}, request {response.request_id}, usage {response.usage}")
    for name, answer in response.answers.items():
        print(name, answer)
