"""Scale-down actuation: taking the planned nodes away safely (the parallel-drain design's
StartDeletion), DeletionCandidate soft taints, and what a restart finds left behind."""
