# Two user-facing targets: `make demo` and `make test`. Each installs what it
# needs first (idempotent), so both work on a fresh Debian 12 machine as root.
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed

.PHONY: demo test test-fast setup deps bench clean doctor

# Debian packages: mininet brings mnexec and /usr/lib/python3/dist-packages/mininet.
APT_PKGS := mininet iproute2 iperf3 ethtool tcpdump python3-venv iputils-ping gcc libc6-dev

deps:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing Debian packages:$$missing"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; fi

# The venv uses Debian's python3 but not Debian's site-packages: a Debian matplotlib or
# numpy there would mix with pip's ("Unable to import Axes3D ... multiple versions of
# Matplotlib"). Only Debian's mininet module (installed for /usr/bin/python3) is exposed,
# by a .pth file naming a folder that holds nothing but mininet and its metadata.
# Re-running this rule on an older venv (made with --system-site-packages) converts it.
DEB_MININET := $(VENV)/debian-mininet

$(STAMP): pyproject.toml Makefile
	@$(MAKE) --no-print-directory deps
	/usr/bin/python3 -m venv $(VENV)
	@mn=$$(/usr/bin/python3 -c 'import mininet, os; print(os.path.dirname(mininet.__file__))') || \
	  { echo "error: /usr/bin/python3 cannot import mininet: apt-get install mininet"; exit 1; }; \
	rm -rf $(DEB_MININET) && mkdir -p $(DEB_MININET) && ln -s "$$mn" $(DEB_MININET)/mininet && \
	for meta in "$$(dirname "$$mn")"/mininet-*-info; do \
	  if [ -e "$$meta" ]; then ln -s "$$meta" $(DEB_MININET)/; fi; done && \
	site=$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
	realpath $(DEB_MININET) > "$$site/debian-mininet.pth" && \
	echo "Debian's mininet ($$mn) exposed to $(VENV) by $$site/debian-mininet.pth"
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -c 'import mininet.net, mininet.node, mininet.link, mininet.cli'
	touch $(STAMP)

setup: $(STAMP)

# What this machine supports and what a run will use (root for the qdisc probes).
doctor: setup
	$(PY) run.py doctor

# The tests without Mininet or BMv2 run on two processes (pytest-xdist: they share no
# namespace, port or file), the Mininet and BMv2 ones after them on one (they share the
# machine's network, ports and cores, and some timings are measurements). Both parts run
# even when the first fails; the exit status is the first failure's.
test: setup
	@rc=0; $(PY) -m pytest -q -ra -n 2 --dist loadgroup -m "not mininet and not bmv2" --durations=10 || rc=$$?; \
	$(PY) -m pytest -q -ra -m "mininet or bmv2" --durations=25 || { r=$$?; [ $$rc -ne 0 ] || rc=$$r; }; \
	exit $$rc

test-fast: setup
	$(PY) -m pytest -q -ra -n 2 --dist loadgroup -m "not mininet and not bmv2"

# The doctor, then ps against geo-ina on three datacenters with stragglers (~3 min here):
# the headline table and the path of the speedup figure (scenarios/demo.yaml).
demo: setup
	$(PY) run.py demo

bench: setup
	$(PY) run.py bench switch

clean:
	$(PY) run.py clean
