"""Submissions that must fail, and the verdicts the harness must give them."""
