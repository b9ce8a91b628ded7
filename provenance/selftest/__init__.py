"""`prov selftest`: does prov's identity see every cause of a changed result, and nothing else?

Public surface: the modules `matrix` (the rows), `report` (the verdict table) and `user_rows`
(the user-program rows, `--programs`); `Runner` and `run_matrix(...)` (the runs and their
verdicts); `ensure_alt_env(...)` (the second environment the `env` rows use).
"""

from provenance.selftest import matrix, report, user_rows
from provenance.selftest.altenv import ensure_alt_env
from provenance.selftest.identity import Runner, run_matrix

__all__ = ["Runner", "ensure_alt_env", "matrix", "report", "run_matrix", "user_rows"]
