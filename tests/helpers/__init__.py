"""Shared test code, by room: `gateway`, `deploy`, `terraform` (fixtures are in tests/fixtures/)."""
