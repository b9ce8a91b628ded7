"""Watch the running command: pump its output, sample its libraries, reap it.

One selector waits on the command's two pipes, a pidfd (it exited) and, on a terminal, a
SIGCHLD wakeup socket (it stopped). After the command exits, descendants may still hold
its pipes: they are drained until quiet for DRAIN_QUIET_S, then left (a daemonised
grandchild must not hang prov).
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from typing import Any

from provenance.exec.libraries import LibrarySampler
from provenance.exec.process import Foreground, suspend_with
from provenance.exec.tee import Tee

DRAIN_QUIET_S = 0.5


class _Reaper:
    """Waits for the command; a stop (^Z) under job control suspends prov with it."""

    def __init__(self, proc: subprocess.Popen, fg: Foreground | None, job_control: bool) -> None:
        self.proc = proc
        self.fg = fg
        self.job_control = job_control
        self.status: int | None = None
        self.usage: Any = None

    def reap(self, block: bool, stops: bool = True) -> None:
        if self.status is not None:
            return
        flags = 0 if block else os.WNOHANG
        if self.job_control and stops:
            flags |= os.WUNTRACED
        try:
            pid, st, ru = os.wait4(self.proc.pid, flags)
        except ChildProcessError:
            pid, st, ru = self.proc.pid, 0, None
        if pid != self.proc.pid:
            return
        if os.WIFSTOPPED(st):
            suspend_with(self.proc.pid, self.fg)
            return
        self.status = os.waitstatus_to_exitcode(st)
        self.usage = ru
        self.proc.returncode = self.status


class _ChildSignals:
    """SIGCHLD through a wakeup socket: tells the loop the command stopped (pidfd cannot)."""

    def __init__(self, sel: selectors.BaseSelector) -> None:
        import socket

        self.r, self.w = socket.socketpair()
        self.r.setblocking(False)
        self.w.setblocking(False)
        self.old_chld = signal.signal(signal.SIGCHLD, lambda *_: None)
        self.old_wakeup = signal.set_wakeup_fd(self.w.fileno())
        sel.register(self.r, selectors.EVENT_READ, "chld")

    def drain(self) -> None:
        with contextlib.suppress(OSError):
            while self.r.recv(4096):
                pass

    def close(self) -> None:
        signal.set_wakeup_fd(self.old_wakeup)
        signal.signal(signal.SIGCHLD, self.old_chld)
        self.r.close()
        self.w.close()


def _open_pidfd(pid: int, sel: selectors.BaseSelector) -> int | None:
    if not hasattr(os, "pidfd_open"):
        return None
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return None
    sel.register(fd, selectors.EVENT_READ, "exit")
    return fd


class _Watch:
    def __init__(self, proc: subprocess.Popen, out_w, err_w, stream: bool, sample: bool,
                 fg: Foreground | None) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.tees = [Tee(proc.stdout, 1 if stream else None, out_w),
                     Tee(proc.stderr, 2 if stream else None, err_w)]
        self.sel = selectors.DefaultSelector()
        for t in self.tees:
            self.sel.register(t.src, selectors.EVENT_READ, t)
        self.pidfd = _open_pidfd(proc.pid, self.sel)
        self.sampler = LibrarySampler(proc.pid) if sample else None
        if self.sampler:
            self.sampler.sample()
        self.next_sample = time.monotonic() + (
            self.sampler.next_interval() if self.sampler else 1e9)
        job_control = (fg is not None and fg.fd is not None
                       and threading.current_thread() is threading.main_thread())
        self.reaper = _Reaper(proc, fg, job_control)
        self.chld = _ChildSignals(self.sel) if job_control else None

    def _timeout(self) -> float | None:
        if self.reaper.status is None:
            timeout = max(0.0, self.next_sample - time.monotonic()) if self.sampler else None
            if self.pidfd is None:
                timeout = min(timeout if timeout is not None else 0.05, 0.05)
            return timeout
        return DRAIN_QUIET_S

    def _handle(self, events) -> int:
        moved = 0
        for key, _ in events:
            if key.data == "chld":
                self.chld.drain()
                self.reaper.reap(block=False)
            elif key.data == "exit":
                self.sel.unregister(self.pidfd)
                # exited: reap now (a stop is only reported through SIGCHLD)
                self.reaper.reap(block=True, stops=False)
            else:
                t = key.data
                moved += t.pump()
                if not t.open:
                    self.sel.unregister(t.src)
                    if t.broken:
                        t.pipe.close()
        return moved

    def _tick(self) -> None:
        if self.pidfd is None:
            self.reaper.reap(block=False)
        if self.reaper.status is None and self.sampler and time.monotonic() >= self.next_sample:
            self.sampler.sample()
            self.next_sample = time.monotonic() + self.sampler.next_interval()

    def loop(self) -> None:
        while True:
            if self.reaper.status is not None and not any(t.open for t in self.tees):
                break
            events = self.sel.select(self._timeout())
            moved = self._handle(events)
            if self.reaper.status is None:
                self._tick()
            elif not events and not moved:
                break  # quiet since the command exited: descendants kept the pipes open

    def close(self) -> None:
        self.sel.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
        if self.chld is not None:
            self.chld.close()
        self.proc.stdout.close()
        self.proc.stderr.close()


def watch(proc: subprocess.Popen, out_w, err_w, stream: bool, sample: bool,
          fg: Foreground | None = None) -> tuple[int, Any, LibrarySampler | None]:
    """Pump output and sample libraries until the command has exited and its pipes drained.

    On a terminal (`fg` holds it) job control works as in a shell: when ^Z stops the command,
    prov takes the terminal back and stops itself, so the user's shell sees the job stop;
    on `fg` prov hands the terminal to the command again and continues it.
    Returns (returncode, the command's rusage or None, the sampler or None).
    """
    w = _Watch(proc, out_w, err_w, stream, sample, fg)
    try:
        w.loop()
    finally:
        w.close()
    status = w.reaper.status
    return status if status is not None else 0, w.reaper.usage, w.sampler
