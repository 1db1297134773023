"""The simulated cluster: one module per component (engine, world, cloud, scheduler, controllers,
kubelet, eviction API, node lifecycle, faults, the node QoS agents, metrics), wired by
simulation.py. Runs a loaded scenario (sim/spec); the reports (sim/report) read its result."""
