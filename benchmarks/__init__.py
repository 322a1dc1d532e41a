"""Runnable benchmarks of the gateway; `python -m benchmarks.run_all` runs every one of them."""
