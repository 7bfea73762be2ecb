"""Shared test code, by room: `gateway`, `alerts`, `deploy`, `terraform` (fixtures are in tests/fixtures/)."""
