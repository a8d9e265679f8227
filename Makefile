# Queue Depth: set-up, book build and tests.
#
#   make book   set up (.venv, npm assets) and build the HTML book into _build/html/
#   make test   set up if needed and run every test: the static checks (make lint: ruff, import
#               contracts, mypy, doctests), the unit tests and every chapter under nbval, the
#               strict book build (a warning or failing cell fails it; it shows the outputs the nbval
#               run kept, and is reused when `make book` has just built it from the same sources),
#               the browser tests and the wheel check
#
# The book is built once: `make book` records a digest of everything it is built from
# (tools/book_state.py) and skips the build while it matches; `make book-build` always builds.
# Inside a build, tools/sphinx_qd.py empties the notebook cache (_build/.jupyter_cache) when data/,
# models/ or figures/ changed, so a cached build never shows stale numbers.
#
# Everything comes from the package registries (PyPI, npm); nothing is downloaded at build time.
# The live figures' runtime (Pyodide, from npm) and the book's own Python (zipped by
# tools/build_live_bundle.py) are served by the book itself.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
NBDIR := .nbtest
WIDGETS := static/widgets
HTML_MANAGER := node_modules/@jupyter-widgets/html-manager/dist
NPM_STAMP := node_modules/.qd-installed
# Pyodide's core (CPython in WebAssembly and its standard library, about 14 MB) for the live figures.
# Served from _static/pyodide/: JB1 injects .js files only from a top-level _static/ folder, and the
# book has none (its static folder is static/), so none of these is loaded until a figure goes live.
PYODIDE := static/pyodide
PYODIDE_FILES := pyodide.mjs pyodide.mjs.map pyodide.asm.mjs pyodide.asm.wasm python_stdlib.zip pyodide-lock.json
LIVE_BUNDLE := static/live/queue-depth-python.zip
# Text and code fonts (npm @fontsource-variable packages), served from _static/fonts/ (static/qd/book.css).
FONTS := static/fonts
FONT_PACKAGES := source-sans-3 jetbrains-mono
FONT_SUBSETS := latin latin-ext greek
JOBS ?= 2
# The book's notebook cache (myst-nb's jupyter-cache, emptied by tools/sphinx_qd.py when the cells'
# inputs change); the nbval runs store each chapter that passed whole in it, with its outputs
# (tools/nbval_book_cache.py), so the book build does not run it a second time.
BOOK_CACHE := _build/.jupyter_cache
KEEP_OUTPUTS := -p tools.nbval_book_cache --book-cache $(BOOK_CACHE)
# The simulated summaries of kernel rows (models.kernel.simcache), kept on disk so that the test run
# and the book build simulate each row once between them; keyed by the source of models/ and by each
# scenario, so an edited model never reads an old entry.  `make clean` drops it.
export QUEUE_DEPTH_SIM_CACHE ?= $(CURDIR)/_build/sim_cache
BOOK_STATE := $(BIN)/python tools/book_state.py

.PHONY: setup assets measure-build live-bundle book book-build notebooks lint test unit nbtest \
	browser wheel-check clean lock

setup: $(VENV)/.installed assets measure-build

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=23"
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (Queue Depth)" > /dev/null
	touch $@

# The kernel harness's C client/server, compiled with gcc into _build/measure/ (rebuilt when its source changes).
measure-build: $(VENV)/.installed
	$(BIN)/python -c "from models.measure.build import qdperf_binary; qdperf_binary()"

# Widget JavaScript and Pyodide served by the book itself (no CDN), all from npm.
assets: $(WIDGETS)/.copied $(PYODIDE)/.copied $(FONTS)/.copied static/plotly/plotly.min.js

# Plotly.js for the kernel-free live figures, from the pinned plotly Python package.
static/plotly/plotly.min.js: $(VENV)/.installed
	mkdir -p static/plotly
	cp $$($(BIN)/python -c "import plotly, os; print(os.path.join(os.path.dirname(plotly.__file__), 'package_data', 'plotly.min.js'))") $@

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(WIDGETS)/.copied: $(NPM_STAMP)
	mkdir -p $(WIDGETS)
	cp node_modules/requirejs/require.js $(WIDGETS)/require.js
	cp $(HTML_MANAGER)/embed-amd.js $(WIDGETS)/embed-amd.js
	# embed-amd.js asks for its icon fonts at @jupyter-widgets/html-manager/dist/ relative to the page, and
	# every chapter is in book/: html_extra_path copies static/extra/ to the root of _build/html.
	mkdir -p static/extra/book/@jupyter-widgets/html-manager/dist
	cp $(HTML_MANAGER)/*.woff2 $(HTML_MANAGER)/*.woff $(HTML_MANAGER)/*.ttf static/extra/book/@jupyter-widgets/html-manager/dist/
	touch $@

$(PYODIDE)/.copied: $(NPM_STAMP)
	rm -rf $(PYODIDE) && mkdir -p $(PYODIDE)
	cd node_modules/pyodide && cp $(PYODIDE_FILES) $(CURDIR)/$(PYODIDE)/
	touch $@

# The variable fonts' Latin, Latin Extended and Greek files (upright and italic), with their licences.
$(FONTS)/.copied: $(NPM_STAMP)
	rm -rf $(FONTS) && mkdir -p $(FONTS)
	for f in $(FONT_PACKAGES); do \
	  for s in $(FONT_SUBSETS); do \
	    cp node_modules/@fontsource-variable/$$f/files/$$f-$$s-wght-{normal,italic}.woff2 $(FONTS)/; \
	  done; \
	  cp node_modules/@fontsource-variable/$$f/LICENSE $(FONTS)/LICENSE-$$f.txt; \
	done
	touch $@

# The book's own Python for the live figures (models/ and figures/), checked to import without
# NumPy, SymPy or pandas, as in the browser. Rebuilt on every book build: it is small and quick.
live-bundle: $(VENV)/.installed
	$(BIN)/python tools/build_live_bundle.py $(LIVE_BUNDLE)

# The strict build: a failing cell, a warning or a broken cross-reference fails it; html_report.py
# then fails on a page naming a file the book does not have. Skipped while _build/html was built
# (and passed) from exactly the current sources; `make book-build` builds regardless.
book: setup
	@if $(BOOK_STATE) fresh; then echo "Book: $(CURDIR)/_build/html/index.html"; \
	else $(MAKE) --no-print-directory book-build; fi

book-build: setup live-bundle
	$(BOOK_STATE) begin
	$(BIN)/jupyter-book build . --builder html -W -n --keep-going
	$(BIN)/python tools/html_report.py _build/html
	$(BOOK_STATE) done
	@echo "Book: $(CURDIR)/_build/html/index.html"

# Chapters are MyST text notebooks; nbval needs .ipynb, so jupytext writes them (no outputs) to $(NBDIR).
notebooks: setup
	rm -rf $(NBDIR) && mkdir -p $(NBDIR)
	for f in $$(grep -l "format_name: myst" book/*.md); do \
	  $(BIN)/jupytext --quiet --to ipynb -o $(NBDIR)/$$(basename $${f%.md}).ipynb $$f; done

unit: setup
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile tests

nbtest: notebooks
	$(BIN)/python tools/warm_sim_cache.py
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile $(KEEP_OUTPUTS) --nbval-lax --nbval-current-env $(NBDIR)

# Static checks: ruff (lint and format), the import contracts (layer order), mypy over models/ and
# the doctests of models/ and figures/.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -p no:cacheprovider --doctest-modules models figures

# Every chapter runs once: under nbval, and the strict book build that follows shows the outputs
# that run produced (KEEP_OUTPUTS) while data/, models/ and figures/ are unchanged; it still renders
# every page strictly, and runs itself any chapter nbval did not pass whole.
test: setup notebooks
	$(MAKE) --no-print-directory lint
	$(BIN)/python tools/warm_sim_cache.py
	$(BIN)/python -m pytest -rs -n $(JOBS) --dist loadfile --durations=10 $(KEEP_OUTPUTS) --nbval-lax --nbval-current-env tests $(NBDIR)
	$(MAKE) --no-print-directory book
	$(MAKE) --no-print-directory browser
	$(MAKE) --no-print-directory wheel-check

# Every page in headless Chromium (skipped, with the reason printed, when no Chromium is installed).
# Two workers, one test file each at a time (test_live.py's timings are gathered in one process);
# a page mostly waits (network idle, fonts, MathJax, Pyodide starting), so two run in about 2/3 the time.
browser:
	$(BIN)/python -m pytest -rs -p no:cacheprovider -n $(JOBS) --dist loadfile --durations=5 browser_tests

# The wheel (datasets inside), installed into an empty venv and run from outside the checkout.
wheel-check: $(VENV)/.installed
	$(BIN)/python tools/wheel_check.py

lock:
	$(BIN)/python -m pip freeze --exclude-editable | grep -v "^queue-depth-models" > requirements.lock.tmp
	@echo "review requirements.lock.tmp and merge it into requirements.txt"

clean:
	rm -rf _build $(NBDIR) .pytest_cache .jupyter_cache static/widgets static/plotly static/extra \
	  $(PYODIDE) $(FONTS) static/live $(NPM_STAMP)
