-- lumen.lua
-- Lumen, an example P2P protocol dissected in Lua through the p2pc API (docs/lua-api.md):
-- framed over TCP, each payload compressed with Snappy, zstd or a per-direction deflate stream,
-- transactions batched.  Its messages report through the p2pc record, so `p2pc analyze`,
-- Statistics > P2PC and -z p2pc,records see Lumen like any C-dissected protocol.
-- Wire format (captures/gen/lumen.py), big-endian:
--   magic "LUMN" | version u8 | type u8 | codec u8 | flags u8 | length u32 | raw_len u32 | payload
-- Load it with `tshark -X lua_script:lua/examples/lumen.lua`, from a plugin folder, or (any p2pc
-- command) with P2PC_LUA=/path/to/lumen.lua.  It needs p2pc.lua (installed by make install-user).
--
-- SPDX-License-Identifier: GPL-2.0-or-later

local p2pc = require("p2pc")

local HEADER_LEN = 16
local PORT = 40400
-- The largest payload Lumen allows, compressed or not: the decompression bound.
local MAX_RAW = 1024 * 1024

local TYPES = { [1] = "tx", [2] = "txbatch", [3] = "block", [4] = "ping" }
local CODECS = { [0] = "none", [1] = "snappy", [2] = "zstd", [3] = "deflate-stream" }

local lumen = Proto("lumen", "Lumen P2P (p2pc Lua API example)")
local f = {
    magic = ProtoField.string("lumen.magic", "Magic"),
    version = ProtoField.uint8("lumen.version", "Version"),
    type = ProtoField.uint8("lumen.type", "Type", base.DEC, TYPES),
    codec = ProtoField.uint8("lumen.codec", "Codec", base.DEC, CODECS),
    flags = ProtoField.uint8("lumen.flags", "Flags", base.HEX),
    length = ProtoField.uint32("lumen.length", "Payload length"),
    raw_len = ProtoField.uint32("lumen.raw_len", "Uncompressed length"),
    count = ProtoField.uint16("lumen.count", "Transactions"),
    tx = ProtoField.string("lumen.tx", "Transaction"),
    height = ProtoField.uint64("lumen.height", "Block height"),
    nonce = ProtoField.uint64("lumen.nonce", "Nonce", base.HEX),
}
lumen.fields = f
local ei = {
    magic = ProtoExpert.new("lumen.bad_magic", "Not a Lumen message", expert.group.MALFORMED, expert.severity.ERROR),
    codec = ProtoExpert.new("lumen.bad_codec", "Unknown Lumen codec", expert.group.MALFORMED, expert.severity.ERROR),
    too_big = ProtoExpert.new("lumen.too_big", "Payload over Lumen's limit", expert.group.MALFORMED, expert.severity.ERROR),
    raw_len = ProtoExpert.new("lumen.raw_len_mismatch", "Uncompressed length differs from the header's",
                              expert.group.MALFORMED, expert.severity.WARN),
    items = ProtoExpert.new("lumen.bad_items", "Transaction list runs past the payload", expert.group.MALFORMED,
                            expert.severity.ERROR),
}
lumen.experts = { ei.magic, ei.codec, ei.too_big, ei.raw_len, ei.items }

-- count u16, then count x (len u16, tx): the transactions into `tree`; the count, or nil when
-- the list runs past the payload.
local function dissect_items(tvb, off, tree)
    if tvb:len() < off + 2 then return nil end
    local count = tvb(off, 2):uint()
    tree:add(f.count, tvb(off, 2))
    off = off + 2
    for _ = 1, count do
        if tvb:len() < off + 2 then return nil end
        local n = tvb(off, 2):uint()
        if tvb:len() < off + 2 + n then return nil end
        tree:add(f.tx, tvb(off + 2, n))
        off = off + 2 + n
    end
    return count
end

-- The payload, uncompressed: its items into the tree; the batch count (1 unless a batch).
local function dissect_payload(mtype, tvb, tree, item)
    local st = tree:add(lumen, tvb(), "Payload")
    local count = 1
    if mtype == 4 and tvb:len() >= 8 then
        st:add(f.nonce, tvb(0, 8))
    elseif mtype == 3 and tvb:len() >= 8 then
        st:add(f.height, tvb(0, 8))
        if not dissect_items(tvb, 8, st) then item:add_proto_expert_info(ei.items) end
    elseif mtype == 2 then
        count = dissect_items(tvb, 0, st)
        if not count then
            item:add_proto_expert_info(ei.items)
            count = 1
        end
    elseif mtype == 1 then
        st:add(f.tx, tvb())
    end
    return count
end

-- One whole message at tvb(off): the tree, the decompression and the p2pc record.
local function dissect_message(tvb, off, pinfo, tree)
    local length = tvb(off + 8, 4):uint()
    local declared_raw = tvb(off + 12, 4):uint()
    local mtype = tvb(off + 5, 1):uint()
    local codec_id = tvb(off + 6, 1):uint()
    local codec = CODECS[codec_id]
    local type_name = TYPES[mtype] or string.format("type%d", mtype)
    local msg = tvb(off, HEADER_LEN + length)
    local ti = tree:add(lumen, msg, "Lumen " .. type_name)
    ti:add(f.magic, tvb(off, 4))
    ti:add(f.version, tvb(off + 4, 1))
    ti:add(f.type, tvb(off + 5, 1))
    ti:add(f.codec, tvb(off + 6, 1))
    ti:add(f.flags, tvb(off + 7, 1))
    ti:add(f.length, tvb(off + 8, 4))
    ti:add(f.raw_len, tvb(off + 12, 4))

    local payload = length > 0 and tvb(off + HEADER_LEN, length) or nil
    local raw_len, raw_output, batch = length, nil, 1
    if not codec then
        ti:add_proto_expert_info(ei.codec)
        codec = string.format("codec%d", codec_id)
    elseif codec == "none" then
        if payload then batch = dissect_payload(mtype, payload:tvb(), ti, ti) end
    elseif payload then
        local r = p2pc.decompress(codec, payload, pinfo, ti, {
            bound = MAX_RAW, stream = "lumen",
            payload = function(raw, _, _) batch = dissect_payload(mtype, raw, ti, ti) end,
        })
        if r.ok then
            raw_len, raw_output = r.raw_len, r.output
            if raw_len ~= declared_raw then ti:add_proto_expert_info(ei.raw_len) end
        end
    end
    if declared_raw > MAX_RAW then ti:add_proto_expert_info(ei.too_big) end
    pinfo.cols.info:append(" " .. type_name)
    p2pc.record(msg, pinfo, tree, {
        proto = "lumen", msg_type = type_name, codec = codec, header_len = HEADER_LEN,
        payload_len = length, raw_len = raw_len, batch_count = batch, raw_output = raw_output,
    })
end

function lumen.dissector(tvb, pinfo, tree)
    local off = 0
    pinfo.cols.protocol = "Lumen"
    pinfo.cols.info = ""
    while off < tvb:len() do
        local left = tvb:len() - off
        if left < HEADER_LEN then
            pinfo.desegment_offset = off
            pinfo.desegment_len = HEADER_LEN - left
            return tvb:len()
        end
        if tvb(off, 4):string() ~= "LUMN" then
            tree:add(lumen, tvb(off)):add_proto_expert_info(ei.magic)
            return tvb:len()
        end
        local length = tvb(off + 8, 4):uint()
        if length > MAX_RAW then
            -- Never wait for more than Lumen allows: report and drop the rest of the segment.
            tree:add(lumen, tvb(off, HEADER_LEN)):add_proto_expert_info(ei.too_big)
            return tvb:len()
        end
        if left < HEADER_LEN + length then
            pinfo.desegment_offset = off
            pinfo.desegment_len = HEADER_LEN + length - left
            return tvb:len()
        end
        dissect_message(tvb, off, pinfo, tree)
        off = off + HEADER_LEN + length
    end
    return off
end

DissectorTable.get("tcp.port"):add(PORT, lumen)
