"""What a test leaves running, for the run records: threads and child processes.

A change to a fixture group made while an earlier test's thread or process still runs
cannot be blamed on the test that was running then; ``evidence_gate_records`` asks
``Leftovers`` after each test and before the next, and says so in the result instead.

Needs no pytest; reads /proc on Linux (elsewhere only threads are seen).
"""

import os
import threading


class Leftovers:
    """Threads and child processes left running by a test (or by start-up and collection).

    note(owner) after each test takes what appeared since the previous note. Cheap when
    nothing did: with only the main thread, no thread list is built, and each thread's
    children are read with one pread of a /proc/self/task/<tid>/children kept open. A change
    made while an earlier test's leftovers run cannot be blamed on anyone.
    """

    def __init__(self, known=()):
        # Known: the main thread and `known` (a plugin's idle threads, evidence_gate_aside);
        # anything else was started by someone.
        self.threads = {threading.main_thread(), *known}
        self.children = set()
        self.left = []  # (owner, thread or pid), still running at the last look
        self.tasks = {}  # thread -> descriptor of its /proc/self/task/<tid>/children

    def note(self, owner):
        if not self.children and threading.active_count() == len(self.threads) \
                and all(thread.is_alive() for thread in self.threads) \
                and not self.children_of(threading.main_thread()):
            return  # as at the last note: the same threads, no child (most tests)
        threads = set(threading.enumerate())
        children = self.child_pids(threads)
        self.left += [(owner, thread) for thread in threads - self.threads]
        self.left += [(owner, pid) for pid in children - self.children]
        self.threads, self.children = threads, children

    def running(self):
        """The leftovers still running, oldest first (nothing to look at, most of the time)."""
        if self.left:
            children = self.child_pids(set(threading.enumerate()))
            self.left = [(owner, what) for owner, what in self.left
                         if (what.is_alive() if isinstance(what, threading.Thread)
                             else what in children and process_running(what))]
        return self.left

    def child_pids(self, threads):
        """Child processes of this process: each thread's are listed under its own task."""
        for gone in [thread for thread in self.tasks if thread not in threads]:
            close_quietly(self.tasks.pop(gone))
        pids = set()
        for thread in threads:
            pids.update(self.children_of(thread))
        return pids

    def children_of(self, thread):
        for attempt in (1, 2):  # once more on a fresh descriptor: a test may have closed ours
            fd = self.tasks.get(thread)
            try:
                if fd is None:
                    if thread.native_id is None:
                        return []
                    fd = self.tasks[thread] = os.open(f"/proc/self/task/{thread.native_id}/children",
                                                      os.O_RDONLY | os.O_CLOEXEC)
                return [int(word) for word in os.pread(fd, 65536, 0).split()]
            except (OSError, ValueError):  # not Linux, an old kernel, the thread just ended, a closed fd
                if fd is not None:
                    close_quietly(self.tasks.pop(thread))
        return []

    def close(self):
        for fd in self.tasks.values():
            close_quietly(fd)
        self.tasks = {}


def close_quietly(fd):
    try:
        os.close(fd)
    except OSError:
        pass


def process_running(pid):
    """False once it is a zombie: ended, only waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def describe_leftovers(leftovers):
    owner, what = leftovers[0]
    by = "started at start-up or collection" if owner == "collection" else f"left by {owner}"
    text = f"a thread {by} ({what.name!r})" if isinstance(what, threading.Thread) else f"a process {by} (pid {what})"
    return text + (f" and {len(leftovers) - 1} more" if len(leftovers) > 1 else "")
