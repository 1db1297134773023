"""Sweeps: one scenario simulated over a grid of autoscaler settings and many seeds.

grid.py turns `--grid FLAG=V1,V2` into settings, engines.py runs each (setting, seed) as an
ordinary simulation on a local process pool or a Dask cluster, results.py aggregates the runs'
summaries, and report.py draws the trade-offs. An adapter beside sim/: it only drives simulations.
"""
