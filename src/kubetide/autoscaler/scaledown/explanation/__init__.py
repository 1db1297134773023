"""Scale-down explanation: what blocks each unremovable node, and what change would unblock it."""
