#!/usr/bin/env python3
"""The house's shape, checked from the code: no import circle and no arrow running back up.

- The plugin (plugin/): each file's `#include "folder/file.h"` lines, a .c and its .h as one
  module.  The modules' graph has no circle, and each protocol folder includes only the folders
  below it (LAYERS): core/ includes only core/, bitcoin/ and fisco/ add nothing, eth2/ and
  ipfs/ may include libp2p/ (they are libp2p protocols), and nothing includes eth2/ or ipfs/.
- Every plugin function of more than LONG lines (about 80: README.dissector's models keep to
  that) says why at its top, in a comment starting "Over 80 lines:".
- The analyzer (analyzer/p2pc): the import graph import-linter's grimp builds (function-local
  imports included) has no circle, and import-linter's layers contract
  (analyzer/pyproject.toml, [tool.importlinter]) holds: the CLI on top, then the reports, the
  accounting, the records.

Prints one line per finding and exits 1 when there is any; 0 and one summary line otherwise.
"""
from __future__ import annotations

import re
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "plugin"
ANALYZER = REPO / "analyzer"
# What each plugin folder may include, besides itself.
LAYERS = {
    "core": set(),
    "bitcoin": {"core"},
    "fisco": {"core"},
    "libp2p": {"core"},
    "eth2": {"core", "libp2p"},
    "ipfs": {"core", "libp2p"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z0-9_]+)/([^"]+)\.h"', re.M)
LONG = 80
# A function definition in Wireshark's style: its name at the start of a line, its return type on
# the line before, its body ending at the first "}" at the start of a line.
FUNCTION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(", re.M)


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as e:
        return e.args[1]
    return None


def plugin_findings() -> tuple[list[str], int]:
    graph: dict[str, set[str]] = {}
    found = []
    for f in sorted(PLUGIN.rglob("*.[ch]")):
        folder = f.parent.relative_to(PLUGIN).as_posix()
        if folder not in LAYERS:
            found.append(f"plugin: {f.relative_to(REPO)} is in no folder of tools/house-check.py's LAYERS")
            continue
        module = f"{folder}/{f.stem}"
        deps = graph.setdefault(module, set())
        for target_folder, stem in INCLUDE.findall(f.read_text()):
            target = f"{target_folder}/{stem}"
            if target != module:
                deps.add(target)
            if target_folder != folder and target_folder not in LAYERS[folder]:
                found.append(f"plugin: {f.relative_to(REPO)} includes {target}.h: {folder}/ may include "
                             f"only {', '.join(sorted(LAYERS[folder] | {folder}))}")
    c = cycle(graph)
    if c:
        found.append("plugin: an include circle: " + " -> ".join(c))
    return found, len(graph)


def long_functions() -> list[str]:
    found = []
    for f in sorted(PLUGIN.rglob("*.c")):
        lines = f.read_text().splitlines()
        for i, line in enumerate(lines):
            m = FUNCTION.match(line)
            if not m or m.group(1).isupper() or line.rstrip().endswith(";"):
                continue
            end = next((j for j in range(i, len(lines)) if lines[j] == "}"), i)
            top = i - 1             # the return type's line, then the comment above it
            while top > 0 and lines[top - 1].strip().startswith(("/*", "*")):
                top -= 1
            if end - i + 1 > LONG and "Over 80 lines:" not in "\n".join(lines[top:i]):
                found.append(f"plugin: {f.relative_to(REPO)}:{i + 1}: {m.group(1)} is {end - i + 1} lines "
                             "and says not why at its top (\"Over 80 lines: ...\")")
    return found


def analyzer_findings() -> tuple[list[str], int]:
    import grimp
    sys.path.insert(0, str(ANALYZER))
    g = grimp.build_graph("p2pc")
    graph = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    found = []
    c = cycle(graph)
    if c:
        found.append("analyzer: an import circle: " + " -> ".join(c))
    res = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                          "sys.exit(lint_imports_command())", "--config", "pyproject.toml", "--no-cache"],
                         cwd=ANALYZER, capture_output=True, text=True)
    if res.returncode != 0:
        broken = [ln.strip() for ln in res.stdout.splitlines() if " is not allowed to import " in ln]
        found += [f"analyzer: {b}" for b in broken] or [f"analyzer: lint-imports failed: {res.stdout[-400:]}{res.stderr[-400:]}"]
    return found, len(graph)


def main() -> int:
    plugin, nc = plugin_findings()
    plugin += long_functions()
    analyzer, npy = analyzer_findings()
    for line in plugin + analyzer:
        print(line)
    if plugin or analyzer:
        return 1
    print(f"house-check: {nc} plugin modules and {npy} analyzer modules: no circle, no arrow back up, "
          f"no plugin function over {LONG} lines without its reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())
