# The two set-up commands of the README: `make run` and `make test`.
# Both create their own virtual environment; `make test` also installs the Debian packages
# its tests need (as root, or through sudo) and builds test fixtures in ~/.cache/prov-tests.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Debian packages the test suite uses (oracles and real parts nobody here wrote).
APT_PACKAGES ?= dpkg debootstrap skopeo docker.io docker-registry zstd openssl chromium chromium-driver

.PHONY: run test lint venv apt clean lock verify-lock

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

test: venv apt lint verify-lock
	$(BIN)/python -m pytest -q -ra $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
