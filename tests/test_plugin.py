"""The plugin loads into the real tshark and registers the common p2pc record."""

RECORD_FIELDS = ["p2pc.proto", "p2pc.msg_type", "p2pc.codec", "p2pc.wire_len",
                 "p2pc.header_len", "p2pc.payload_len", "p2pc.raw_len", "p2pc.saved",
                 "p2pc.ratio", "p2pc.batch_count"]


def test_plugin_is_the_built_one(ws, tshark):
    out = tshark.run(["-G", "plugins"]).stdout
    lines = [l for l in out.splitlines() if l.startswith("p2pc.so")]
    assert len(lines) == 1, out
    assert str(ws._home) in lines[0], "tshark loaded a p2pc.so other than the fresh build"


def test_record_fields_registered(tshark):
    out = tshark.run(["-G", "fields"]).stdout
    names = {l.split("\t")[2] for l in out.splitlines() if l.startswith("F\t")}
    for f in RECORD_FIELDS:
        assert f in names, f


def test_taps_registered(tshark):
    res = tshark.run(["-z", "help"], check=False)
    out = res.stdout + res.stderr
    assert "p2pc,records" in out
    assert "p2pc,tree" in out


def test_lua_savings_window_loads(tshark):
    """The GUI window's script parses and runs its tshark path (it registers only with a GUI)."""
    from conftest import REPO
    res = tshark.run(["-X", f"lua_script:{REPO / 'lua' / 'p2pc_savings.lua'}", "-r",
                      tshark.ws.readable(REPO / "captures" / "bitcoin" / "btc-small.pcapng"), "-q"], check=False)
    assert res.returncode == 0
    assert "Lua:" not in res.stderr, res.stderr   # "tshark: Lua: syntax error: ..." and the like


OUR_PROTOCOLS = {"btcc", "p2pc", "fisco", "multistream", "libp2p", "libp2p_app", "libp2p_plaintext",
                 "libp2p_noise", "libp2p_tls", "yamux", "mplex", "libp2p_compression", "eth2", "gossipsub",
                 "fisco3", "p2pc_lua"}


def _expert_abbrevs() -> set[str]:
    """Expert items also show in `-G fields` (FT_NONE, their summary as the name); an
    ei_register_info has no blurb slot, so they are read from the sources and left out."""
    import re
    from conftest import REPO, spec_checks
    names = set(spec_checks())
    for src in (REPO / "plugin").rglob("*.c"):
        names |= set(re.findall(r'\{\s*&ei_\w+,\s*\{\s*"([^"]+)"', src.read_text()))
    return names


def test_every_field_has_a_description(tshark):
    """`-G fields`: F, name, abbrev, type, parent protocol, base, bitmask, blurb."""
    experts = _expert_abbrevs()
    ours, missing = [], []
    for line in tshark.run(["-G", "fields"]).stdout.splitlines():
        cols = line.split("\t")
        if cols[0] != "F" or cols[4] not in OUR_PROTOCOLS or cols[2] in experts:
            continue
        ours.append(cols[2])
        if len(cols) < 8 or not cols[7].strip():
            missing.append(cols[2])
    assert len(ours) > 100, ours          # the plugin's fields are there at all
    assert {"yamux.stream", "btcc.codec", "gossipsub.topic"} <= set(ours)
    assert not missing, f"fields without a description: {missing}"


def _ratio_lines(tshark, capture, label):
    import re
    out = tshark.run(["-n", "-V", "-r", tshark.ws.readable(capture)]).stdout
    return re.findall(rf"^\s*\[?{re.escape(label)}: ([^\]\n]*)\]?$", out, re.M)


def test_ratios_print_two_decimals(tshark):
    """p2pc.ratio, fisco.ratio and libp2p_compression.ratio read as 2.02, not 2.02217783252674, in
    the tree and in a custom column (p2pc_ratio_format, tests/test_profile.py); the exact value
    stays in the field (compared with raw_len / payload_len)."""
    from conftest import CAPTURES
    cases = [(CAPTURES / "bitcoin" / "btc-compressed.pcapng", "Compression ratio"),
             (CAPTURES / "fisco" / "fisco-serial-on.pcapng", "Compression ratio"),
             (CAPTURES / "libp2p-compression" / "comp-deflate.pcapng", "Ratio so far")]
    for capture, label in cases:
        shown = _ratio_lines(tshark, capture, label)
        assert shown, (capture, label)
        for v in shown:
            assert v.count(".") == 1 and len(v.split(".")[1]) == 2, (capture, v)
    rows = tshark.fields(CAPTURES / "bitcoin" / "btc-compressed.pcapng",
                         ["p2pc.raw_len", "p2pc.payload_len", "p2pc.ratio"], dfilter="p2pc.ratio > 1.05")
    exact = [(int(r), int(p), float(x)) for row in rows
             for r, p, x in zip(*(c.split("|") for c in row))]
    assert exact and all(abs(x - r / p) < 1e-12 for r, p, x in exact)
    assert any(len(repr(x).split(".")[1]) > 3 for _, _, x in exact)   # filters see all digits


def test_the_plugin_map_names_every_source_file():
    """plugin/README.md's map is how a newcomer finds a file: each .c and .h under plugin/ is on
    it (as name.c, name.h or name.{h,c})."""
    import re
    from conftest import REPO
    text = (REPO / "plugin" / "README.md").read_text()
    named = set()
    for stem, ext in re.findall(r"([\w-]+)\.(\{h,c\}|c\b|h\b)", text):
        named |= {f"{stem}.h", f"{stem}.c"} if ext == "{h,c}" else {f"{stem}.{ext}"}
    files = {p.name for p in (REPO / "plugin").rglob("*.[ch]")}
    assert len(files) > 40
    assert not files - named, f"not on plugin/README.md's map: {sorted(files - named)}"


def test_the_engine_example_compiles(tmp_path):
    """plugin/README.md's smallest complete libp2p layer is the engine's contract in code: it
    compiles against today's headers with the build's own flags (-Werror included), so a change
    to the engine's API that leaves the example behind fails here."""
    import re
    import shlex
    import subprocess
    from conftest import REPO
    block = re.search(r"```c\n(.*?)```", (REPO / "plugin" / "README.md").read_text(), re.S)
    assert block and "l2p_dissect_pdus" in block.group(1)
    flags = {}
    for line in (REPO / "build" / "plugin" / "CMakeFiles" / "p2pc.dir" / "flags.make").read_text().splitlines():
        key, sep, value = line.partition(" = ")
        if sep:
            flags[key] = shlex.split(value)
    src = tmp_path / "packet-example.c"
    src.write_text(block.group(1))
    res = subprocess.run(["cc", "-fsyntax-only", *flags["C_DEFINES"], *flags["C_INCLUDES"], *flags["C_FLAGS"],
                          str(src)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
