# Two user-facing targets: `make demo` and `make test`. Each installs what it
# needs first (idempotent), so both work on a fresh Debian 12 machine as root.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

.PHONY: demo test test-fast setup deps bench clean

# Debian packages: mininet brings mnexec and /usr/lib/python3/dist-packages/mininet.
APT_PKGS := mininet iproute2 iperf3 ethtool tcpdump python3-venv iputils-ping

deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing Debian packages:$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; fi

# The venv uses Debian's python3 with --system-site-packages so that Debian's
# mininet module (installed for /usr/bin/python3) is importable.
$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory deps
	/usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

test: setup
	$(PY) -m pytest -q -ra

test-fast: setup
	$(PY) -m pytest -q -ra -m "not mininet"

demo: setup
	$(PY) run.py run scenarios/quickstart.yaml

bench: setup
	$(PY) run.py bench switch

clean:
	$(PY) run.py clean
