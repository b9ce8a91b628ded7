"""Serving: a client run bound to the server runs it talked to (docs: issue 27).

- `lines`: the exchange lines the server-side probe wrote (`_prov_probe/asgi.py`), read and
  checked at the edge (they come from another process);
- `identity`: a server run's identity as a client's `server.*` facts, one server or several;
- `remote`: `prov exec --server URL`: the identity a server serves at /prov/v1/identity;
- `bind`: at a client's finish, the `server` section of its facts and its exchanges file.
"""

from provenance.exec.serving.bind import EXCHANGES_FILE, bind_client

__all__ = ["EXCHANGES_FILE", "bind_client"]
