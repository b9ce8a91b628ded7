"""The probe inside one Python process of a `prov exec` run.

What is caught, and when the file is written:
- at start (`start`, from sitecustomize): pid, ppid, argv, interpreter, the script's stat,
  the environment as it is (`environ`); from then on the files the process opens and the
  environment variables it asks for (`reads`: an audit hook, `os.environ` watched);
- when the program imports torch, transformers or vllm: what they hold right then (torch's
  flags by the reader the snapshot shares, `torch_state`; and torch's sdpa is wrapped to
  note the kernel it chooses, `torch_sdpa`);
- at fork (`os.register_at_fork`): the child gets its own file, maps included;
- when a Starlette application is imported (FastAPI, vLLM's OpenAI server): every HTTP
  exchange it serves, one line each under `$PROV_RUN_DIR/exchanges/` (asgi.py);
- when a vLLM model runner has its KV cache (the engine is ready to serve): its facts,
  imported modules and mapped libraries (a server's engine core is force-killed on
  shutdown, and would otherwise leave neither);
- at exit through `atexit` and through `os._exit` (wrapped: multiprocessing's forked
  children end that way): torch flags, imported modules, mapped libraries, engine facts.
Not caught: SIGKILL, a fatal signal, or a C-level `_exit()`; the last update stays (each is
written whole), its `stage` says how far the process got and `exit` is absent.
Every hook is wrapped: a failure becomes an entry of `errors`, never an exception in the
program. `PROV_INPROCESS=0` writes one file with state "off" and nothing else.
"""

import os
import sys

from .record import Record

# `prov exec` names the directory of the readers the probe shares with the snapshot
# (provenance/collectors/standalone/); on our package path they load as `_prov_probe.<name>`
READERS_VAR = "PROV_PROBE_READERS"
WATCHED = ("torch", "transformers.modeling_utils", "transformers.tokenization_utils_base",
           "transformers.models.auto.auto_factory", "vllm.v1.worker.gpu_model_runner",
           "vllm.v1.worker.gpu.model_runner", "safetensors", "starlette.applications")
_probe = None
_FAULT = None


def start():
    global _probe, _FAULT
    run_dir = os.environ.get("PROV_RUN_DIR")
    if not run_dir or _probe is not None:
        return
    _FAULT = os.environ.get("PROV_PROBE_FAULT")  # read once: later reads would be noted
    readers = os.environ.get(READERS_VAR)
    if readers and readers not in __path__:
        __path__.append(readers)
    if os.environ.get("PROV_INPROCESS", "1") == "0":
        Record(run_dir, state="off").write("off")
        return
    _probe = Probe(Record(run_dir))
    _probe.install()


def _fault(stage):
    """Fault injection for the probe's own tests: PROV_PROBE_FAULT=<stage> raises there."""
    if stage == _FAULT:
        raise RuntimeError("injected probe fault at " + stage)


class Probe:
    def __init__(self, record):
        self.record = record
        self.exited = False
        self.transformers = None
        self.vllm = None
        self.reads = None
        self.asgi = None  # the HTTP exchange recorder of a Starlette server (asgi.py)

    def guarded(self, where, fn, *args):
        reads = self.reads  # what the probe itself reads is not the program's reading
        if reads is not None:
            reads.local.quiet = getattr(reads.local, "quiet", 0) + 1
        try:
            _fault(where)
            return fn(*args)
        except Exception as exc:
            self.record.error(where, exc)
            return None
        finally:
            if reads is not None:
                reads.local.quiet -= 1

    def install(self):
        import atexit

        from .hooks import PostImportFinder

        self.guarded("start", self._script)
        self.guarded("reads", self._watch_reads)
        sys.meta_path.insert(0, PostImportFinder(WATCHED, self.on_import, self.record.error))
        atexit.register(self.at_exit, "atexit")
        self._wrap_os_exit()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self.after_fork)
        self.save("start")

    def save(self, stage):
        try:
            if stage != "start":  # the title a process gives itself (vLLM's engine core)
                self._title()
            if self.reads is not None:
                self.guarded("reads", self._note_reads)
            self.record.write(stage)
        except Exception:
            pass  # an unwritable run directory: nothing left to record the failure in

    def _script(self):
        argv = getattr(sys, "argv", None) or [""]
        if argv[0] and argv[0] not in ("-c", "-m", "-") and os.path.isfile(argv[0]):
            self.record.facts["script"] = _stat(argv[0])

    def _watch_reads(self):
        from .reads import install

        install(self)

    def _note_reads(self):
        facts = self.record.facts
        facts["files"] = self.reads.facts()
        facts["env"] = self.reads.env_facts()
        facts["environ"] = self.reads.environ

    def on_import(self, name, module):
        self.guarded("import " + name, self._read_at_import, name, module)
        self.save("import " + name)

    def _read_at_import(self, name, module):
        if name == "torch":
            self.record.facts.setdefault("torch", {})["at_import"] = torch_flags()
            self.guarded("sdpa wrap", self._watch_sdpa, module)
        elif name.startswith("transformers."):
            if self.transformers is None:
                from .transformers_facts import Watcher

                self.transformers = Watcher(self)
            self.transformers.on_module(name, module)
        elif name == "safetensors":
            if self.reads is not None:
                from .reads import wrap_safe_open

                wrap_safe_open(self, module)
        elif name == "starlette.applications":
            from .asgi import install as record_exchanges

            record_exchanges(self, module)
        elif name.startswith("vllm."):
            if self.vllm is None:
                from .vllm_facts import Watcher as VllmWatcher

                self.vllm = VllmWatcher(self)
            self.vllm.on_module(name, module)

    def _watch_sdpa(self, torch):
        from .torch_sdpa import SdpaWatcher

        SdpaWatcher(self, torch).install()

    def after_fork(self):
        try:
            self.record.after_fork()
            self.exited = False
            if self.reads is not None:
                self.guarded("fork reads", self.reads.after_fork)
            self.guarded("fork", self._read_maps)
            self.save("fork")
        except Exception:
            pass

    def _wrap_os_exit(self):
        original = os._exit
        probe = self

        def _exit(status):
            try:
                probe.at_exit("os._exit")
            except BaseException:
                pass
            original(status)

        _exit.__doc__ = original.__doc__
        os._exit = _exit

    def at_exit(self, via):
        if self.exited or os.getpid() != self.record.pid:
            return
        self.exited = True
        if self.asgi is not None:  # the exchange lines still on their way
            self.guarded("exit asgi", self.asgi.drain)
        facts = self.record.facts
        facts["exit"] = {"via": via}
        if "torch" in sys.modules:
            self.guarded("exit torch", lambda: facts.setdefault("torch", {}).update(
                at_exit=torch_flags()))
        if self.transformers is not None:
            self.guarded("exit transformers", lambda: facts.update(
                transformers=self.transformers.facts()))
        if self.vllm is not None:
            self.guarded("exit vllm", lambda: facts.update(vllm=self.vllm.facts()))
        self.guarded("exit modules", self._read_modules)
        self.guarded("exit maps", self._read_maps)
        self.guarded("exit script", self._main_file)
        self.save("exit")

    def note_loaded(self):
        """What the process imported and mapped up to now, for a process that may be
        killed before its exit (written at exit again, whole)."""
        self.guarded("modules", self._read_modules)
        self.guarded("maps", self._read_maps)

    def _read_maps(self):
        from .maps import mapped_files

        libs, weights = mapped_files()
        self.record.facts["maps"] = libs
        self.record.facts["mapped_weights"] = weights

    def _read_modules(self):
        files = {}
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and path:
                files[name] = path
        self.record.facts["modules"] = files

    def _title(self):
        """The process title as the kernel shows it (vLLM renames its processes)."""
        parts = []
        for name in ("comm", "cmdline"):
            try:
                with open("/proc/self/" + name, "rb") as fh:
                    parts.append(fh.read(4096).replace(b"\0", b" ").strip().decode(
                        "utf-8", "replace"))
            except OSError:
                pass
        self.record.facts["title"] = " | ".join(parts)

    def _main_file(self):
        main = sys.modules.get("__main__")
        path = getattr(main, "__file__", None)
        if "script" not in self.record.facts and isinstance(path, str) and os.path.isfile(path):
            self.record.facts["script"] = _stat(path)


def torch_flags():
    """torch's flags in this process (`runtime.torch.flags.*`), read by the one reader the
    snapshot uses too; {} while torch is not (fully) imported: asking never imports it."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "backends"):
        return {}
    from . import torch_state  # from READERS_VAR's directory, added to __path__ by start()

    return torch_state.flags(torch)


def _stat(path):
    st = os.stat(path)
    return {"path": os.path.abspath(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "inode": st.st_ino, "device": st.st_dev}
