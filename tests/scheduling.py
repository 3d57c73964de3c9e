"""How `make test` hands test files to its workers: xdist's file-by-file scheduling, made safe when a worker dies.

A test that takes its worker down (an abort inside a compiler, the kernel's out-of-memory killer) must fail that
one test and let the rest of the suite run. pytest-xdist 3.8's file scheduling does not: it puts every file the
dead worker had finished back on the queue as empty work, starts the crashed test again on the replacement, and
can leave a worker waiting for a second test that never comes, so the session hangs until CI's time limit
(pytest-xdist issues 1323, 1327, 1378 and pull request 1371). This scheduler keeps the order and grouping of
`--dist loadfile` and fixes those three points, and two more that show when workers die together: work handed to a
replacement before its collection arrives (a KeyError that xdist swallows, losing the work) and work sent to a
worker whose death is not yet reported (an OSError).
"""

from xdist.scheduler import LoadFileScheduling


class CrashSafeLoadFile(LoadFileScheduling):
    def remove_node(self, node):
        """Forget a worker that finished or died; when it died, return the test it was running (reported failed
        by xdist) and queue again only the tests of its files that had not run yet."""
        workload = self.assigned_work.pop(node)
        if not self._pending_of(workload):
            return None
        crashed = next(nodeid for unit in workload.values() for nodeid, done in unit.items() if not done)
        workload[self._split_scope(crashed)][crashed] = True     # run once, reported failed: never again
        for scope, unit in workload.items():
            if not all(unit.values()):
                self.workqueue[scope] = unit
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed

    def _reschedule(self, node):
        """Give a worker files until it has more than two tests waiting, and tell it to finish once the queue
        is empty. (A worker runs a test only when it knows the next one or is told to finish, so a worker left
        with a single test and no shutdown waits forever.)"""
        if node.shutting_down or node not in self.registered_collections:
            return      # a replacement gets its work when its collection arrives (xdist calls schedule then)
        while self.workqueue and self._pending_of(self.assigned_work[node]) <= 2:
            try:
                self._assign_work_unit(node)
            except OSError:
                return  # it died: what it was just given is queued again when its death is reported
        if not self.workqueue:
            node.shutdown()


def make_scheduler(config, log):
    """The scheduler for `--dist loadfile`; None leaves xdist's own choice for every other mode."""
    if config.getvalue("dist") == "loadfile":
        return CrashSafeLoadFile(config, log)
    return None
