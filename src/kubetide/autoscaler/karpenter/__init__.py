"""Karpenter's provisioning and disruption behind kubetide's ports (`policy: karpenter`).

- `cost`: eviction and disruption costs, the savings ratio that orders candidates;
- `scheduling`: the scheduling simulation (existing nodes, NodeClaims, cheapest instance type);
- `methods`: the disruption methods in Karpenter's order, each returning a `Command` or None;
- `controller`: `Karpenter`, the loop: batching, provisioning, validation, orchestration,
  termination. A NodePool's disruption settings (consolidation policy, consolidateAfter, budgets)
  are model/nodepool.py's, which the flags' parser checks too.
"""
