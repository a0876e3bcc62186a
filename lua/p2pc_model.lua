-- p2pc_model.lua
-- The savings model of docs/savings-model.md for the Lua parts (the Statistics window), the same
-- function as analyzer/p2pc/model.py's direction_savings(): both are held to the golden vectors
-- in docs/savings-model-vectors.tsv by tests/test_model.py.  A module: load it with
--   local p2pc_model = dofile(path .. "p2pc_model.lua")
--
-- SPDX-License-Identifier: GPL-2.0-or-later

local p2pc_model = {}

-- The BIP draft's estimate of one TCP ACK (bytes) saved per batched message (--model bip).
p2pc_model.BIP_ACK_BYTES = 52

-- Per-message P2P header bytes that batching avoids for each item merged into a batch.
p2pc_model.PROTOCOL_HEADER = { bitcoin = 24, fisco = 16, eth2 = 0, libp2p = 0 }

-- Link parameters of one connection direction from its TCP counts and its reverse's
-- (the fields of -z p2pc,records' T lines); nil when the direction carried no data.
function p2pc_model.link_params(t, rev)
    if not t or t.data_segs == 0 or t.max_seg == 0 then return nil end
    local ack_ratio, ack_bytes = 0, 0
    if rev then
        ack_ratio = rev.pure_acks / t.data_segs
        if rev.pure_acks > 0 then ack_bytes = rev.pure_ack_bytes / rev.pure_acks end
    end
    return { mss = t.max_seg, seg_overhead = (t.data_frame_bytes - t.data_bytes) / t.data_segs,
             ack_ratio = ack_ratio, ack_bytes = ack_bytes }
end

-- What one direction's messages of one type saved besides their payload:
-- P2P header saved, TCP header saved, ACK saved.  s: raw, payload, batched_items,
-- batched_headers; params: link_params() or nil; model: "capture" (default) or "bip".
function p2pc_model.direction_savings(s, params, model)
    if model == "bip" then
        return s.batched_headers, 0, s.batched_items * p2pc_model.BIP_ACK_BYTES
    end
    local delta = (s.raw - s.payload) + s.batched_headers
    if not params or delta == 0 then
        return s.batched_headers, 0, 0
    end
    local segs = delta / params.mss
    return s.batched_headers, segs * params.seg_overhead, segs * params.ack_ratio * params.ack_bytes
end

return p2pc_model
