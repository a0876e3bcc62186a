-- p2pc.lua
-- p2pc for Lua dissectors (docs/lua-api.md): the plugin's bounded decompressors, its stateful
-- stream decoders and the common p2pc record, on every supported Wireshark (Lua 5.2 and 5.4).
--
--   local p2pc = require("p2pc")
--   local r = p2pc.decompress("snappy", buf(16), pinfo, tree, { payload = function(raw, pinfo, tree) ... end })
--   p2pc.record(buf(0, 16 + len), pinfo, tree, { proto = "mine", msg_type = "block", codec = "snappy",
--               header_len = 16, payload_len = len, raw_len = r.raw_len })
--
-- The work is done by the C plugin (plugin/core/lua-bridge.c): this module only passes
-- arguments through pinfo.private and calls its dissectors.  Installed with the other lua/*.lua
-- files it is also loaded as a plugin: then it registers its one callback protocol and loads the
-- scripts named in $P2PC_LUA, and nothing else.
--
-- SPDX-License-Identifier: GPL-2.0-or-later

if package.loaded["p2pc"] then return package.loaded["p2pc"] end

local p2pc = {}
package.loaded["p2pc"] = p2pc

-- The codecs, as p2pc_codec_name() spells them (the "p2pc.decompress.<codec>" dissectors).
p2pc.CODECS = { "lzo1x", "zlib", "deflate", "gzip", "snappy", "snappy-framed", "brotli", "zstd",
                "gzip-stream", "deflate-stream", "brotli-stream" }
local STREAM = { ["gzip-stream"] = true, ["deflate-stream"] = true, ["brotli-stream"] = true }

-- An integer as the C side parses it (Lua 5.4 would print a float as "1.0").
local function int(v, what)
    if type(v) ~= "number" or v < 0 or v ~= v or v == math.huge then
        error("p2pc: " .. what .. " must be a non-negative number, not " .. tostring(v), 3)
    end
    return string.format("%d", math.floor(v))
end

local function as_tvb(data)
    -- A TvbRange becomes the Tvb of its bytes (no new tab); a Tvb is used as it is.
    if typeof(data) == "TvbRange" then return data:tvb() end
    return data
end

local handles = {}
local function handle(name)
    local h = handles[name]
    if not h then
        h = Dissector.get(name)
        handles[name] = h
    end
    return h
end

-- Payload callbacks in progress: decompress() pushes one, the C side calls the callback protocol
-- below through the "p2pc.payload" table, which runs the newest.  A stack, so that a callback
-- may itself decompress.
local callbacks = {}
local CALLBACK_KEY = "p2pc.lua.callback"

local callback_proto = Proto("p2pc_lua_payload", "p2pc Lua payload callback")
function callback_proto.dissector(tvb, pinfo, tree)
    local cb = callbacks[#callbacks]
    if cb then return cb(tvb, pinfo, tree) end
    return 0
end
-- An older p2pc.so has no Lua bridge: loading stays silent, and calls say what is wrong.
local bridge_ok = pcall(function() DissectorTable.get("p2pc.payload"):add(CALLBACK_KEY, callback_proto) end)
local function need_bridge()
    if not bridge_ok then
        error("p2pc: the loaded p2pc.so has no Lua bridge (p2pc.payload): install this version's plugin", 3)
    end
end

-- Decompress `data` (Tvb or TvbRange) with `codec`.  opts (all optional):
--   bound   output bound in bytes (the p2pc.max_decompressed_mib preference caps it too)
--   tab     name of the data source tab (default "Decompressed <codec>")
--   stream  key of the decoder within this conversation and direction (stream codecs)
--   payload function(tvb, pinfo, tree) given the decompressed Tvb, or the name a protocol was
--           added under in the "p2pc.payload" dissector table
-- Returns { ok, status, raw_len, detail, output }: ok is true when output was produced (status
-- "ok", or a checksum/length mismatch with the output still given); output numbers it for
-- record()'s raw_output.  Failures are expert items too.
function p2pc.decompress(codec, data, pinfo, tree, opts)
    need_bridge()
    opts = opts or {}
    local priv = pinfo.private
    priv["p2pc.dc.codec"] = tostring(codec)
    if opts.bound ~= nil then priv["p2pc.dc.bound"] = int(opts.bound, "bound") end
    if opts.tab ~= nil then priv["p2pc.dc.tab"] = tostring(opts.tab) end
    if opts.stream ~= nil then priv["p2pc.dc.stream"] = tostring(opts.stream) end
    local cb = opts.payload
    if type(cb) == "function" then
        priv["p2pc.dc.payload"] = CALLBACK_KEY
    elseif cb ~= nil then
        priv["p2pc.dc.payload"] = tostring(cb)
        cb = nil
    end
    if cb then callbacks[#callbacks + 1] = cb end
    local ok, err = pcall(function() handle("p2pc.decompress"):call(as_tvb(data), pinfo, tree) end)
    if cb then callbacks[#callbacks] = nil end
    if not ok then error(err, 2) end
    local status = pinfo.private["p2pc.dc.status"]
    local raw_len = tonumber(pinfo.private["p2pc.dc.raw_len"])
    return { ok = raw_len ~= nil, status = status, raw_len = raw_len, detail = pinfo.private["p2pc.dc.detail"],
             output = tonumber(pinfo.private["p2pc.dc.output"]) }
end

-- True for the codecs that keep one decoder per conversation and direction.
function p2pc.is_stream(codec)
    return STREAM[codec] == true
end

-- Add the p2pc record of one message, its tree item over `data` (Tvb or TvbRange: the message's
-- bytes).  fields: proto, msg_type (required); codec ("none"), wire_len (data's length),
-- header_len (0), payload_len (wire_len - header_len), raw_len (payload_len), batch_count (1),
-- raw_output (a decompress() result's output: the payload -z p2pc,payloads prints; an
-- uncompressed message's is its bytes after the header).
-- Returns true when the record was added; an incomplete or inconsistent one is an expert item
-- instead, and is not counted.
local RECORD_INTS = { "wire_len", "header_len", "payload_len", "raw_len", "batch_count", "raw_output" }
function p2pc.record(data, pinfo, tree, fields)
    need_bridge()
    local priv = pinfo.private
    for _, k in ipairs({ "proto", "msg_type", "codec" }) do
        if fields[k] ~= nil then priv["p2pc.record." .. k] = tostring(fields[k]) end
    end
    for _, k in ipairs(RECORD_INTS) do
        if fields[k] ~= nil then priv["p2pc.record." .. k] = int(fields[k], k) end
    end
    handle("p2pc.record"):call(as_tvb(data), pinfo, tree)
    return pinfo.private["p2pc.record.status"] == "ok"
end

-- $P2PC_LUA: more Lua dissectors to load (files, ':'-separated), for runs whose plugin folders
-- are not the user's own, e.g. `p2pc analyze` as root (it builds a private HOME).
local function load_env_scripts()
    local list = os.getenv("P2PC_LUA")
    if not list or list == "" then return end
    for path in string.gmatch(list, "[^:]+") do
        local ok, err = pcall(dofile, path)
        if not ok then
            local report = report_failure or print
            report("p2pc: P2PC_LUA: " .. tostring(err))
        end
    end
end
load_env_scripts()

return p2pc
