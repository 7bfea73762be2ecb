"""Jev request -> engine reads -> Jev answers: `plan` (reads), `policy` (re-read math), `decide`."""
