"""Compactions as data: the ledger, chars/4 calibration, what-if replays, strategies, probes."""
