# p2pc — the two commands: `make demo` and `make test`.
# The Python the checkout's virtual environment (.venv, tools/install-deps.sh) is made from; the
# analyzer, the tests and the tools run in that environment.
PYTHON ?= python3
VENV_PY = .venv/bin/python
BUILD ?= build
JOBS ?= $(shell nproc)
# The Wireshark version is read when a recipe needs it, not when make starts: on a bare machine
# `make demo` installs tshark (deps) before install-user asks which version it is.
WS_MM = $(shell tshark --version 2>/dev/null | sed -n 's/^TShark (Wireshark) \([0-9]*\.[0-9]*\).*/\1/p')
USER_PLUGIN_ROOT := $(HOME)/.local/lib/wireshark/plugins
# Wireshark's personal configuration: $XDG_CONFIG_HOME/wireshark (~/.config/wireshark), or the
# older ~/.wireshark when only that one exists (as Wireshark itself chooses).
USER_CONFIG_DIR := $(shell x="$${XDG_CONFIG_HOME:-$(HOME)/.config}/wireshark"; \
  if [ ! -d "$$x" ] && [ -d "$(HOME)/.wireshark" ]; then echo "$(HOME)/.wireshark"; else echo "$$x"; fi)
# The folders every user's Wireshark loads, root's too, as the installed tshark names them
# ("Global Plugins" is already per major.minor; Lua files go in "Global Lua Plugins").
# Read when a recipe needs them; override to install elsewhere (a package's staging dir, a test).
WS_FOLDER = $(shell tshark -G folders 2>/dev/null | sed -n 's/^$(1):[[:space:]]*//p')
GLOBAL_PLUGIN_DIR = $(call WS_FOLDER,Global Plugins)
GLOBAL_LUA_DIR = $(call WS_FOLDER,Global Lua Plugins)
# Wireshark's global profiles (offered to every user, tshark -C NAME finds them too).
GLOBAL_PROFILE_DIR = $(call WS_FOLDER,Global configuration)/profiles
DEMO_CAPTURE ?= captures/bitcoin/btc-compressed.pcapng
P2PC_ONLY ?=

.PHONY: all deps test-deps build keys test demo install-user uninstall-user install-system uninstall-system captures bench bench-huge bench-live fuzz check-versions check-bare clean

all: build

# What make demo needs; the test suite's, bench's and the generators' tools come with test-deps.
deps:
	@PYTHON=$(PYTHON) tools/install-deps.sh

test-deps:
	@PYTHON=$(PYTHON) tools/install-deps.sh --test

WERROR ?= OFF

build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DP2PC_ONLY="$(P2PC_ONLY)" \
	  -DP2PC_WERROR=$(WERROR) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# p2pc keys' helper (keys/): its eBPF program compiled by clang (bpf2go, a tool of the pinned
# cilium/ebpf) and the Go program that loads it; Go 1.24 or later, modules from the Go proxy.
keys:
	@PYTHON=$(PYTHON) tools/install-deps.sh --keys
	@command -v go >/dev/null || { echo "p2pc: make keys needs Go 1.24 or later (go not found)" >&2; exit 1; }
	@cd keys && MULTIARCH=$$(gcc -print-multiarch) go generate ./... && go build -trimpath -o ../$(BUILD)/p2pc-keys .
	@echo "p2pc: built $(BUILD)/p2pc-keys (p2pc keys --pid PID --output FILE)"

# Tests build with warnings as errors: a warning on any supported Wireshark fails them.
# Every test; P2PC_TESTS=host runs only those that need a real machine (tests/conftest.py).
test: WERROR = ON
test: test-deps build
	$(VENV_PY) -m pytest -q tests

# Installs into the folder of the Wireshark that is installed now, the build made for it.
install-user: build
	@mm="$(WS_MM)"; [ -n "$$mm" ] || { echo "p2pc: tshark not found: run make deps" >&2; exit 1; }; \
	  so="$(BUILD)/plugins/$$mm/epan/p2pc.so"; \
	  [ -f "$$so" ] || { echo "p2pc: $$so missing: the build is for another Wireshark; run make clean build" >&2; exit 1; }; \
	  mkdir -p "$(USER_PLUGIN_ROOT)/$$mm/epan" && install -m 0644 "$$so" "$(USER_PLUGIN_ROOT)/$$mm/epan/p2pc.so"; \
	  for f in lua/*.lua; do install -m 0644 "$$f" "$(USER_PLUGIN_ROOT)/"; done; \
	  echo "p2pc: plugin installed in $(USER_PLUGIN_ROOT)/$$mm/epan (Wireshark $$mm)"
	@# The p2pc configuration profile (columns, colouring rules, I/O graphs): Edit > Configuration
	@# Profiles, or tshark -C p2pc. Reinstalling replaces it: copy it under another name to change it.
	@# Its colorfilters: p2pc's rules, then the installed Wireshark's defaults (tools/p2pc_profile.py).
	@$(PYTHON) tools/p2pc_profile.py "$(USER_CONFIG_DIR)/profiles/p2pc" >/dev/null && \
	  echo "p2pc: profile p2pc installed in $(USER_CONFIG_DIR)/profiles/p2pc (-C p2pc)"
	@if [ "$$(id -u)" -eq 0 ]; then \
	  echo "p2pc: note: Wireshark ignores personal plugins when run as root;"; \
	  echo "      the p2pc command handles that itself; for your own root tshark: make install-system"; fi

uninstall-user:
	rm -f "$(USER_PLUGIN_ROOT)/$(WS_MM)/epan/p2pc.so"
	rm -rf "$(USER_CONFIG_DIR)/profiles/p2pc"
	@for f in lua/*.lua; do rm -f "$(USER_PLUGIN_ROOT)/$$(basename "$$f")"; done

# Into the global folders, for every user and for root (who ignores personal plugins): run as
# root.  A global copy is loaded before any other, so `make test` and `p2pc --plugin` would load
# it and not the build they name: uninstall-system before working on p2pc itself.
install-system: build
	@mm="$(WS_MM)"; [ -n "$$mm" ] || { echo "p2pc: tshark not found: run make deps" >&2; exit 1; }; \
	  so="$(BUILD)/plugins/$$mm/epan/p2pc.so"; \
	  [ -f "$$so" ] || { echo "p2pc: $$so missing: the build is for another Wireshark; run make clean build" >&2; exit 1; }; \
	  dir="$(GLOBAL_PLUGIN_DIR)"; lua="$(GLOBAL_LUA_DIR)"; \
	  [ -n "$$dir" ] && [ -n "$$lua" ] || { echo "p2pc: tshark -G folders names no global plugin folder" >&2; exit 1; }; \
	  mkdir -p "$$dir/epan" "$$lua" && install -m 0644 "$$so" "$$dir/epan/p2pc.so" && \
	  for f in lua/*.lua; do install -m 0644 "$$f" "$$lua/"; done && \
	  echo "p2pc: plugin installed in $$dir/epan, its Lua parts in $$lua (Wireshark $$mm, every user)"
	@$(PYTHON) tools/p2pc_profile.py "$(GLOBAL_PROFILE_DIR)/p2pc" >/dev/null && \
	  echo "p2pc: profile p2pc installed in $(GLOBAL_PROFILE_DIR)/p2pc (every user, -C p2pc)"

uninstall-system:
	@dir="$(GLOBAL_PLUGIN_DIR)"; lua="$(GLOBAL_LUA_DIR)"; \
	  [ -n "$$dir" ] && [ -n "$$lua" ] || { echo "p2pc: tshark -G folders names no global plugin folder" >&2; exit 1; }; \
	  rm -f "$$dir/epan/p2pc.so"; for f in lua/*.lua; do rm -f "$$lua/$$(basename "$$f")"; done; \
	  rm -rf "$(GLOBAL_PROFILE_DIR)/p2pc"; \
	  echo "p2pc: removed from $$dir/epan, $$lua and $(GLOBAL_PROFILE_DIR)/p2pc"

# A Debian package for the Wireshark installed here (packaging/debian, built by dpkg-buildpackage
# from a copy of the checkout's files, with the system's tools only: PATH is the system's, not a
# pyenv's or a venv's): build/deb/p2pc_VERSION_ARCH.deb.  And the analyzer alone as
# a wheel: build/dist/p2pc-VERSION-py3-none-any.whl.
.PHONY: deb wheel
deb:
	@tools/install-deps.sh --deb
	@rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/src
	@git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -C $(BUILD)/deb/src -xf -
	@cp -r packaging/debian $(BUILD)/deb/src/debian
	@cd $(BUILD)/deb/src && env PATH=/usr/sbin:/usr/bin:/sbin:/bin dpkg-buildpackage -b -us -uc >../build.log 2>&1 \
	  || { tail -30 ../build.log >&2; echo "p2pc: dpkg-buildpackage failed ($(BUILD)/deb/build.log)" >&2; exit 1; }
	@ls $(BUILD)/deb/*.deb | sed 's/^/p2pc: built /'

wheel: deps
	@$(VENV_PY) -m pip wheel -q --no-deps --disable-pip-version-check -w $(BUILD)/dist ./analyzer
	@ls $(BUILD)/dist/*.whl | sed 's/^/p2pc: built /'

demo: deps install-user
	@.venv/bin/p2pc analyze $(DEMO_CAPTURE)
	@echo
	@.venv/bin/p2pc compare captures/bitcoin/btc-baseline.pcapng $(DEMO_CAPTURE)

captures: test-deps
	@[ "$$(id -u)" -eq 0 ] || { echo "make captures needs root (network namespaces)"; exit 1; }
	$(VENV_PY) captures/gen/make_all.py

bench: test-deps build
	PYTHONPATH=analyzer $(VENV_PY) tools/bench.py

# A capture larger than one tshark pass fits: p2pc analyze shards it (tools/bench.py --huge-gb).
HUGE_GB ?= 10
bench-huge: test-deps build
	PYTHONPATH=analyzer $(VENV_PY) tools/bench.py --huge-gb $(HUGE_GB)

# Root: >= 2 GB replayed through `p2pc live` on a veth pair in a network namespace; peak RSS
# and live's totals vs the offline analysis (LIVE_BENCH_MB=100 for a quick run); then the
# highest replay rate live keeps up with, exactly, on a LIVE_RATE_MB capture.
LIVE_BENCH_MB ?= 2100
LIVE_RATE_MB ?= 300
bench-live: test-deps build
	PYTHONPATH=analyzer $(VENV_PY) tools/live-bench.py --size-mb $(LIVE_BENCH_MB) --find-rate-mb $(LIVE_RATE_MB)

# The fuzz gate (fuzz/README.md): editcap mutants of the captures through an ASan+UBSan
# build (build-asan/). FUZZ_PROFILE=short (default, CI: the captures fuzz/short-skip.txt does not
# list, 846 runs) or long (every capture).
FUZZ_PROFILE ?= short
fuzz-deps:
	@PYTHON=$(PYTHON) tools/install-deps.sh --fuzz

fuzz: fuzz-deps
	FUZZ_PROFILE=$(FUZZ_PROFILE) $(VENV_PY) tools/fuzz.py

# libFuzzer harnesses (fuzz/): the regressions, then each harness for LIBFUZZ_SECONDS
# (CI: 12, two harnesses at a time; long runs: the default 600, LIBFUZZ_JOBS=2 for both cores).
LIBFUZZ_SECONDS ?= 600
LIBFUZZ_JOBS ?= 1
LIBFUZZ_PAR ?= 1
.PHONY: libfuzz fuzz-deps fuzz-build
libfuzz: fuzz-deps
	@rc=0; $(MAKE) --no-print-directory -C fuzz regress || rc=1; \
	  $(MAKE) --no-print-directory -C fuzz run SECONDS=$(LIBFUZZ_SECONDS) JOBS=$(LIBFUZZ_JOBS) PAR=$(LIBFUZZ_PAR) || rc=1; \
	  exit $$rc

# Both sanitizer builds, the fuzz gate's (build-asan/) and the harnesses (build-fuzz/), and
# nothing run: CI makes them early, while its cores wait on the chroots' downloads.
fuzz-build: fuzz-deps
	$(VENV_PY) tools/fuzz.py --build-only
	$(MAKE) --no-print-directory -C fuzz all

# Root: the whole suite against Wireshark 4.4 (Debian trixie) and 4.6 (Debian sid) in chroots.
check-versions:
	tools/ws-versions.sh trixie sid

# Root: a bare Debian 12 chroot, a clean clone, its first make demo, then make test (CI's run of
# the whole suite on Wireshark 4.0; the host adds the tests a chroot skips, .ci/README.md).
check-bare:
	tools/bare-check.sh

# The real Wireshark GUI under Xvfb with the fresh plugin: fails if it does not start or a
# screenshot is blank; writes docs/screenshots/*.png (installs wireshark, xvfb, xdotool,
# imagemagick with apt-get if missing). On demand, not part of make test.
.PHONY: gui-check
gui-check: deps build
	$(VENV_PY) tools/gui-check.py

# The same GUI check on Wireshark 4.4 (Debian trixie) and 4.6 (sid), each in a chroot of its own
# (tools/ws-versions.sh --gui; root): finds the savings window in each version's Statistics menu,
# writes docs/screenshots/stats-savings*-4.4.png, -4.6.png and build/gui-versions/*.png. About 7 min
# (4.6 has the entry in a submenu: its whole top level is walked first).
.PHONY: gui-check-versions
gui-check-versions:
	tools/ws-versions.sh --gui trixie sid

clean:
	rm -rf $(BUILD)
