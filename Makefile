.PHONY: help install test lint typecheck golden fuzz bench example

help:  ## List the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

install:  ## Install sessionlens with the test tools
	python3 -m pip install -e '.[test]'

test:  ## Run the test suite (the README's test command)
	python3 -m pytest

lint:  ## ruff
	python3 -m ruff check sessionlens tests benchmarks

typecheck:  ## mypy --strict on the package
	python3 -m mypy

golden:  ## Rewrite golden reports and format fixtures (read the diff first)
	python3 -m pytest tests/test_report_golden.py tests/test_fixtures.py --update-golden

fuzz:  ## Bounded atheris fuzz run of every parser (needs the fuzz extra)
	python3 benchmarks/fuzz.py --seconds 60

bench:  ## The performance benchmark (see benchmarks/README.md)
	python3 benchmarks/run.py

example:  ## The example report
	sessionlens report fixtures/sessions/eagle3-attention-mode --out report.md
