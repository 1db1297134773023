"""The mutable cluster world simulations run on: fork / revert / commit."""

from kubetide.snapshot.dump import snapshot_from_dump
from kubetide.snapshot.memo import Memo
from kubetide.snapshot.snapshot import ClusterSnapshot, SnapshotError, SnapshotObserver

__all__ = ["ClusterSnapshot", "Memo", "SnapshotError", "SnapshotObserver", "snapshot_from_dump"]
