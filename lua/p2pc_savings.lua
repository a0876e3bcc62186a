-- p2pc_savings.lua
-- Statistics ▸ P2P Compression ▸ Savings by message type: a window in the Wireshark GUI over the
-- common p2pc record, with the savings model of docs/savings-model.md (p2pc_model.lua): payload
-- bytes saved by compression, header bytes saved by batching and fewer TCP segments (or QUIC
-- packets), and ACK
-- bytes saved by fewer acknowledgements, per protocol and message type — the same numbers as
-- `p2pc analyze` on the same capture.
--
-- Below the rows, an ALL row sums them: every byte count summed, its savings and its % computed
-- from those sums (the analyzer's totals row, never an average of the rows' %).  The rows come
-- sorted by total bytes saved, the largest first (what compression bought, and where); the
-- window's "Sort: ..." buttons choose another column (numbers largest first, "name" by protocol
-- and message type).  Rows equal in that column as shown go by protocol and message type; ALL
-- stays last.
--
-- In tshark the same table prints at the end with
--   tshark -q -r CAPTURE -X lua_script:p2pc_savings.lua -X lua_script1:print [-X lua_script1:sort=KEY]
-- KEY one of saved (the default), pct, payload, header, ack, msgs, wire, name.
--
-- SPDX-License-Identifier: GPL-2.0-or-later

local args = { ... }
local printing = args[1] == "print"
if not gui_enabled() and not printing then return end
local sort_arg
for _, a in ipairs(args) do sort_arg = a:match("^sort=(.*)$") or sort_arg end

-- The model sits beside this script (Wireshark runs each Lua plugin in an environment of its own).
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or ""
local p2pc_model = dofile(here .. "p2pc_model.lua")

local f = {}
for _, name in ipairs({ "p2pc.proto", "p2pc.msg_type", "p2pc.wire_len", "p2pc.header_len",
                        "p2pc.payload_len", "p2pc.raw_len", "p2pc.batch_count", "tcp.stream",
                        "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "tcp.srcport", "tcp.dstport",
                        "tcp.len", "frame.len", "tcp.flags.syn", "tcp.flags.fin", "tcp.flags.reset",
                        "tcp.flags.ack", "udp.srcport", "udp.dstport", "quic.stream_data",
                        "quic.frame_type" }) do
    f[name] = Field.new(name)
end

local function value(name)
    local fi = f[name]()
    return fi and fi.value
end

local function num(fi)
    return tonumber(tostring(fi.value))
end

-- Integer sums per connection direction and message type, and TCP counts per direction, as
-- the analyzer keeps them (analyzer/p2pc/model.py: Sums, and the records' T lines).
local function new_accumulator()
    local acc = { dirs = {}, tcp = {} }

    local function tcp_counts(key)
        local t = acc.tcp[key]
        if not t then
            t = { data_segs = 0, data_bytes = 0, data_frame_bytes = 0, pure_acks = 0,
                  pure_ack_bytes = 0, max_seg = 0 }
            acc.tcp[key] = t
        end
        return t
    end

    -- A QUIC datagram as the plugin counts it (docs/savings-model.md): its STREAM data bytes, and
    -- whether it holds only ACK and PADDING frames.
    local function quic_counts()
        local seglen, ack, other = 0, false, false
        for _, fi in ipairs({ f["quic.stream_data"]() }) do seglen = seglen + fi.len end
        for _, fi in ipairs({ f["quic.frame_type"]() }) do
            local ft = tonumber(tostring(fi.value))
            if ft == 2 or ft == 3 then ack = true elseif ft ~= 0 then other = true end
        end
        return seglen, seglen == 0 and ack and not other
    end

    function acc.packet()
        local stream = value("tcp.stream")
        local sport, dport, seglen, pure_ack
        if stream ~= nil then
            sport, dport, seglen = value("tcp.srcport"), value("tcp.dstport"), value("tcp.len") or 0
            pure_ack = not value("tcp.flags.syn") and not value("tcp.flags.fin") and
                       not value("tcp.flags.reset") and value("tcp.flags.ack")
        elseif value("udp.srcport") ~= nil then
            -- A QUIC direction: stream -1, as its records and its T line have.
            stream, sport, dport = -1, value("udp.srcport"), value("udp.dstport")
            seglen, pure_ack = quic_counts()
        else
            return
        end
        local src = tostring(value("ip.src") or value("ipv6.src"))
        local dst = tostring(value("ip.dst") or value("ipv6.dst"))
        local key = stream .. "\t" .. src .. "\t" .. sport
        local t = tcp_counts(key)
        t.reverse = stream .. "\t" .. dst .. "\t" .. dport
        local framelen = value("frame.len")
        if seglen > 0 then
            t.data_segs = t.data_segs + 1
            t.data_bytes = t.data_bytes + seglen
            t.data_frame_bytes = t.data_frame_bytes + framelen
            if seglen > t.max_seg then t.max_seg = seglen end
        elseif pure_ack then
            t.pure_acks = t.pure_acks + 1
            t.pure_ack_bytes = t.pure_ack_bytes + framelen
        end

        -- One frame can carry several messages: the record fields come in record order.
        local protos, types, wires = { f["p2pc.proto"]() }, { f["p2pc.msg_type"]() }, { f["p2pc.wire_len"]() }
        local payloads, raws, batches = { f["p2pc.payload_len"]() }, { f["p2pc.raw_len"]() }, { f["p2pc.batch_count"]() }
        if #protos == 0 then return end
        local types_here = acc.dirs[key]
        if not types_here then
            types_here = {}
            acc.dirs[key] = types_here
        end
        for i = 1, #protos do
            local proto, mtype = tostring(protos[i].value), tostring(types[i].value)
            local k = proto .. "\t" .. mtype
            local s = types_here[k]
            if not s then
                s = { proto = proto, mtype = mtype, messages = 0, wire = 0, payload = 0, raw = 0,
                      batched_items = 0, batched_headers = 0 }
                types_here[k] = s
            end
            local batch = num(batches[i])
            local hdr = p2pc_model.PROTOCOL_HEADER[proto] or 0
            s.messages = s.messages + 1
            s.wire = s.wire + num(wires[i])
            s.payload = s.payload + num(payloads[i])
            s.raw = s.raw + num(raws[i])
            s.batched_items = s.batched_items + batch - 1
            s.batched_headers = s.batched_headers + (batch - 1) * hdr
        end
    end

    -- Rows per protocol and message type, sorted, with the model applied per direction.
    function acc.rows()
        local rows, keys = {}, {}
        for dir, types_here in pairs(acc.dirs) do
            local t = acc.tcp[dir]
            local params = p2pc_model.link_params(t, t and acc.tcp[t.reverse])
            for k, s in pairs(types_here) do
                local r = rows[k]
                if not r then
                    r = { proto = s.proto, mtype = s.mtype, messages = 0, wire = 0, payload = 0,
                          raw = 0, header = 0, ack = 0 }
                    rows[k] = r
                    keys[#keys + 1] = k
                end
                local p2p, tcp, ack = p2pc_model.direction_savings(s, params, "capture")
                r.messages = r.messages + s.messages
                r.wire = r.wire + s.wire
                r.payload = r.payload + s.payload
                r.raw = r.raw + s.raw
                r.header = r.header + p2p + tcp
                r.ack = r.ack + ack
            end
        end
        local out = {}
        for _, k in ipairs(keys) do out[#out + 1] = rows[k] end
        return out
    end

    function acc.reset()
        acc.dirs, acc.tcp = {}, {}
    end

    return acc
end

local COLUMNS = { "proto", "message type", "msgs", "wire B", "payload saved", "header saved",
                  "ACK saved", "total saved", "total %" }

-- A row's savings: payload (exact), and the total and its % of what the bytes would have been
-- uncompressed, from the row's own sums (unrounded, as the analyzer's Row has them).
local function payload_saved(r) return r.raw - r.payload end
local function total_saved(r) return payload_saved(r) + r.header + r.ack end
local function total_pct(r)
    local whole = r.wire + total_saved(r)
    return whole ~= 0 and 100 * total_saved(r) / whole or 0
end

-- The ALL row: the rows' sums added up, its savings then computed from those sums like any row's
-- (analyzer/p2pc/model.py: totals()), so its % weighs each row by its bytes.
local function all_row(rows)
    local a = { proto = "ALL", mtype = "ALL", messages = 0, wire = 0, payload = 0, raw = 0,
                header = 0, ack = 0 }
    for _, r in ipairs(rows) do
        for _, k in ipairs({ "messages", "wire", "payload", "raw", "header", "ack" }) do a[k] = a[k] + r[k] end
    end
    return a
end

-- A figure rounded as the analyzer rounds (half to even), and never "-0".
local function rounded(x)
    local c = string.format("%.0f", x)
    return c == "-0" and "0" or c
end

-- One row's cells, as shown.
local function cells(r)
    return { r.proto, r.mtype, string.format("%d", r.messages), string.format("%d", r.wire),
             string.format("%d", payload_saved(r)), rounded(r.header), rounded(r.ack),
             rounded(total_saved(r)), string.format("%.2f", total_pct(r)) }
end

-- The sort orders, the default first: a column of COLUMNS as shown, largest first; "name" by
-- protocol and message type.
local SORTS = {
    { key = "saved", label = "total saved", column = 8 },
    { key = "pct", label = "total %", column = 9 },
    { key = "payload", label = "payload saved", column = 5 },
    { key = "header", label = "header saved", column = 6 },
    { key = "ack", label = "ACK saved", column = 7 },
    { key = "msgs", label = "msgs", column = 3 },
    { key = "wire", label = "wire B", column = 4 },
    { key = "name", label = "proto and message type" },
}

local function find_sort(key)
    for _, s in ipairs(SORTS) do if s.key == key then return s end end
    local keys = {}
    for _, s in ipairs(SORTS) do keys[#keys + 1] = s.key end
    error("p2pc_savings.lua: sort=" .. tostring(key) .. " is not one of " .. table.concat(keys, ", "))
end

-- The rows' cells in the order `sort` gives (ties, as shown, by protocol and message type), the
-- ALL row's last.
local function sorted_cells(rows, sort)
    local out = {}
    for _, r in ipairs(rows) do out[#out + 1] = cells(r) end
    table.sort(out, function(a, b)
        if sort.column then
            local va, vb = tonumber(a[sort.column]), tonumber(b[sort.column])
            if va ~= vb then return va > vb end
        end
        if a[1] ~= b[1] then return a[1] < b[1] end
        return a[2] < b[2]
    end)
    out[#out + 1] = cells(all_row(rows))
    return out
end

if printing then
    local sort = find_sort(sort_arg or SORTS[1].key)
    local acc = new_accumulator()
    local tap = Listener.new("frame", "tcp || quic")
    function tap.packet() acc.packet() end
    function tap.draw()
        print("#" .. table.concat(COLUMNS, "\t"))
        for _, c in ipairs(sorted_cells(acc.rows(), sort)) do print(table.concat(c, "\t")) end
    end
    return
end

local LINE = "%-10s %-30s %6s %12s %14s %13s %10s %12s %8s\n"

local function open_window()
    local win = TextWindow.new("p2pc: savings by message type")
    local acc = new_accumulator()
    local tap = Listener.new("frame", "tcp || quic")
    local sort = SORTS[1]

    -- Drawn from the accumulated sums: a sort button redraws without reading the file again.
    local function render()
        win:clear()
        win:append(string.format(LINE, table.unpack(COLUMNS)))
        local rows = sorted_cells(acc.rows(), sort)
        for i, c in ipairs(rows) do
            if i == #rows then win:append(string.rep("-", 123) .. "\n") end
            win:append(string.format(LINE, table.unpack(c)))
        end
        win:append("\nSorted by " .. sort.label .. (sort.column and ", largest first" or "") ..
                   " (the Sort buttons choose); ALL sums every row, its % from the summed bytes.\n" ..
                   "The model: docs/savings-model.md (the same as p2pc analyze). By direction, the size\n" ..
                   "ranges and the HTML report: p2pc analyze <capture>\n")
    end

    for _, s in ipairs(SORTS) do
        win:add_button("Sort: " .. s.key, function()
            sort = s
            render()
        end)
    end

    function tap.packet() acc.packet() end
    function tap.draw() render() end
    function tap.reset() acc.reset() end

    win:set_atclose(function() tap:remove() end)
    retap_packets()
end

-- MENU_STAT_UNSORTED: Statistics, the group of the C "P2P Compression/Messages and Bytes" tree.
-- Wireshark 4.0's Qt GUI shows a MENU_STAT_GENERIC item in no menu, and lists a Lua item of this
-- group as one entry named by the whole path, "P2P Compression/Savings by message type" (only C
-- stats trees get submenus there), and so does 4.4; 4.6 (Qt 6) makes the path a real submenu,
-- Statistics > P2P Compression > Savings by message type.  make gui-check walks the menu to it.
register_menu("P2P Compression/Savings by message type", open_window, MENU_STAT_UNSORTED)
