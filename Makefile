# Two commands for a newcomer: `make run` (the agent) and `make test` (the suite).
VENV ?= .venv
PY := $(VENV)/bin/python
# The third-party A2A clients of the interop tests (tests/interop): their "a2a" package
# clashes with ours, so they get a virtualenv of their own.
INTEROP_VENV ?= .venv-interop
# a2a-sdk 0.3, the v0.3 generation's own client (its "a2a" clashes with a2a-sdk 1.x too).
INTEROP03_VENV ?= .venv-interop03
# The official MCP Python SDK (mcp 2.x): .venv-interop's a2a-sdk pins mcp 1.x.
MCP_VENV ?= .venv-mcp
HOST ?= 127.0.0.1
PORT ?= 8000
WORKERS ?= 1
PYTEST_ARGS ?=
# pytest-xdist processes for `make test` (auto: one per core); many tests wait on servers
# they started, so two processes finish sooner on two cores. TEST_WORKERS=0: one process.
TEST_WORKERS ?= auto
NOX_ARGS ?=

.PHONY: run test test-quick interop matrix docs lint shape bench bench-all bench-quick cluster clean

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.run-deps: requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.dev-deps: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@ $(VENV)/.run-deps

$(INTEROP_VENV)/.requirements.sha256: tests/interop/requirements.txt tests/interop/setup-venv.sh
	bash tests/interop/setup-venv.sh $(abspath $(INTEROP_VENV))

$(INTEROP03_VENV)/.requirements.sha256: tests/interop/requirements-v03.txt tests/interop/setup-venv.sh
	bash tests/interop/setup-venv.sh $(abspath $(INTEROP03_VENV)) tests/interop/requirements-v03.txt

$(MCP_VENV)/.requirements.sha256: tests/interop/requirements-mcp.txt tests/interop/setup-venv.sh
	bash tests/interop/setup-venv.sh $(abspath $(MCP_VENV)) tests/interop/requirements-mcp.txt

# The official A2A JavaScript and MCP TypeScript SDKs of the interop tests (tests/interop/js): npm ci, from its lock file.
INTEROP_JS := tests/interop/js/node_modules/.package-lock.sha256
$(INTEROP_JS): tests/interop/js/package-lock.json tests/interop/setup-node.sh
	bash tests/interop/setup-node.sh

# The file store's C companion (companions/django-a2a-agent-fsio: a2a_fsio._syscalls,
# stores/file/syscalls.py), built and installed into the venv for the example site and the
# tests. Without a C compiler the store makes the same calls from Python: the build says so.
FSIO := companions/django-a2a-agent-fsio
FSIO_BUILT := $(VENV)/.fsio-built
$(FSIO_BUILT): $(FSIO)/a2a_fsio/_syscalls.c $(FSIO)/a2a_fsio/__init__.py $(FSIO)/pyproject.toml | $(VENV)/.run-deps
	@$(PY) -m pip install -q "setuptools>=77" && \
		$(PY) -m pip install -q --no-build-isolation ./$(FSIO) >$(VENV)/fsio-build.log 2>&1 && \
		rm -rf $(FSIO)/build && touch $@ || \
		echo "django-a2a-agent-fsio not built ($(VENV)/fsio-build.log): the file store makes its calls from Python"

## Install, migrate SQLite and serve the agent under uvicorn (TASK_STORE=file:./tasks), with
## a2a.http.protocol's limits on slow clients (A2A_HEADER_TIMEOUT, A2A_BODY_TIMEOUT,
## A2A_MAX_CONNECTIONS) and the open-file limit raised to the hard one.
run: $(VENV)/.run-deps $(FSIO_BUILT)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v0
	$(PY) -m uvicorn toolnexus_site.asgi:application --host $(HOST) --port $(PORT) --workers $(WORKERS) \
		--loop uvloop --http a2a.http.protocol:HttpToolsProtocol

## The distributed deployment on loopback (docs/deployment.md): PostgreSQL + Redis (started
## if down), 2 uvicorn web processes (ports 8100, 8101) and 2 queue workers (db_worker);
## Ctrl-C stops it. CLUSTER_ARGS passes options on (--web 3 --workers 4 --fresh ...).
CLUSTER_ARGS ?=
cluster: $(VENV)/.dev-deps
	$(PY) -m deploy.cluster $(CLUSTER_ARGS)

## Install and run lint (ruff, mypy) and the whole suite (the interop tests included,
## with their venv). The ORM store's tests also run on PostgreSQL when
## A2A_TEST_POSTGRES_URL is set (.ci/run sets it).
test: $(VENV)/.dev-deps $(FSIO_BUILT) $(INTEROP_VENV)/.requirements.sha256 $(INTEROP03_VENV)/.requirements.sha256 $(MCP_VENV)/.requirements.sha256 $(INTEROP_JS)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

## The fast loop while working: lint and the suite without the slow (server-starting),
## interop and thirdparty tests, and without building the interop venvs.
test-quick: $(VENV)/.dev-deps $(FSIO_BUILT)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -m "not slow and not interop and not thirdparty" $(PYTEST_ARGS)

## Only the interop tests: our server driven by the official A2A and MCP SDKs (Python, JavaScript) and toolnexus.
interop: $(VENV)/.dev-deps $(INTEROP_VENV)/.requirements.sha256 $(INTEROP03_VENV)/.requirements.sha256 $(MCP_VENV)/.requirements.sha256 $(INTEROP_JS)
	$(PY) -m pytest -m interop $(PYTEST_ARGS)

## The code's shape, counted (tests/shape.py; tests/test_shape.py holds each at zero): modules over
## 600 lines, modules cut at a line (named *_sections, *_part2, *_more, ...), functions over 60,
## copied blocks of 10+ lines in a2a/, stores/, tests/; then the
## layer contracts (pyproject.toml [tool.importlinter]), the file store's own layers among them.
shape: $(VENV)/.dev-deps
	$(PY) -m tests.shape
	$(VENV)/bin/lint-imports

## The support matrix (noxfile.py): our wheel in a new `django-admin startproject`
## project, set up as the README says, on every supported Python and Django (CI runs
## it after `make test`). The whole suite on each: `$(VENV)/bin/nox -s tests`.
matrix: $(VENV)/.dev-deps
	$(VENV)/bin/nox $(NOX_ARGS)

## The documentation site (mkdocs.yml, docs/): the README's Quickstart copied into
## docs/getting-started.md, then built with warnings as errors (broken internal links and
## anchors included; external links are not fetched) into site/. CI runs it after `make test`.
docs: $(VENV)/.dev-deps
	$(PY) docs/copies.py --write
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

## The benchmark table against the official SDK, toolnexus and a null server (see
## bench/README.md; ~30 min on 2 cores): our default and direct paths, the anchors, C=8 to
## 512, the kill -9 rounds; results in bench/results/table.{json,md}. With
## A2A_BENCH_BEFORE=<a checkout> the same from that commit beside them. Builds the
## competitors' venvs first (bench/setup-venvs.sh). BENCH_ARGS passes options on.
BENCH_ARGS ?=
bench: $(VENV)/.dev-deps $(FSIO_BUILT)
	bash bench/setup-venvs.sh
	$(PY) -m bench.run --table $(BENCH_ARGS)

## The whole suite (~2 h): the e2e loop on every store and dialect, store micro-benchmarks,
## streaming, kill -9, scale to 10^6 tasks: bench/results/suite.{json,md}.
bench-all: $(VENV)/.dev-deps $(FSIO_BUILT)
	bash bench/setup-venvs.sh
	$(PY) -m bench.run $(BENCH_ARGS)

## The suite's smoke run (ours + null server, short windows; what CI runs): bench/results/quick.*
bench-quick: $(VENV)/.dev-deps
	$(PY) -m bench.run --quick $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(INTEROP_VENV) $(INTEROP03_VENV) $(MCP_VENV) tests/interop/js/node_modules .venv-bench-sdk .venv-bench-toolnexus staticfiles site .pytest_cache .ruff_cache .nox .mypy_cache build dist *.egg-info $(FSIO)/build $(FSIO)/*.egg-info
