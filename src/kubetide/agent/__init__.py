"""The node QoS agent on a real node (`kubetide qos-agent`): an adapter around kubetide.qos.

    cgroups.py   the kubelet's pod cgroup layouts (v1/v2, cgroupfs/systemd): readings and quotas
    usage.py     UsageSource: node usage from /proc + pod usage from cgroups, or the kubelet summary
    throttle.py  CFS quota throttling and restoring, with the originals kept in a state file
    watch.py     list + watch of the pods on this node, its Node and crane's objects
    actuator.py  the QosActuator for a live node: cgroups, the Eviction API, the node taint, events
    loop.py      one sample: usage + objects -> NodeState -> QosAgent.step, metrics

All I/O lives here; every decision is kubetide.qos's, the same code `kubetide qos` and the
simulator run.
"""
