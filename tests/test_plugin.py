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
