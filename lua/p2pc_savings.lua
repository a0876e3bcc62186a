-- p2pc_savings.lua
-- Statistics ▸ P2P Compression ▸ Savings by message type: a live window in the Wireshark GUI
-- over the common p2pc record, summing per protocol and message type the payload bytes saved by
-- compression and the message headers saved by batching ((batch_count - 1) x header_len).
-- The full model (TCP segments and ACKs) is the `p2pc analyze` command's; this window is the
-- quick look while browsing a capture.
--
-- SPDX-License-Identifier: GPL-2.0-or-later

if not gui_enabled() then return end

local f_proto   = Field.new("p2pc.proto")
local f_type    = Field.new("p2pc.msg_type")
local f_codec   = Field.new("p2pc.codec")
local f_wire    = Field.new("p2pc.wire_len")
local f_header  = Field.new("p2pc.header_len")
local f_payload = Field.new("p2pc.payload_len")
local f_raw     = Field.new("p2pc.raw_len")
local f_batch   = Field.new("p2pc.batch_count")

local function open_window()
    local win = TextWindow.new("p2pc: savings by message type")
    local rows = {}
    local tap = Listener.new("frame", "p2pc")

    local function add(key, proto, mtype, codec, wire, hdr, payload, raw, batch)
        local r = rows[key]
        if not r then
            r = { proto = proto, mtype = mtype, codecs = {}, n = 0, wire = 0, payload = 0,
                  raw = 0, header_saved = 0 }
            rows[key] = r
        end
        r.codecs[codec] = true
        r.n = r.n + 1
        r.wire = r.wire + wire
        r.payload = r.payload + payload
        r.raw = r.raw + raw
        r.header_saved = r.header_saved + (batch - 1) * hdr
    end

    function tap.packet(pinfo, tvb)
        local protos, types, codecs = { f_proto() }, { f_type() }, { f_codec() }
        local wires, hdrs, payloads = { f_wire() }, { f_header() }, { f_payload() }
        local raws, batches = { f_raw() }, { f_batch() }
        -- One frame can carry several messages: the fields come in record order.
        for i = 1, #protos do
            local proto, mtype = tostring(protos[i].value), tostring(types[i].value)
            add(proto .. "\t" .. mtype, proto, mtype, tostring(codecs[i].value),
                tonumber(tostring(wires[i].value)), tonumber(tostring(hdrs[i].value)),
                tonumber(tostring(payloads[i].value)), tonumber(tostring(raws[i].value)),
                tonumber(tostring(batches[i].value)))
        end
    end

    function tap.draw()
        local keys = {}
        for k in pairs(rows) do keys[#keys + 1] = k end
        table.sort(keys)
        win:clear()
        win:append(string.format("%-10s %-28s %8s %14s %14s %14s %12s %12s\n", "proto",
            "message type", "msgs", "wire bytes", "payload sent", "uncompressed",
            "payload saved", "hdr saved"))
        for _, k in ipairs(keys) do
            local r = rows[k]
            win:append(string.format("%-10s %-28s %8d %14d %14d %14d %12d %12d\n", r.proto,
                r.mtype, r.n, r.wire, r.payload, r.raw, r.raw - r.payload, r.header_saved))
        end
        win:append("\nFull model with TCP segment and ACK savings: p2pc analyze <capture>\n")
    end

    function tap.reset()
        rows = {}
    end

    win:set_atclose(function() tap:remove() end)
    retap_packets()
end

register_menu("P2P Compression/Savings by message type", open_window, MENU_STAT_GENERIC)
