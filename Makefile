# Two commands for a newcomer: `make run` (the agent) and `make test` (the suite).
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
WORKERS ?= 1
PYTEST_ARGS ?=

.PHONY: run test lint bench clean

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.run-deps: requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.dev-deps: requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@ $(VENV)/.run-deps

## Install, migrate SQLite and serve the agent under uvicorn (TASK_STORE=file:./tasks).
run: $(VENV)/.run-deps
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v0
	$(PY) -m uvicorn toolnexus_site.asgi:application --host $(HOST) --port $(PORT) --workers $(WORKERS) \
		--loop uvloop --http httptools

## Install and run lint and the whole suite. The ORM store's tests also run on
## PostgreSQL when A2A_TEST_POSTGRES_URL is set (.ci/run sets it).
test: $(VENV)/.dev-deps
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest $(PYTEST_ARGS)

## The end-to-end loop benchmark (see bench/README.md).
bench: $(VENV)/.dev-deps
	$(PY) bench/e2e_loop.py

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .ruff_cache
