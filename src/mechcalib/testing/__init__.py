"""Helpers for testing optimisers and models: the global-optimisation test functions (``functions``)."""
