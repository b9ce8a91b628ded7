"""One process's facts and the file they live in: `$PROV_RUN_DIR/probe/<pid>-<start>.json`.

The file is rewritten whole at each update (temp file + rename), so whatever ends the
process (os._exit, SIGKILL, a crash) leaves the last complete update, never half a file.
The name carries the start time as well as the pid: `os.exec*` keeps the pid.
"""

import _thread
import os
import sys
import time

from .jsonout import dumps

FORMAT = "prov-probe/1"


def _orig_argv():
    argv = getattr(sys, "orig_argv", None)  # Python 3.10+
    return list(argv) if argv is not None else [sys.executable] + list(sys.argv)


class Record:
    def __init__(self, run_dir, state="on"):
        self.dir = os.path.join(run_dir, "probe")
        self.lock = _thread.allocate_lock()
        self.facts = {
            "format": FORMAT,
            "state": state,
            "argv": list(getattr(sys, "argv", [])),
            "orig_argv": _orig_argv(),
            "executable": sys.executable,
            "base_prefix": getattr(sys, "base_prefix", sys.prefix),
            "prefix": sys.prefix,
            "python": "%d.%d.%d" % sys.version_info[:3],
            "cwd": os.getcwd(),
            "stage": "start",
            "errors": [],
        }
        self._new_process(None)

    def _new_process(self, forked_from):
        self.pid = os.getpid()
        self.facts["pid"] = self.pid
        self.facts["ppid"] = os.getppid()
        self.facts["started_at"] = time.time()
        if forked_from is not None:
            self.facts["forked_from"] = forked_from
            self.facts.pop("exit", None)
        self.path = os.path.join(self.dir, "%d-%d.json" % (self.pid, time.time_ns()
                                 if hasattr(time, "time_ns") else int(time.time() * 1e9)))

    def after_fork(self):
        """In a forked child: a new process, a new file (the parent's lock may be held)."""
        self.lock = _thread.allocate_lock()
        parent = self.pid
        self._new_process(parent)

    def error(self, where, exc):
        if len(self.facts["errors"]) < 20:
            self.facts["errors"].append(("%s: %s: %s" % (where, type(exc).__name__, exc))[:300])

    def write(self, stage):
        with self.lock:
            self.facts["stage"] = stage
            self.facts["updated_at"] = time.time()
            data = dumps(self.facts).encode("utf-8", "surrogatepass")
            tmp = self.path + ".tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
