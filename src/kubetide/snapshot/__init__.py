"""The mutable cluster world simulations run on: fork / revert / commit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubetide.lazy import lazy_exports

if TYPE_CHECKING:
    from kubetide.snapshot.dump import snapshot_from_dump
    from kubetide.snapshot.memo import Memo
    from kubetide.snapshot.snapshot import ClusterSnapshot, SnapshotError, SnapshotObserver
else:
    # Each name's module is imported when the name is first read (kubetide.lazy says why).
    __getattr__ = lazy_exports(
        __name__,
        {
            "kubetide.snapshot.dump": ("snapshot_from_dump",),
            "kubetide.snapshot.memo": ("Memo",),
            "kubetide.snapshot.snapshot": ("ClusterSnapshot", "SnapshotError", "SnapshotObserver"),
        },
    )

__all__ = ["ClusterSnapshot", "Memo", "SnapshotError", "SnapshotObserver", "snapshot_from_dump"]
