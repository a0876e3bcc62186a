-- Loads lua/p2pc_model.lua and prints its direction_savings() of every golden vector in the TSV
-- file (tshark -X lua_script:model_vectors.lua -X lua_script1:MODEL.lua -X lua_script1:VECTORS.tsv),
-- one line per vector: name, P2P header saved, TCP header saved, ACK saved (%.9f), for
-- tests/test_model.py to hold against the expected columns.
local model, path = ...
local p2pc_model = dofile(model)
local header
for line in io.lines(path) do
    if line:sub(1, 1) ~= "#" then
        local cols = {}
        for c in (line .. "\t"):gmatch("([^\t]*)\t") do cols[#cols + 1] = c end
        if not header then
            header = {}
            for i, name in ipairs(cols) do header[name] = i end
        else
            local function n(name) return tonumber(cols[header[name]]) end
            local s = { raw = n("raw"), payload = n("payload"), batched_items = n("batched_items"),
                        batched_headers = n("batched_items") * n("header_per_item") }
            local params = nil
            if n("mss") > 0 then
                params = { mss = n("mss"), seg_overhead = n("seg_overhead"), ack_ratio = n("ack_ratio"),
                           ack_bytes = n("ack_bytes") }
            end
            local p2p, tcp, ack = p2pc_model.direction_savings(s, params, cols[header["model"]])
            print(string.format("V\t%s\t%.9f\t%.9f\t%.9f", cols[header["name"]], p2p, tcp, ack))
        end
    end
end
