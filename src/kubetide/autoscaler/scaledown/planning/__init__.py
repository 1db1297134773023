"""Scale-down planning: which nodes can go, and why the others cannot (the parallel-drain
design's UpdateUnneededNodes, and the plan it produces)."""
