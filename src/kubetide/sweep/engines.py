"""Where a sweep's simulations run: a local process pool, or a Dask distributed cluster.

Both engines run the same function, `simulate_one`, which is what `kubetide simulate` does for one
seed: build a `Simulation` of the scenario with the setting's flags, run it, and serialise its
summary with sim.output.summary_json. The scenarios (one, or one per --trace alternative) are loaded
once by the caller and shipped to each worker once (a pool initializer; a broadcast scatter on
Dask), so a task carries only its setting, trace id and seed. A run that raises comes back as an
error string; the sweep goes on.

`LocalEngine.map` runs any module-level function over items that way; `simulate --compare` runs its
settings through it (sweep/compare.py).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from kubetide.errors import UserError
from kubetide.sweep.grid import Setting, with_options


@dataclass(frozen=True)
class Task:
    setting: Setting
    seed: int
    trace: str = ""  # the --trace alternative's id; "" for the scenario as written


@dataclass(frozen=True)
class Outcome:
    task: Task
    summary_text: str | None  # summary.json's exact bytes, as text
    error: str | None


def simulate_one(scenario, setting: Setting, seed: int) -> tuple[str | None, str | None]:
    """(summary.json text, None), or (None, the error) when the simulation raises."""
    from kubetide.sim.report.output import summary_json
    from kubetide.sim.runtime.simulation import Simulation

    try:
        # Asked as `kubetide simulate` asks it, so a sweep run's summary.json is the lone run's.
        result = Simulation(with_options(scenario, setting), seed=seed, explain_unremovable=True).run()
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"
    return summary_json(result.summary), None


_shared: Any = None  # what every task of this pool worker process reads (set by _install)


def _install(shared: Any) -> None:
    global _shared
    _shared = shared
    # Ctrl-C reaches the whole process group: the parent alone decides what stops (it ends the
    # workers itself), so a worker's run is never cut into a half-written result by it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _call(function: Callable[[Any, Any], Any], item: Any) -> Any:
    return function(_shared, item)


def _simulate_task(scenarios: dict, task: Task) -> tuple[str | None, str | None]:
    return simulate_one(scenarios[task.trace], task.setting, task.seed)


def default_workers() -> int:
    return os.cpu_count() or 1


class LocalEngine:
    """A process pool over this machine's cores; with one worker, runs in this process."""

    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = workers or default_workers()

    def run(self, scenarios: dict, tasks: Iterable[Task]) -> Iterator[Outcome]:
        for task, value, error in self.map(_simulate_task, scenarios, tasks):
            if error is not None:  # the worker process itself died
                yield Outcome(task, None, f"{type(error).__name__}: {error}")
            else:
                yield Outcome(task, *value)

    def map(
        self, function: Callable[[Any, Any], Any], shared: Any, items: Iterable[Any]
    ) -> Iterator[tuple[Any, Any, BaseException | None]]:
        """(item, function(shared, item), None) for each item as it completes, or (item, None,
        the exception) when it raised. `shared` goes to each worker process once; `function`
        must be a module-level function (it is pickled by name)."""
        items = list(items)
        if self.workers == 1:
            for item in items:
                try:
                    value = function(shared, item)
                except Exception as exc:
                    yield item, None, exc
                else:
                    yield item, value, None
            return
        pool = ProcessPoolExecutor(self.workers, initializer=_install, initargs=(shared,))
        try:
            with _sigint_deferred():  # the first submit forks the workers
                futures = {pool.submit(_call, function, item): item for item in items}
            for future in as_completed(futures):
                error = future.exception()
                yield futures[future], (None if error is not None else future.result()), error
        except BaseException:
            # Ctrl-C, an early exit or an error: stop at once. Cancelling the futures alone would
            # still run the ones already handed to a worker's queue to their end.
            _end_workers(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold a Ctrl-C back until the block is done, then raise it. A KeyboardInterrupt raised while
    os.fork runs its at-fork hooks is printed and dropped by Python, so a Ctrl-C just as the pool
    starts its workers would otherwise be lost and every run would go on to its end."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's worker processes (Python 3.14's terminate_workers, else by hand)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


class DaskEngine:
    """The same tasks on a Dask distributed cluster: the scheduler at `address`, or a LocalCluster.

    `workers` sizes a LocalCluster; a remote cluster's own workers are counted once connected.
    `local_processes=False` runs a LocalCluster's workers as threads of this process (tests).
    """

    name = "dask"

    def __init__(self, address: str | None = None, workers: int | None = None, local_processes: bool = True):
        self.address = address
        self.workers = workers or default_workers()
        self.local_processes = local_processes

    def run(self, scenarios: dict, tasks: Iterable[Task]) -> Iterator[Outcome]:
        try:
            from distributed import Client, LocalCluster
            from distributed import as_completed as dask_completed
        except ImportError:
            raise UserError("--engine dask: needs Dask (pip install 'kubetide[sweep]')") from None

        with ExitStack() as stack:
            if self.address is None:
                cluster = stack.enter_context(
                    LocalCluster(
                        n_workers=self.workers,
                        threads_per_worker=1,
                        processes=self.local_processes,
                        dashboard_address=None,
                    )
                )
                client = stack.enter_context(Client(cluster))
            else:
                check_address(self.address)
                try:
                    client = stack.enter_context(Client(self.address, timeout="10s"))
                except (OSError, TimeoutError) as exc:
                    raise UserError(f"--scheduler-address {self.address}: cannot connect ({exc})") from None
                except ValueError as exc:  # distributed's address parsing: no port, unknown scheme
                    raise UserError(f"--scheduler-address {self.address}: not an address ({exc})") from None
                self.workers = len(client.scheduler_info()["workers"]) or self.workers
            shared = {trace: client.scatter(s, broadcast=True) for trace, s in scenarios.items()}
            futures = {
                client.submit(simulate_one, shared[t.trace], t.setting, t.seed, pure=False): t for t in tasks
            }
            try:
                for future in dask_completed(futures):
                    if future.status == "error":
                        error = future.exception()
                        yield Outcome(futures[future], None, f"{type(error).__name__}: {error}")
                    else:
                        yield Outcome(futures[future], *future.result())
            finally:
                client.cancel(list(futures))


# The transports distributed connects by here: its ucx:// needs UCX-Py, without which it fails
# with a TypeError (inproc:// reaches a scheduler in this process: tests, notebooks).
SCHEMES = ("tcp", "tls", "ws", "wss", "inproc")
TLS_SCHEMES = ("tls", "wss")
TLS_SETTINGS = "distributed.comm.tls.ca-file, distributed.comm.tls.client.cert and .key"


def check_address(address: str) -> None:
    """A scheduler address distributed can connect to from here; a TLS one needs Dask's TLS
    configuration (the CA and the client's certificate), which distributed only looks for once
    it connects, and then fails with a TypeError."""
    scheme, separator, _ = address.partition("://")
    if separator and scheme not in SCHEMES:
        schemes = ", ".join(f"{name}://" for name in SCHEMES)
        raise UserError(
            f"--scheduler-address {address}: unsupported scheme {scheme!r:.40} (expected {schemes})"
        )
    if scheme not in TLS_SCHEMES:
        return
    from distributed.security import Security

    try:
        context = Security().get_connection_args("client").get("ssl_context")
    except (OSError, ValueError) as exc:  # a configured file missing or not a certificate
        raise UserError(f"--scheduler-address {address}: Dask's TLS configuration: {exc}") from None
    if context is None:
        raise UserError(
            f"--scheduler-address {address}: no TLS configuration: set Dask's {TLS_SETTINGS} "
            "(e.g. DASK_DISTRIBUTED__COMM__TLS__CA_FILE)"
        )
