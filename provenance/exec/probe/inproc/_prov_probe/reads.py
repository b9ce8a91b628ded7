"""What this process read: the files it opened and the environment variables it asked for.

Files: an audit hook (`sys.addaudithook`, Python 3.8+) sees every `open` event (builtin
`open`, `io.open`, `os.open`; numpy.load, torch.load and plain reads go through them) and
adds the absolute path to a set, for reading or for writing as the flags say. The hook does
no I/O (no stat): prov filters and hashes on the host. Imported code (.py/.pyc/.so) is left
out here already; `code.*` covers it. safetensors opens its files in Rust, out of the
hook's sight: its `safe_open` is wrapped when the package has loaded (transformers, vLLM
and `safetensors.torch.load_file` all call it). HF tokenizers' Rust `from_file` stays
invisible: prov lists the model directories a load named instead.

Environment: `os.environ` (and `os.environb`) get a subclass of `os._Environ` whose
`__getitem__` notes the name (os.getenv, `.get`, `in` and `[...]` all go through it). A
bulk copy is no read: `dict(os.environ)`, `.copy()`, `.items()`, `.values()` and iteration
read each name right after `__iter__` yielded it, and such a read is not noted. Nor is a
read of a name the process set or deleted itself first (`os.environ[...] = `, `update`,
`del`, `pop`): the value is the program's own, not its environment's (vLLM and torch set
variables at import and read them later). The values are those of the environment at
start (`environ`), recorded whole: a child started or re-executed with other values is
seen. Reads by C code (libc `getenv`) are not seen.
Python 3.8+, standard library only.
"""

import _thread
import os
import sys

_CODE = (".py", ".pyc", ".pyo", ".so", ".pyd")
_WRITE_FLAGS = os.O_CREAT | os.O_TRUNC | os.O_APPEND
_ACCMODE = getattr(os, "O_ACCMODE", 3)


class Reads:
    def __init__(self):
        self.read = set()
        self.written = set()
        self.env_names = set()
        self.env_own = set()  # names this process set or deleted itself
        self.cwd = None
        self.on_exec = None
        self.local = _thread._local()  # .quiet: the probe's own work in this thread
        self.environ = environ_now()

    def after_fork(self):
        """A forked child is a new process: its reads start empty, its environment is the
        parent's as it was at the fork."""
        self.read, self.written, self.env_names, self.env_own = set(), set(), set(), set()
        self.environ = environ_now()

    def facts(self):
        return {"read": sorted(self.read), "written": sorted(self.written)}

    # -- files ---------------------------------------------------------------------------
    def audit(self, event, args):
        """The audit hook: cheap, and it never raises (an exception would fail the open)."""
        if event == "open":
            if getattr(self.local, "quiet", 0):
                return
            try:
                self._open(args)
            except Exception:
                pass
        elif event == "os.chdir":
            self.cwd = None
        elif event == "os.exec" and self.on_exec is not None:
            try:  # os.execv* replaces the process: no atexit, so what it read is saved now
                self.on_exec()
            except Exception:
                pass

    def _open(self, args):
        path, flags = args[0], args[2]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        elif not isinstance(path, str):
            return  # a file descriptor, or an object we must not call into here
        if path.endswith(_CODE):
            return
        if not path.startswith("/"):
            if self.cwd is None:
                self.cwd = os.getcwd()
            path = self.cwd + "/" + path
        acc = flags & _ACCMODE if isinstance(flags, int) else os.O_RDONLY
        if acc != os.O_WRONLY:
            self.read.add(path)
        if acc != os.O_RDONLY or (isinstance(flags, int) and flags & _WRITE_FLAGS):
            self.written.add(path)

    def note_path(self, path):
        """A file opened where the hook cannot see (safetensors' Rust)."""
        try:
            path = os.fsdecode(os.fspath(path))
            self.read.add(os.path.abspath(path))
        except Exception:
            pass

    # -- the environment -----------------------------------------------------------------
    def env_facts(self):
        return {"read": sorted(self.env_names)}


def environ_now():
    """The environment as it is now, copied in bulk (not a read of any name)."""
    try:
        return dict(os.environ)
    except Exception:
        return {}


def install(probe):
    """The audit hook, the os.environ watch; the safetensors wrap comes at its import."""
    reads = Reads()
    reads.on_exec = lambda: probe.save("exec")
    probe.reads = reads
    sys.addaudithook(reads.audit)
    probe.guarded("environ watch", watch_environ, reads)
    return reads


def watch_environ(reads):
    local = _thread._local()

    class _Environ(os._Environ):
        def __iter__(self):
            pending = local.pending = []  # each iteration anew: the list stays bounded
            for key in os._Environ.__iter__(self):
                pending.append(key)
                yield key

        def __getitem__(self, key):
            try:
                pending = getattr(local, "pending", None)
                if pending and pending[0] == key:
                    del pending[0]  # a bulk copy reading what __iter__ just gave it
                else:
                    if pending:
                        del pending[:]
                    name = _name(key)
                    if not getattr(reads.local, "quiet", 0) and name not in reads.env_own:
                        reads.env_names.add(name)
            except Exception:
                pass
            return os._Environ.__getitem__(self, key)

        def __setitem__(self, key, value):
            os._Environ.__setitem__(self, key, value)
            _own(key)

        def __delitem__(self, key):
            os._Environ.__delitem__(self, key)
            _own(key)

    def _own(key):
        try:
            if not getattr(reads.local, "quiet", 0):
                reads.env_own.add(_name(key))
        except Exception:
            pass

    _Environ.__module__ = "os"
    _Environ.__qualname__ = "_Environ"
    for mapping in (os.environ, getattr(os, "environb", None)):
        if mapping is not None and type(mapping) is os._Environ:
            mapping.__class__ = _Environ


def _name(key):
    return os.fsdecode(key) if isinstance(key, bytes) else str(key)


def wrap_safe_open(probe, module):
    """`safetensors.safe_open` -> the same callable, noting the file first."""
    import functools  # loaded already by the library it wraps
    original = getattr(module, "safe_open", None)
    if original is None or getattr(original, "prov_probe", False):
        return
    reads = probe.reads

    def safe_open(*args, **kwargs):
        if args or "filename" in kwargs:
            reads.note_path(args[0] if args else kwargs["filename"])
        return original(*args, **kwargs)

    # safe_open is a class: its namespace must not land on a function (updated=())
    functools.update_wrapper(safe_open, original, updated=())
    safe_open.prov_probe = True
    module.safe_open = safe_open
