-- p2pc_api_misuse.lua: tests/test_lua_api.py's misuse of the p2pc Lua API, on one frame of any
-- capture (P2PC_MISUSE_FRAME, default 1).  Every call must end in an expert item or a Lua
-- error, never a crash or a record; what each call returned goes into the tree as text
-- ("misuse <name>: <result>") for the test to read.
local p2pc = require("p2pc")

local misuse = Proto("p2pc_misuse", "p2pc API misuse (test)")
local f_result = ProtoField.string("p2pc_misuse.result", "Result")
misuse.fields = { f_result }
local FRAME = tonumber(os.getenv("P2PC_MISUSE_FRAME") or "1")

local function note(tree, name, value)
    tree:add(f_result, name .. ": " .. tostring(value))
end

function misuse.dissector(tvb, pinfo, tree)
    if pinfo.number ~= FRAME then return end
    local t = tree:add(misuse, tvb(0, 0))
    local r = p2pc.decompress("nosuch", tvb(0, 8), pinfo, t)
    note(t, "unknown codec", r.status)
    r = p2pc.decompress("zlib", tvb(0, 8), pinfo, t)
    note(t, "garbage zlib", r.status)
    local abc = ByteArray.new("789c4b4c4a0600024d0127")  -- zlib of "abc"
    r = p2pc.decompress("zlib", abc:tvb("zlib abc"), pinfo, t, { payload = "no-such-key" })
    note(t, "unknown payload key", r.status .. " " .. tostring(r.raw_len))
    r = p2pc.decompress("zlib", abc:tvb("zlib abc"), pinfo, t, { bound = 2 })
    note(t, "over bound", r.status)
    note(t, "no msg_type", p2pc.record(tvb(0, 8), pinfo, t, { proto = "misuse" }))
    note(t, "header past wire", p2pc.record(tvb(0, 8), pinfo, t, { proto = "misuse", msg_type = "x",
                                                                   header_len = 9 }))
    note(t, "long name", p2pc.record(tvb(0, 8), pinfo, t, { proto = string.rep("p", 65), msg_type = "x" }))
    -- Straight through pinfo.private, as a script without the module would.
    pinfo.private["p2pc.record.proto"] = "misuse"
    pinfo.private["p2pc.record.msg_type"] = "x"
    pinfo.private["p2pc.record.wire_len"] = "12x"
    Dissector.get("p2pc.record"):call(tvb(0, 8):tvb(), pinfo, t)
    note(t, "bad number", pinfo.private["p2pc.record.status"])
    pinfo.private["p2pc.dc.bound"] = "-1"
    Dissector.get("p2pc.decompress.zlib"):call(tvb(0, 8):tvb(), pinfo, t)
    note(t, "bad bound", pinfo.private["p2pc.dc.status"])
    -- Nothing of the bad record may carry over: this one counts, with its own values only.
    note(t, "good after bad", p2pc.record(tvb(0, 8), pinfo, t, { proto = "misuse", msg_type = "ok" }))
    -- A Lua error in a payload callback is a "Lua Error" expert item, as in any Lua dissector;
    -- the decompression itself succeeded, and the next callback is the right one.
    r = p2pc.decompress("zlib", abc:tvb("zlib abc"), pinfo, t, { payload = function() error("callback failed") end })
    note(t, "callback error", r.status)
    r = p2pc.decompress("zlib", abc:tvb("zlib abc"), pinfo, t, { payload = function(raw) note(t, "raw", raw:raw()) end })
    note(t, "after callback error", r.status)
end
register_postdissector(misuse)
