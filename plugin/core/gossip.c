/* gossip.c
 * A gossipsub RPC's bytes by part, kind and topic, for the "p2pc_gossip" tap (gossip.h).
 *
 *   RPC            uvarint(len) || RPC                                  -> rpc_framing (the prefix)
 *   RPC.subscriptions = 1  SubOpts { subscribe = 1; topicid = 2 }      -> subscribe / unsubscribe
 *   RPC.publish = 2        Message { from = 1; seqno = 3; topic = 4 }  -> publish, one part a
 *                          Message with its message ID
 *   RPC.control = 3        ControlMessage (its tag and length)         -> rpc_framing
 *     ihave = 1 { topicID = 1; messageIDs = 2 }  iwant = 2 { messageIDs = 1 }
 *     graft = 3 { topicID = 1 }  prune = 4 { topicID = 1; ... }  idontwant = 5 { messageIDs = 1 }
 *                                                 (ihave, iwant, idontwant: their IDs, as publish's)
 *     extensions = 6                                                     -> extensions
 *   RPC.partial = 10       PartialMessagesExtension { topicID = 1 }    -> partial
 *   RPC.testExtension = 6492434                                          -> extensions
 *   any other field, the bytes of a field that does not parse, an RPC the stream cut short -> other
 *
 * Each part's bytes are its field's whole encoding (tag, length, body), so that an RPC's parts
 * add up to its bytes on the stream.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/gossip.h"
#include "core/protobuf.h"

#include <wsutil/to_str.h>

static int gossip_tap = -1;

/* The last string field numbered `want` of the message tvb[start, start + len) (protobuf: the
 * last one wins), or "". */
static const char *
last_string(tvbuff_t *tvb, packet_info *pinfo, int start, int len, guint64 want)
{
    int off = start, at = -1, at_len = 0;
    p2pc_pb_field_t f;
    while (p2pc_pb_next(tvb, &off, start + len, &f))
        if (f.number == want && f.wire_type == 2) {
            at = f.start;
            at_len = f.len;
        }
    return at < 0 ? "" : (const char *)tvb_get_string_enc(pinfo->pool, tvb, at, at_len, ENC_UTF_8);
}

/* One RPC's rows, by kind and topic (publish: by Message), in the order first seen. */
struct p2pc_gossip_rpc {
    wmem_map_t *rows;           /* "kind\ttopic" -> p2pc_gossip_part_t */
    wmem_array_t *order;        /* p2pc_gossip_part_t * */
    wmem_map_t *messages;       /* msg_start -> its publish p2pc_gossip_part_t */
    packet_info *pinfo;
};
typedef struct p2pc_gossip_rpc rpc_parts_t;

static p2pc_gossip_part_t *
add(rpc_parts_t *r, const char *kind, const char *topic, guint32 count, guint64 ids, guint64 bytes)
{
    char *key = wmem_strdup_printf(r->pinfo->pool, "%s\t%s", kind, topic);
    p2pc_gossip_part_t *p = (p2pc_gossip_part_t *)wmem_map_lookup(r->rows, key);
    if (!p) {
        p = wmem_new0(r->pinfo->pool, p2pc_gossip_part_t);
        p->kind = kind;
        p->topic = topic;
        p->message_id = "";
        wmem_map_insert(r->rows, key, p);
        wmem_array_append_one(r->order, p);
    }
    p->count += count;
    p->message_ids += ids;
    p->bytes += bytes;
    return p;
}

/* `len` bytes at p in hex, lower case (pinfo->pool). */
static const char *
hex_of(packet_info *pinfo, const guint8 *p, guint len)
{
    char *out = (char *)wmem_alloc(pinfo->pool, (gsize)len * 2 + 1);
    *(len ? bytes_to_hexstr(out, p, len) : out) = '\0';
    return out;
}

/* An IHAVE, IWANT or IDONTWANT entry tvb[start, start + len): its messageIDs (field `number`)
 * in hex, appended to the part's IDs (its message_id when queued), comma-separated. */
static void
add_ids(rpc_parts_t *r, p2pc_gossip_part_t *p, tvbuff_t *tvb, int start, int len, guint64 number)
{
    int off = start;
    p2pc_pb_field_t f;
    if (!p->ids)
        p->ids = wmem_strbuf_new(r->pinfo->pool, "");
    while (p2pc_pb_next(tvb, &off, start + len, &f))
        if (f.number == number && f.wire_type == 2) {
            if (wmem_strbuf_get_len(p->ids))
                wmem_strbuf_append_c(p->ids, ',');
            wmem_strbuf_append(p->ids, hex_of(r->pinfo, tvb_get_ptr(tvb, f.start, f.len), (guint)f.len));
        }
}

/* A published Message, a part of its own: go-libp2p's default message ID (DefaultMsgIdFn:
 * from || seqno), until the dissector gives its topic's (p2pc_gossip_message_id()). */
static void
add_message(rpc_parts_t *r, tvbuff_t *tvb, int start, int len, guint64 bytes)
{
    int off = start, from = -1, from_len = 0, seqno = -1, seqno_len = 0;
    p2pc_pb_field_t f;
    p2pc_gossip_part_t *p = wmem_new0(r->pinfo->pool, p2pc_gossip_part_t);

    while (p2pc_pb_next(tvb, &off, start + len, &f)) {
        if (f.wire_type == 2 && f.number == 1) {         /* Message.from */
            from = f.start;
            from_len = f.len;
        } else if (f.wire_type == 2 && f.number == 3) {  /* Message.seqno */
            seqno = f.start;
            seqno_len = f.len;
        }
    }
    p->kind = "publish";
    p->topic = last_string(tvb, r->pinfo, start, len, 4);
    p->count = 1;
    p->bytes = bytes;
    p->msg_start = start;
    p->message_id = wmem_strconcat(r->pinfo->pool,
        from < 0 ? "" : hex_of(r->pinfo, tvb_get_ptr(tvb, from, from_len), from_len),
        seqno < 0 ? "" : hex_of(r->pinfo, tvb_get_ptr(tvb, seqno, seqno_len), seqno_len), NULL);
    wmem_array_append_one(r->order, p);
    wmem_map_insert(r->messages, GINT_TO_POINTER(start), p);
}

/* SubOpts: subscribe (the last subscribe field true) or unsubscribe (false, or none: proto2's
 * default, as go-libp2p-pubsub's GetSubscribe() reads it). */
static const char *
sub_kind(tvbuff_t *tvb, int start, int len)
{
    int off = start;
    gboolean subscribe = FALSE;
    p2pc_pb_field_t f;
    while (p2pc_pb_next(tvb, &off, start + len, &f))
        if (f.number == 1 && f.wire_type == 0)
            subscribe = f.value != 0;
    return subscribe ? "subscribe" : "unsubscribe";
}

/* The next field of tvb[*off, end) and its whole encoding's bytes; FALSE at the end, after
 * giving the bytes that do not parse (if any) to "other". */
static gboolean
next_part(rpc_parts_t *r, tvbuff_t *tvb, int *off, int end, p2pc_pb_field_t *f, guint64 *bytes)
{
    int at = *off;
    if (!p2pc_pb_next(tvb, off, end, f)) {
        if (at < end)
            add(r, "other", "", 1, 0, (guint64)(end - at));
        return FALSE;
    }
    *bytes = (guint64)(*off - at);
    return TRUE;
}

/* The entries of a ControlMessage tvb[start, start + len). */
static void
control_parts(rpc_parts_t *r, tvbuff_t *tvb, int start, int len)
{
    int off = start, end = start + len;
    guint64 bytes;
    p2pc_pb_field_t f;

    while (next_part(r, tvb, &off, end, &f, &bytes)) {
        switch (f.wire_type == 2 ? f.number : 0) {
        case 1:
            add_ids(r, add(r, "ihave", last_string(tvb, r->pinfo, f.start, f.len, 1), 1,
                           p2pc_pb_count(tvb, f.start, f.len, 2, 2), bytes), tvb, f.start, f.len, 2);
            break;
        case 2:
            add_ids(r, add(r, "iwant", "", 1, p2pc_pb_count(tvb, f.start, f.len, 1, 2), bytes), tvb, f.start, f.len, 1);
            break;
        case 3:
            add(r, "graft", last_string(tvb, r->pinfo, f.start, f.len, 1), 1, 0, bytes);
            break;
        case 4:
            add(r, "prune", last_string(tvb, r->pinfo, f.start, f.len, 1), 1, 0, bytes);
            break;
        case 5:
            add_ids(r, add(r, "idontwant", "", 1, p2pc_pb_count(tvb, f.start, f.len, 1, 2), bytes),
                    tvb, f.start, f.len, 1);
            break;
        case 6:
            add(r, "extensions", "", 1, 0, bytes);
            break;
        default:
            add(r, "other", "", 1, 0, bytes);
        }
    }
}

static void
rpc_parts(rpc_parts_t *r, tvbuff_t *tvb, int len)
{
    int off, end;
    guint used;
    guint64 rlen, bytes;
    p2pc_pb_field_t f;

    used = tvb_get_varint(tvb, 0, MIN(FT_VARINT_MAX_LEN, len), &rlen, ENC_VARINT_PROTOBUF);
    if (!used || rlen > (guint64)(len - (int)used)) {
        add(r, "other", "", 1, 0, (guint64)len);      /* cut short, or no RPC */
        return;
    }
    add(r, "rpc_framing", "", 1, 0, used);
    off = (int)used;
    end = (int)used + (int)rlen;
    if (end < len)
        add(r, "other", "", 1, 0, (guint64)(len - end));
    while (next_part(r, tvb, &off, end, &f, &bytes)) {
        switch (f.wire_type == 2 ? f.number : 0) {
        case 1:
            add(r, sub_kind(tvb, f.start, f.len), last_string(tvb, r->pinfo, f.start, f.len, 2), 1, 0, bytes);
            break;
        case 2:
            add_message(r, tvb, f.start, f.len, bytes);
            break;
        case 3:
            /* The ControlMessage's own tag and length frame its entries. */
            add(r, "rpc_framing", "", 0, 0, bytes - (guint64)f.len);
            control_parts(r, tvb, f.start, f.len);
            break;
        case GS_EXT_PARTIAL:
            add(r, "partial", last_string(tvb, r->pinfo, f.start, f.len, 1), 1, 0, bytes);
            break;
        case GS_EXT_TEST:
            add(r, "extensions", "", 1, 0, bytes);
            break;
        default:
            add(r, "other", "", 1, 0, bytes);
        }
    }
}

p2pc_gossip_rpc_t *
p2pc_gossip_rpc(tvbuff_t *tvb, int len, packet_info *pinfo)
{
    rpc_parts_t *r = wmem_new0(pinfo->pool, rpc_parts_t);
    r->rows = wmem_map_new(pinfo->pool, g_str_hash, g_str_equal);
    r->order = wmem_array_new(pinfo->pool, sizeof(p2pc_gossip_part_t *));
    r->messages = wmem_map_new(pinfo->pool, g_direct_hash, g_direct_equal);
    r->pinfo = pinfo;
    if (len > 0)
        rpc_parts(r, tvb, len);
    return r;
}

void
p2pc_gossip_message_id(p2pc_gossip_rpc_t *r, int msg_start, const guint8 *id, guint id_len)
{
    p2pc_gossip_part_t *p = (p2pc_gossip_part_t *)wmem_map_lookup(r->messages, GINT_TO_POINTER(msg_start));
    if (p)
        p->message_id = hex_of(r->pinfo, id, id_len);
}

void
p2pc_gossip_queue(p2pc_gossip_rpc_t *r)
{
    for (guint i = 0; i < wmem_array_get_count(r->order); i++) {
        p2pc_gossip_part_t *p = *(p2pc_gossip_part_t **)wmem_array_index(r->order, i);
        if (p->ids)
            p->message_id = wmem_strbuf_get_str(p->ids);
        p2pc_where_of(r->pinfo, &p->at);
        p2pc_batch_queue(gossip_tap, P2PC_KEY_BATCH_GOSSIP, r->pinfo, p);
    }
}

void
p2pc_gossip_register(void)
{
    gossip_tap = register_tap("p2pc_gossip");
}
