# The two set-up commands of the README: `make run` and `make test`.
# Both create their own virtual environment; `make test` also installs the Debian packages
# its tests need (as root, or through sudo) and builds test fixtures in ~/.cache/prov-tests.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Debian packages the test suite uses (oracles and real parts nobody here wrote).
APT_PACKAGES ?= dpkg debootstrap skopeo docker.io docker-registry zstd openssl chromium chromium-driver

.PHONY: run test lint venv apt clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

venv: $(BIN)/.installed

run: venv
	$(BIN)/prov snapshot

apt:
	APT_PACKAGES="$(APT_PACKAGES)" bash tests/setup/apt-install.sh

lint: venv
	$(BIN)/ruff check .

test: venv apt lint
	$(BIN)/python -m pytest -q -ra $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
