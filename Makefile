# p2pc — the two commands: `make demo` and `make test`.
PYTHON ?= python3
BUILD ?= build
JOBS ?= $(shell nproc)
WS_MM := $(shell tshark --version 2>/dev/null | sed -n 's/^TShark (Wireshark) \([0-9]*\.[0-9]*\).*/\1/p')
PLUGIN := $(BUILD)/plugins/$(WS_MM)/epan/p2pc.so
USER_PLUGIN_DIR := $(HOME)/.local/lib/wireshark/plugins/$(WS_MM)/epan
USER_LUA_DIR := $(HOME)/.local/lib/wireshark/plugins
DEMO_CAPTURE ?= captures/bitcoin/btc-compressed.pcapng
P2PC_ONLY ?=

.PHONY: all deps build test demo install-user uninstall-user captures bench fuzz check-ws44 clean

all: build

deps:
	@tools/install-deps.sh

build:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DP2PC_ONLY="$(P2PC_ONLY)" >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: deps build
	$(PYTHON) -m pytest -q tests

install-user: build
	@mkdir -p $(USER_PLUGIN_DIR)
	@install -m 0644 $(PLUGIN) $(USER_PLUGIN_DIR)/p2pc.so
	@for f in lua/*.lua; do [ -e "$$f" ] && install -m 0644 "$$f" $(USER_LUA_DIR)/; done; true
	@echo "p2pc: plugin installed in $(USER_PLUGIN_DIR)"
	@if [ "$$(id -u)" -eq 0 ]; then \
	  echo "p2pc: note: Wireshark ignores personal plugins when run as root;"; \
	  echo "      the p2pc command handles that itself (see README, 'Running as root')."; fi

uninstall-user:
	rm -f $(USER_PLUGIN_DIR)/p2pc.so

demo: deps install-user
	@PYTHONPATH=analyzer $(PYTHON) -m p2pc analyze $(DEMO_CAPTURE)
	@echo
	@PYTHONPATH=analyzer $(PYTHON) -m p2pc compare captures/bitcoin/btc-baseline.pcapng $(DEMO_CAPTURE)

captures:
	@[ "$$(id -u)" -eq 0 ] || { echo "make captures needs root (network namespaces)"; exit 1; }
	$(PYTHON) captures/gen/make_all.py

bench: build
	PYTHONPATH=analyzer $(PYTHON) tools/bench.py

fuzz:
	$(PYTHON) tools/fuzz.py

check-ws44:
	tools/check-ws44.sh

clean:
	rm -rf $(BUILD)
