# The two commands of the README: `make demo` (main job on the embedded sample) and `make test`.
.PHONY: demo test setup bench install clean

install:
	bash scripts/bootstrap.sh

demo: install
	.venv/bin/madqa setup
	.venv/bin/madqa info
	.venv/bin/madqa space

test:
	MADQA_WITH_BROWSER=1 bash scripts/bootstrap.sh
	.venv/bin/python -m pytest -q -n 2 --dist loadfile

bench: install
	.venv/bin/madqa setup
	.venv/bin/madqa bench extract

clean:
	rm -rf .venv build *.egg-info .pytest_cache
