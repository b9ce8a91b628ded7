"""Post-import hooks: call back once a watched top-level module has finished loading.

A finder first on `sys.meta_path` asks the finders after it for the watched names only;
the loader it gets back keeps its type, and only for that one module its `exec_module` is
shadowed by an instance attribute that runs the original, removes itself, and then calls
back. Every other import goes through untouched; nothing is imported on the program's
behalf.
"""

import sys


class PostImportFinder:
    def __init__(self, watched, on_loaded, on_error):
        self.watched = frozenset(watched)
        self.on_loaded = on_loaded
        self.on_error = on_error
        self.busy = set()

    def find_spec(self, name, path=None, target=None):
        if name not in self.watched or name in self.busy:
            return None
        self.busy.add(name)
        try:
            spec = self._find(name, path, target)
            if spec is not None:
                self._wrap(name, spec)
            return spec
        except Exception as exc:
            self.on_error("import hook " + name, exc)
            return None  # the regular finders try again, as if we were not here
        finally:
            self.busy.discard(name)

    def _find(self, name, path, target):
        for finder in list(sys.meta_path):
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                return None  # a legacy finder: leave the whole import to the machinery
            spec = find(name, path, target)
            if spec is not None:
                return spec
        return None

    def _wrap(self, name, spec):
        loader = spec.loader
        original = getattr(loader, "exec_module", None)
        if original is None:
            return
        finder = self

        def exec_module(module):
            if getattr(module, "__name__", None) != name:
                return original(module)  # a loader shared by several modules (zipimport)
            try:
                original(module)
            finally:
                try:
                    del loader.exec_module
                except Exception:
                    pass
            try:
                finder.on_loaded(name, module)
            except Exception as exc:
                finder.on_error("after import " + name, exc)

        loader.exec_module = exec_module

    def invalidate_caches(self):
        pass
