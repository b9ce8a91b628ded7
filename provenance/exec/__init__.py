"""`prov exec`: run a command as a recorded run.

The public surface (everything else in this package is internal):

- `run_supervised(argv, *, name, outputs, tags, params, env_extra, store, stream, cwd,
  sample_libraries) -> RunResult`: snapshot, record a started run, run the command in its
  own process group (signals forwarded, exit status passed through), stream its logs into
  the store, sample its loaded libraries, hash declared outputs, check for drift, and write
  the final record. `RunResult` holds the run id, exit status, record digest and record.
- `environment_digest(python=None) -> str`: the identity digest of the environment a
  command would run in, as `prov exec` snapshots it (sweeps reuse a cell only there).
- `run_probed(argv, env) -> Probed`: run a command under the in-process probe without a
  record; its exit status, stderr and the `runtime` section a record would hold.
- `recover(store, info)`: finish the record of a run found abandoned (the CLI hands it to
  the store: `provenance.store.on_abandoned`);
- `engine_rows(facts)`, `server_rows(facts)`: a record's facts as the (label, text) rows
  `prov show` prints and `prov report RUN` shows: the engine block (what torch,
  transformers and vLLM resolved), model and input files, the server a client talked to.
- `descendants(pid) -> list[int]`: a process and its live descendants (through /proc), for
  a caller that must stop what a command left running (a sweep's ^C).
- `FACTS_FILE`: the file under `$PROV_RUN_DIR` whose top-level sections join the run's
  manifest (workloads write it with `runners.runfacts.add_run_facts`, stdlib only).

The modules, one job each: environment (interpreter, snapshot, git, the command's env),
record (the started/failed records, resources), process (process group, terminal,
signals), tee (stdout/stderr into the store), watch (the loop: pump, sample, reap),
libraries (/proc/<pid>/maps sampling and file hashing), outputs (declared outputs and the
run dir), facts (facts.json), drift, supervise (the orchestration), probed (a probed
run without a record). The run's manifest is built by
`provenance.store.manifests.run_manifest`, the one rule every reader shares.
"""

from provenance.exec.environment import environment_digest
from provenance.exec.facts import FACTS_FILE
from provenance.exec.libraries import descendants
from provenance.exec.probe.show import engine_rows
from provenance.exec.probed import Probed, run_probed
from provenance.exec.recover import recover
from provenance.exec.serving.show import server_rows
from provenance.exec.supervise import RunResult, run_supervised

__all__ = ["FACTS_FILE", "Probed", "RunResult", "descendants", "engine_rows",
           "environment_digest", "recover", "run_probed", "run_supervised", "server_rows"]
