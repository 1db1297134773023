"""Progress on stderr from a command's first moment, loading included.

Loading a scenario or a dump (imports of NumPy and the simulator, parsing, building the cluster)
takes seconds before the first simulated minute: a `Display` shows a spinner and the elapsed time
for each such stage, then the bars of the runs, in one transient rich Progress. It draws only on a
terminal and never with --json; otherwise every method does nothing, so callers need no branches.
"""

from __future__ import annotations

import sys
from typing import Any


class Display:
    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.progress: Any = None
        self._stage: Any = None

    def __enter__(self) -> Display:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}"),
                BarColumn(bar_width=30),
                TextColumn("{task.fields[detail]}"),
                TimeElapsedColumn(),
                transient=True,
                console=Console(stderr=True),
            )
            self.progress.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Take the display off the terminal (before the command prints its answer)."""
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def stage(self, text: str) -> None:
        """Say what is being done now (replacing the previous stage's line)."""
        if self.progress is None:
            return
        if self._stage is None:
            self._stage = self.progress.add_task(text, total=None, detail="")
        else:
            self.progress.update(self._stage, description=text)

    def end_stage(self) -> None:
        if self.progress is not None and self._stage is not None:
            self.progress.remove_task(self._stage)
            self._stage = None

    def add_bar(
        self,
        description: str,
        total: float,
        detail: str = "",
        *,
        start: bool = True,
        keep_stage: bool = False,
    ) -> Any:
        """A bar (None when nothing is drawn); it replaces the stage's line unless `keep_stage`."""
        if self.progress is None:
            return None
        if not keep_stage:
            self.end_stage()
        return self.progress.add_task(description, total=total, detail=detail, start=start)

    def update(self, bar: Any, **fields: Any) -> None:
        if self.progress is not None and bar is not None:
            self.progress.update(bar, **fields)

    def start(self, bar: Any) -> None:
        if self.progress is not None and bar is not None:
            self.progress.start_task(bar)
