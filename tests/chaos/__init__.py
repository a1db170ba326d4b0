"""Chaos tests: two or three `dralloc run` processes against a sandbox API server under faults.

processes.py starts and stops the sandbox and the replicas (real subprocesses), workload.py
makes and finishes pods, audit.py checks the invariants through the API, scenario.py
drives a whole run; test_chaos.py holds the CI-sized run and the opt-in long one
(`make chaos`).
"""
