# The set-up commands of the README: `make run`, `make test` and `make test-fast`.
# Each creates its own virtual environment; `make test` also installs the Debian packages
# its tests need (as root, or through sudo) and builds test fixtures in ~/.cache/prov-tests.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Debian packages the test suite uses (oracles and real parts nobody here wrote).
APT_PACKAGES ?= dpkg debootstrap skopeo docker.io docker-registry zstd openssl chromium chromium-driver

.PHONY: run test test-fast lint venv apt clean lock verify-lock

# The development environment is installed from the project's own lock, produced by prov
# (`make lock` refreshes it), and verified against it before the tests run.
LOCK := lockfiles/pylock.dev.toml

$(BIN)/.installed: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python tests/setup/lock_pins.py $(LOCK) > $(VENV)/pins.txt
	$(BIN)/python -m pip install -q --no-deps -r $(VENV)/pins.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	$(BIN)/python -m pip check
	touch $@

verify-lock: venv
	$(BIN)/prov verify --lock $(LOCK)

# Refresh the lock from a fresh environment resolved from pyproject.toml. torch's +cpu wheel
# comes from pip's configured wheel directory, which no index serves; `prov lock` takes a
# local file only from a directory it is told about (and only if its files are the ones
# installed), so the directory is named here.
LOCK_FIND_LINKS ?= $(PIP_FIND_LINKS)
lock:
	rm -rf .venv-lock
	$(PYTHON) -m venv .venv-lock
	.venv-lock/bin/python -m pip install -q -e '.[test]'
	.venv-lock/bin/prov lock --out $(LOCK) $(foreach d,$(LOCK_FIND_LINKS),--find-links $(d))
	rm -rf .venv-lock

venv: $(BIN)/.installed

run: venv
	$(BIN)/prov snapshot

apt:
	APT_PACKAGES="$(APT_PACKAGES)" bash tests/setup/apt-install.sh

lint: venv
	$(BIN)/ruff check .

# The suite runs in TEST_WORKERS processes (pytest-xdist), each test file whole in one of
# them (--dist loadfile: a file's module fixtures, such as one vLLM engine, are built once).
# Most of a test's wall time is spent starting Python programs and engines, in which one
# process keeps one core busy; TEST_WORKERS=0 runs it all in pytest's own process.
# --no-loadscope-reorder keeps tests/conftest.py's order: the longest files first.
TEST_WORKERS ?= 2
test: venv apt lint verify-lock
	$(BIN)/python -m pytest -q -ra -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder \
		$(PYTEST_ARGS)

# The fast lane (under 2 minutes on a 2-core machine): the unit tests of the model, gate,
# store, lockfiles, analysis and parsers, and the docs and import-rule checks; no engine,
# docker, debootstrap, Ray or chromium, no venv built. Tests over a few seconds in these
# paths are marked `slow` and left to `make test`, which runs everything (CI runs that);
# the lane prints its five slowest tests, so a new slow one shows.
FAST_TESTS := tests/test_import_rules.py tests/test_docs_links.py tests/test_docs_cli.py \
	tests/test_docs_presets.py tests/test_docs_disclosure.py tests/test_docs_paths.py \
	tests/test_docs_environment.py tests/test_docs_formats.py \
	tests/provenance/model tests/hostile/model tests/provenance/store tests/provenance/gate \
	tests/lockfiles tests/runners/test_analysis.py tests/runners/test_repeat_verdict.py \
	tests/runners/test_disclosure.py tests/runners/workstream/test_reader.py \
	tests/runners/workstream/test_checks.py tests/runners/sweep/test_spec.py \
	tests/containers/catalogers tests/containers/test_walk.py tests/containers/test_reference.py \
	tests/hostile/containers/test_tar_properties.py tests/provenance/report/test_series.py \
	tests/provenance/report/test_golden.py tests/provenance/selftest/test_verdicts.py

test-fast: venv
	$(BIN)/python -m pytest -q -ra --durations=5 -m "not slow" $(FAST_TESTS) $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
