"""Processes a run may have left behind: found by their command line in /proc (Linux)."""

import os
import time


def process_alive(pid):
    """True unless `pid` is gone or a zombie (killed, waiting for a reaper that may never come)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != b"Z"


def processes_mentioning(text):
    """Live processes (not zombies) whose command line contains `text`, but for ourselves."""
    found = []
    needle = text.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if needle in cmdline and process_alive(int(entry)):
            found.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return found


def wait_until_gone(text, seconds=10.0):
    """Processes that mention `text` after waiting up to `seconds` for them to end."""
    deadline = time.monotonic() + seconds
    while True:
        left = processes_mentioning(text)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)
