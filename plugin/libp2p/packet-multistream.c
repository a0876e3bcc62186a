/* packet-multistream.c
 * multistream-select 1.0 (libp2p/specs connections; multiformats/multistream-select): each
 * message is uvarint(len including '\n') || UTF-8 text || '\n'.  The header
 * "/multistream/1.0.0", then a protocol proposal, echoed to accept or answered "na"; "ls" lists.
 * On a connection, the side that proposes is the dialer (engine.h, l2p_learn_role()); the
 * simultaneous-open extension's "select:", "initiator" and "responder" say so when both dial.
 *
 * This file owns the string dissector table "multistream.protocol" (the TCP entry point is
 * packet-libp2p-tcp.c): once a side has proposed or echoed a protocol ID and its next bytes
 * are not another multistream message (go-libp2p sends header, proposal and the first
 * application bytes in one write: "optimistic" or "lazy" negotiation), the rest of that
 * direction goes to the dissector registered for that ID -- the security layer
 * (/plaintext/2.0.0, /noise), the muxer (/yamux/1.0.0, /mplex/6.7.0), or, inside a muxed
 * stream, the application protocol (packet-eth2.c registers Ethereum's).  Map your own:
 *   - Decode As on the table: tshark -d 'multistream.protocol==/my/proto/1.0.0,eth2'
 *   - Lua: DissectorTable.get("multistream.protocol"):add("/my/proto/1.0.0", my_proto)
 *     (a Lua dissector receives the stream's bytes as they arrive).
 * (The preference multistream.protocol_map of before duplicated Decode As: it is obsolete.)
 * Protocols nobody registered go to "libp2p_app" (packet-libp2p-app.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/spec.h"
#include "libp2p/engine.h"

#include <epan/decode_as.h>
#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>

void proto_register_multistream(void);
void proto_reg_handoff_multistream(void);

#define MS_MAX_MSG 1024     /* go-multistream refuses longer messages */

static int proto_multistream = -1;
static int hf_ms_length = -1;
static int hf_ms_message = -1;
static int hf_ms_stream = -1;
static int hf_ms_selected = -1;
static gint ett_ms = -1;
static expert_field ei_ms_na = EI_INIT;

static dissector_handle_t ms_handle;

/* Per pipe: the protocol this side proposed or echoed and may switch to, and how many of its
 * proposals the other side has not answered yet (a proposal may follow another unanswered:
 * "/libp2p/simultaneous-connect" then the security protocol, in one write). */
typedef struct {
    const char *proposed;
    guint32 pending;
} ms_state_t;

/* The simultaneous-open extension (libp2p/specs connections/simopen.md): both sides propose
 * it, each sends "select:<random 64-bit integer>", the higher says "initiator" and acts as the
 * dialer from then on, the other "responder". */
#define MS_SIMOPEN "/libp2p/simultaneous-connect"
#define MS_SELECT "select:"

/* The messages that are no protocol ID ("/..."), with their newline. */
static const char *const ms_words[] = { "na\n", "ls\n", "initiator\n", "responder\n" };

/* Whether the n bytes at p[0, have) can be the message `word` (of `len` bytes, or a prefix
 * of it when `prefix`): 1 yes, 0 no, 2 cannot tell yet. */
static int
ms_word_at(const guint8 *p, guint have, guint64 n, const char *word, gboolean prefix)
{
    guint len = (guint)strlen(word);
    if (prefix ? n <= len : n != len)
        return 0;
    if (have < len)
        return memcmp(p, word, have) ? 0 : 2;
    return memcmp(p, word, len) ? 0 : 1;
}

/* 1: a multistream message starts at p; 0: it does not; 2: cannot tell yet. */
static int
looks_like_ms(const guint8 *p, guint avail)
{
    guint64 n;
    guint used;
    int r;
    if (avail == 0)
        return 2;
    if (!p2pc_uvarint(p, avail, &n, &used))
        return avail >= 3 ? 0 : 2;
    if (n < 2 || n > MS_MAX_MSG)
        return 0;
    if (avail == used)
        return 2;
    if (p[used] == '/')
        return 1;
    for (guint i = 0; i < G_N_ELEMENTS(ms_words); i++)
        if ((r = ms_word_at(p + used, avail - used, n, ms_words[i], FALSE)) != 0)
            return r;
    /* "select:" and up to 20 digits (a 64-bit integer in base 10) and the newline */
    return n <= strlen(MS_SELECT) + 21 ? ms_word_at(p + used, avail - used, n, MS_SELECT, TRUE) : 0;
}

static gint64
ms_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    ms_state_t *st = (ms_state_t *)pipe->state;
    int looks = looks_like_ms(p, avail);
    guint64 n;
    guint used;

    if (looks == 2)
        return 0;
    if (looks == 0) {
        if (st && st->proposed) {
            /* Not another negotiation message: the agreed protocol has begun. */
            l2p_handoff(pipe, st->proposed, NULL);
            return 0;
        }
        return -1;
    }
    p2pc_uvarint(p, avail, &n, &used);
    if (used + n > avail)
        return 0;
    if (p[used + n - 1] != '\n')
        return -1;
    return used + n;
}

/* The text of a complete message without its newline (in `scope`); NULL when the tvb does
 * not hold one.  *used and *n: the length prefix's size and value. */
static const char *
ms_text(tvbuff_t *tvb, wmem_allocator_t *scope, guint *used, guint64 *n)
{
    guint len = tvb_captured_length(tvb);
    *used = tvb_get_varint(tvb, 0, MIN(FT_VARINT_MAX_LEN, len), n, ENC_VARINT_PROTOBUF);
    if (!*used || *n == 0 || *n > len - *used)
        return NULL;
    return (const char *)tvb_get_string_enc(scope, tvb, *used,
        (gint)(tvb_get_uint8(tvb, *used + (guint)*n - 1) == '\n' ? *n - 1 : *n), ENC_UTF_8);
}

static proto_item *
draw_ms(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean in_stream, guint64 stream_id, const char **text_out)
{
    proto_item *ti = proto_tree_add_item(tree, proto_multistream, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_ms);
    guint used;
    guint64 n;
    const char *text = ms_text(tvb, pinfo->pool, &used, &n);
    if (text_out)
        *text_out = text;
    if (!text)
        return ti;
    p2pc_spec_varint(tvb, 0, used, pinfo, proto_tree_add_uint64(t, hf_ms_length, tvb, 0, used, n));
    proto_tree_add_string(t, hf_ms_message, tvb, used, (gint)n, text);
    if (in_stream)
        proto_item_set_generated(proto_tree_add_uint64(t, hf_ms_stream, tvb, 0, 0, stream_id));
    proto_item_append_text(ti, ": %s", text);
    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", text);
    if (!strcmp(text, "na"))
        expert_add_info(pinfo, ti, &ei_ms_na);
    return ti;
}

static void
ms_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    const char *text;
    proto_item *ti = draw_ms(tvb, pinfo, tree, pipe->muxer != NULL, pipe->stream_id, &text);

    p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_NEGOTIATION, "multistream", tvb_captured_length(tvb));
    if (!PINFO_FD_VISITED(pinfo) && text) {
        ms_state_t *st = (ms_state_t *)pipe->state;
        ms_state_t *other = pipe->peer ? (ms_state_t *)pipe->peer->state : NULL;
        /* Negotiation is no message of its own in the accounting: the muxer framing that
         * carried it goes to the stream's first application message. */
        pipe->overhead += pdu->overhead;
        pdu->overhead = 0;
        if (!st)
            pipe->state = st = wmem_new0(l2p_pipe_pool(pipe), ms_state_t);
        if (!strcmp(text, "na")) {
            /* The other side's oldest proposal is refused: it goes on with its next, or
             * proposes again. */
            if (other && other->pending && --other->pending == 0)
                other->proposed = NULL;
            /* A side that refuses has nothing of its own left to switch to (pending > 0 always
             * goes with a proposed protocol). */
            st->proposed = NULL;
            st->pending = 0;
        } else if (!strcmp(text, "initiator") || !strcmp(text, "responder") ||
                   g_str_has_prefix(text, MS_SELECT)) {
            /* Simultaneous open: what either side proposed before is void, and the side that
             * says "initiator" negotiates from now on as the dialer. */
            st->proposed = NULL;
            st->pending = 0;
            if (!pipe->muxer && text[0] != 's')
                l2p_learn_role(pipe, pinfo, text[0] == 'i', L2P_ROLE_SIMOPEN);
        } else if (text[0] == '/' && strcmp(text, L2P_MULTISTREAM_HEADER)) {
            if (other && other->pending && other->proposed && !strcmp(text, other->proposed)) {
                other->pending = 0;     /* the echo that accepts it */
            } else {
                /* A proposal.  On a connection, the side proposing while the other has
                 * nothing to answer is the dialer (its listener only answers); a listener's
                 * header may well reach the wire first. */
                if (!pipe->muxer && !(other && other->pending))
                    l2p_learn_role(pipe, pinfo, TRUE, L2P_ROLE_PROPOSAL);
                st->pending++;
            }
            st->proposed = wmem_strdup(l2p_pipe_pool(pipe), text);
        }
        pdu->info = st->proposed ? (void *)st->proposed : NULL;
        /* For Decode As: the protocol ID this frame negotiated. */
        if (st->proposed && !p_get_proto_data(wmem_file_scope(), pinfo, proto_multistream, L2P_KEY_NEGOTIATED))
            p_add_proto_data(wmem_file_scope(), pinfo, proto_multistream, L2P_KEY_NEGOTIATED, (void *)st->proposed);
    }
    /* Which dissector the proposal selects (shown on every proposal/echo). */
    if (pdu->info && text && !strcmp(text, (const char *)pdu->info)) {
        dissector_handle_t h = l2p_handle_for(text);
        proto_item *si = proto_tree_add_string(proto_item_get_subtree(ti), hf_ms_selected, tvb, 0, 0,
                                               h ? dissector_handle_get_protocol_short_name(h) : "?");
        proto_item_set_generated(si);
    }
}

static int
dissect_multistream(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    if (!pipe) {
        /* Called on its own (not through a libp2p connection): one message. */
        draw_ms(tvb, pinfo, tree, FALSE, 0, NULL);
        return tvb_captured_length(tvb);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, ms_len, ms_pdu);
    return tvb_captured_length(tvb);
}

/* Decode As on "multistream.protocol": the protocol ID negotiated in the selected frame. */
static void
ms_da_label(packet_info *pinfo, gchar *result)
{
    const char *p = (const char *)p_get_proto_data(wmem_file_scope(), pinfo, proto_multistream, L2P_KEY_NEGOTIATED);
    snprintf(result, MAX_DECODE_AS_PROMPT_LEN, "Protocol ID %s", p ? p : "(none in this frame)");
}

static gpointer
ms_da_value(packet_info *pinfo)
{
    return p_get_proto_data(wmem_file_scope(), pinfo, proto_multistream, L2P_KEY_NEGOTIATED);
}

void
proto_register_multistream(void)
{
    static hf_register_info hf[] = {
        { &hf_ms_length, { "Length", "multistream.length", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Length of the message, its newline included (uvarint)", HFILL } },
        { &hf_ms_message, { "Message", "multistream.message", FT_STRING, BASE_NONE, NULL, 0x0,
            "Protocol ID, header, na or ls", HFILL } },
        { &hf_ms_stream, { "Muxed stream", "multistream.stream", FT_UINT64, BASE_DEC, NULL, 0x0,
            "The muxed stream this negotiation runs on", HFILL } },
        { &hf_ms_selected, { "Dissector", "multistream.dissector", FT_STRING, BASE_NONE, NULL, 0x0,
            "The dissector multistream.protocol maps this protocol ID to", HFILL } },
    };
    static gint *ett[] = { &ett_ms };
    static ei_register_info ei[] = {
        { &ei_ms_na, { "multistream.na", PI_RESPONSE_CODE, PI_NOTE, "Protocol refused (na)", EXPFILL } },
    };
    module_t *module;
    expert_module_t *expert;

    proto_multistream = proto_register_protocol("multistream-select 1.0", "multistream", "multistream");
    proto_register_field_array(proto_multistream, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_multistream);
    expert_register_field_array(expert, ei, array_length(ei));
    l2p_register_engine(proto_multistream);

    /* Decode As on "multistream.protocol" names a protocol ID's dissector (and is saved in the
     * profile's decode_as_entries); the "ID=dissector,..." string that duplicated it is gone. */
    module = prefs_register_protocol(proto_multistream, NULL);
    prefs_register_obsolete_preference(module, "protocol_map");

    register_dissector_table("multistream.protocol", "multistream-select protocol ID", proto_multistream,
                             FT_STRING, P2PC_STRING_CASE_SENSITIVE);
    ms_handle = register_dissector("multistream", dissect_multistream, proto_multistream);
    {
        static build_valid_func da_values[] = { ms_da_value };
        static decode_as_value_t da_value[] = { { ms_da_label, 1, da_values } };
        static decode_as_t da = { "multistream", "multistream.protocol", 1, 0, da_value, NULL, NULL,
                                  decode_as_default_populate_list, decode_as_default_reset,
                                  decode_as_default_change, NULL };
        register_decode_as(&da);
    }
}

void
proto_reg_handoff_multistream(void)
{
    dissector_add_for_decode_as("multistream.protocol", ms_handle);
}
