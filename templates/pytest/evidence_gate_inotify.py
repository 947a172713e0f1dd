"""Change notifications for the leases and the source-tree watch: inotify through ctypes.

``Watches`` is one inotify instance and who owns each of its watches; ``read()`` takes
the events queued since the last read without waiting. Before a directory is watched its
filesystem must be one where every change passes through this kernel (read from
/proc/self/mountinfo): elsewhere a watch could miss a change, and ``Unwatchable`` says why,
as it does for every failure of inotify itself. The caller then falls back to its scan.

Needs no pytest; Linux only (anywhere else ``Watches()`` raises ``Unwatchable``).
"""

import contextlib
import errno
import os
import re
import select
import struct
import sys

from evidence_gate_files import lstat, within


class Unwatchable(Exception):
    """Notifications cannot be trusted for this run; the message says why."""


# What a watch is on: a member file, a directory of a group's tree, a directory above a base,
# a directory of the source tree outside the groups.
FILE, DIRECTORY, ABOVE, TREE = "file", "directory", "above", "tree"

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x1000000, 0x2000000, 0x40000000

# Directories report entries coming and going, files their content and metadata (IN_ATTRIB:
# mode, times, link count). Directories do not ask for IN_MODIFY: a write would then queue
# one event per watch, which never coalesce, and a large write would overflow the queue.
# IN_DONT_FOLLOW: a link is watched as itself; IN_ONLYDIR: a directory that became anything
# else is not watched.
# IN_ATTRIB on directories: a directory's mode is leased too. The source tree's directories also
# report their files' closes after writing and metadata: nobody watches those files one by one.
SELF_EVENTS = IN_DELETE_SELF | IN_MOVE_SELF
DIRECTORY_MASK = (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | SELF_EVENTS | IN_ONLYDIR
                  | IN_DONT_FOLLOW)
MASKS = {
    FILE: IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | SELF_EVENTS | IN_DONT_FOLLOW,
    DIRECTORY: DIRECTORY_MASK,
    ABOVE: DIRECTORY_MASK,
    TREE: DIRECTORY_MASK | IN_CLOSE_WRITE,
}

INOTIFY_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name
INOTIFY_READ = 1 << 16
LONGEST_EVENT = INOTIFY_EVENT.size + 256  # NAME_MAX and its NUL

# Filesystems on which every change passes through this kernel, so that a watch sees it.
# On the others (NFS, CIFS/SMB, 9p, virtiofs, FUSE, Ceph, Lustre, ...) another client or
# the server behind the mount can change a file without an event here: they get the scan.
# overlay: changing its layers underneath a mounted overlay is undefined for overlayfs itself.
LOCAL_FILESYSTEMS = frozenset({
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "bcachefs", "zfs", "jfs", "reiserfs",
    "tmpfs", "ramfs", "overlay", "vfat", "exfat", "ntfs3", "hfsplus",
})


class Watches:
    """One inotify instance for the run, through ctypes, and who owns each of its watches.

    A watch (wd) is per inode, so it may have several owners (lease, kind, rel): a
    directory of two groups, a file reached under two names. The "lease" of an owner is
    whatever asked for the watch and says where rel is (its path(rel)): a Lease, or the Tree.
    """

    def __init__(self):
        if sys.platform != "linux":
            raise Unwatchable(f"no inotify on {sys.platform}")
        try:
            import ctypes  # here, not at the top: only runs that watch need it
            libc = ctypes.CDLL(None, use_errno=True)
            init1, self.add_watch, self.rm_watch = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
        except (ImportError, OSError, AttributeError) as e:
            raise Unwatchable(f"no inotify through ctypes: {e}") from None
        init1.argtypes = [ctypes.c_int]
        self.add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        self.get_errno = ctypes.get_errno
        self.fd = init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise Unwatchable(inotify_failure("inotify_init1", self.get_errno()))
        self.queued = select.poll()
        self.queued.register(self.fd, select.POLLIN)
        self.owners = {}  # wd -> {(lease, kind, rel)}
        self.wd_of = {}  # (lease, kind, rel) -> wd
        self.unowned = set()  # wds that lost their last owner; prune() removes them unless owned again
        self.trusted = set()  # st_dev of the filesystems checked against LOCAL_FILESYSTEMS
        self.mounts = None

    def add(self, lease, kind, rel):
        """Watch rel of the lease; False if it is not there (or, as a directory, is no longer one)."""
        path = lease.path(rel)
        if kind != FILE:
            self.trust(path)
        wd = self.add_watch(self.fd, os.fsencode(path), MASKS[kind])
        if wd < 0:
            error = self.get_errno()
            if error not in (errno.ENOENT, errno.ENOTDIR):
                raise Unwatchable(inotify_failure("inotify_add_watch", error, path))
            self.drop(lease, kind, rel)
            return False
        owner = (lease, kind, rel)
        old = self.wd_of.get(owner)
        if old != wd:
            if old is not None:
                self.disown(owner, old)
            self.wd_of[owner] = wd
            self.owners.setdefault(wd, set()).add(owner)
            self.unowned.discard(wd)
        return True

    def has(self, lease, kind, rel):
        return (lease, kind, rel) in self.wd_of

    def drop(self, lease, kind, rel):
        owner = (lease, kind, rel)
        wd = self.wd_of.pop(owner, None)
        if wd is not None:
            self.disown(owner, wd)

    def disown(self, owner, wd):
        owners = self.owners[wd]
        owners.discard(owner)
        if not owners:
            self.unowned.add(wd)

    def forget(self, wd):
        """The kernel removed this watch (its inode is gone, or prune() removed it)."""
        for owner in self.owners.pop(wd, ()):
            if self.wd_of.get(owner) == wd:
                del self.wd_of[owner]
        self.unowned.discard(wd)

    def prune(self):
        """Remove the watches nothing owns any more: their inodes left every group."""
        for wd in self.unowned:
            if not self.owners.get(wd):
                self.owners.pop(wd, None)
                self.rm_watch(self.fd, wd)
        self.unowned.clear()

    def read(self):
        """The events queued since the last read, as (wd, mask, name), without waiting."""
        events = []
        # poll first: when nothing is queued (after most tests) it is cheaper than a failing read.
        while self.queued.poll(0):
            try:
                data = os.read(self.fd, INOTIFY_READ)
            except OSError as e:  # a test closed descriptors it did not own
                raise Unwatchable(f"cannot read the inotify queue: {e}") from None
            offset = 0
            while offset < len(data):
                wd, mask, _, size = INOTIFY_EVENT.unpack_from(data, offset)
                offset += INOTIFY_EVENT.size
                events.append((wd, mask, os.fsdecode(data[offset:offset + size].rstrip(b"\0"))))
                offset += size
            if len(data) <= INOTIFY_READ - LONGEST_EVENT:  # the queue was emptied
                break
        return events

    def trust(self, path):
        """Refuse a directory on a filesystem where a change can bypass this kernel."""
        st = lstat(path)
        if st is None or st.st_dev in self.trusted:
            return
        if self.mounts is None:
            self.mounts = read_mounts()
        real = os.path.realpath(path)
        # The longest mount point above it; of mounts on the same point, the last one shows.
        _, kind = max(((point, kind) for point, kind in reversed(self.mounts) if within(real, point.rstrip("/"))),
                      key=lambda mount: len(mount[0]), default=(None, "an unknown filesystem"))
        if kind not in LOCAL_FILESYSTEMS:
            raise Unwatchable(f"{path} is on {kind}, where a change need not pass through this kernel")
        self.trusted.add(st.st_dev)

    def close(self):
        with contextlib.suppress(OSError):  # already closed by a test that closed descriptors it did not own
            os.close(self.fd)


def inotify_failure(call, error, path=None):
    limit = {errno.ENOSPC: " (the limit is fs.inotify.max_user_watches)",
             errno.EMFILE: " (the limits are fs.inotify.max_user_instances and the open-file limit)"}
    where = f" {path}" if path else ""
    return f"{call}{where}: {os.strerror(error)}{limit.get(error, '')}"


def read_mounts():
    """(mount point, filesystem type) of each mount this process sees, in mount order."""
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise Unwatchable(f"cannot tell filesystems apart: {e}") from None
    mounts = []
    for line in lines:
        # ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS
        fields = line.split(b" ")
        point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), fields[4])  # \040 is a space
        mounts.append((os.fsdecode(point), os.fsdecode(fields[fields.index(b"-", 6) + 1])))
    return mounts
