"""Jev request -> engine reads -> Jev answers."""

from app.decisions.decide import Decider, Decision
from app.decisions.policy import Policy

__all__ = ["Decider", "Decision", "Policy"]
