"""CloudProvider implementations outside the simulator, and the node group schema they share.

- ``schema``: the nodeGroups schema (scenario files and GROUPS.yaml).
- ``static``: a read-only provider over a cluster dump, for `kubetide plan`.
"""
