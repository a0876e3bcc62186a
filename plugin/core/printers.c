/* printers.c
 * The exact dumps of the "p2pc" tap that the analyzer reads (docs/tap-format.md):
 *   tshark -q -z p2pc,records[,FILTER]   one line per message, one per peer ID a handshake
 *                                        states (the "p2pc_peer" tap), per failed check (the
 *                                        "p2pc_spec" tap) and per gossipsub RPC part (the
 *                                        "p2pc_gossip" tap), per layer's own bytes (the
 *                                        "p2pc_budget" tap), then TCP segment/ACK
 *                                        counts per connection direction
 *   tshark -q -z p2pc,records,stream[,FILTER]   the same lines, each flushed as its packet is
 *                                        dissected (p2pc live): a direction's T line, its
 *                                        counts so far, after each of its frames; #RESET when
 *                                        tshark's session reset (-M) restarts frame numbers
 *                                        (a connection keeps its stream number and counts)
 *   tshark -q -z p2pc,payloads[,FILTER]  each record's uncompressed payload, in hex, with the
 *                                        record's frame and connection direction
 * Lines are tab-separated; every string field is escaped (escape_field()) so that no byte a
 * peer sent can split a line or a column.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/budget.h"
#include "core/conn.h"
#include "core/gossip.h"
#include "core/prefs.h"
#include "core/record.h"
#include "core/spec.h"
#include "core/taps.h"

#include <stdio.h>
#include <epan/stat_tap_ui.h>
#include <epan/to_str.h>
#include <wsutil/to_str.h>
#include <epan/dissectors/packet-tcp.h>

void register_tap_listener_p2pc_printers(void);

/* A string as one tab-separated column: backslash, tab, newline, carriage return and every
 * other byte outside printable ASCII become \\, \t, \n, \r and \xHH. */
static void
print_field(FILE *f, const char *s)
{
    for (const guint8 *p = (const guint8 *)s; *p; p++) {
        switch (*p) {
        case '\\': fputs("\\\\", f); break;
        case '\t': fputs("\\t", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        default:
            if (*p < 0x20 || *p >= 0x7f)
                fprintf(f, "\\x%02x", *p);
            else
                fputc(*p, f);
        }
    }
}

static void
print_ts(FILE *f, const nstime_t *ts)
{
    fprintf(f, "%" PRId64 ".%09d", (gint64)ts->secs, ts->nsecs);
}

/* ---- -z p2pc,records ---- */

/* One TCP connection direction. */
typedef struct {
    guint32 frames;
    guint64 bytes;
    guint32 data_segs;
    guint64 data_bytes;         /* TCP payload bytes */
    guint64 data_frame_bytes;   /* whole frames carrying payload */
    guint32 pure_acks;
    guint64 pure_ack_bytes;
    guint32 max_seg;
    guint32 ctl_frames;         /* SYN/FIN/RST without payload */
    guint64 ctl_bytes;
    gchar *src;
    gchar *dst;
    guint32 stream;
    guint32 srcport;
    guint32 dstport;
    nstime_t first_ts;
    nstime_t last_ts;
    gchar *key;                 /* its key in tcp_dirs_t.dirs (the table's) */
    struct stream_conn *conn;   /* stream mode: its TCP connection (NULL: QUIC) */
} tcp_dir_stats_t;

/* Stream mode: a TCP connection as the whole capture numbers it.  tshark's session reset (-M)
 * numbers tcp.stream anew, but the capture read in one session (p2pc analyze of live's -w
 * file) has one tcp.stream for each connection, and the savings model takes each connection
 * direction's segments and ACKs as a whole.  So the stream column is the connection's number in
 * the first session that saw it, and its counts go on over a reset.  Which earlier connection
 * a session's new tcp.stream continues is TCP's own rule (packet-tcp.c): the one on the same
 * endpoints, unless the frame that opens it is a SYN (without ACK) whose sequence number is
 * not the one that direction began with (a new connection reusing the ports). */
typedef struct stream_conn {
    guint32 number;             /* its stream column */
    guint32 session;            /* the last session (resets before it) that saw it */
    guint32 first_seq[2];       /* raw sequence number each way began with (0: the lower endpoint's) */
    gboolean seq_set[2];
    gboolean fin[2], rst;       /* it ended: a FIN each way, or a RST */
    gboolean forget;            /* the reset under way forgets it (stream_forget_ended()) */
    gchar *key;                 /* its key in tcp_dirs_t.conns (the table's) */
} stream_conn_t;

/* The "tcp" listener's own state (a listener is identified by its tapdata pointer, so it
 * cannot share the "p2pc" listener's). */
typedef struct {
    GHashTable *dirs;           /* "stream\tsrc\tport" -> tcp_dir_stats_t */
    GPtrArray *order;           /* tcp_dir_stats_t, in order of first appearance */
    gboolean stream;            /* p2pc,records,stream: print each line as it is known */
    guint32 last_frame;         /* stream mode: a lower frame number means a session reset */
    guint32 sessions;           /* stream mode: session resets so far */
    guint32 next_number;        /* stream mode: one past the highest stream column printed */
    GPtrArray *conn_list;       /* stream mode: every stream_conn_t kept (it owns them) */
    GHashTable *conns;          /* stream mode: endpoints -> the latest stream_conn_t on them */
    GHashTable *numbers;        /* stream mode: this session's tcp.stream -> stream_conn_t */
} tcp_dirs_t;

/* The "p2pc_peer" listener's own state (its own tapdata pointer, as for "tcp"). */
typedef struct {
    tcp_dirs_t *tcp;
} peers_tap_t;

/* The "p2pc_spec" listener's (the same), and the "p2pc_gossip" and "p2pc_budget" listeners'. */
typedef struct {
    tcp_dirs_t *tcp;
} spec_tap_t;

typedef struct {
    guint64 records;
    gboolean filtered;          /* a display filter chooses the records: no tails */
    gboolean ended;             /* the tails of the last session are printed */
    tcp_dirs_t tcp;
    peers_tap_t peers;
    spec_tap_t spec;
    spec_tap_t gossip;
    spec_tap_t budget;
} records_tap_t;

/* The stream-mode records tap, for its session's tails at a session reset. */
static records_tap_t *stream_tap;

static void print_tcp_dir(const tcp_dir_stats_t *d);

static void dir_stats_free(gpointer p);

static void
stream_conn_free(gpointer p)
{
    stream_conn_t *c = (stream_conn_t *)p;
    g_free(c->key);
    g_free(c);
}

/* The connections a reset keeps (stream mode): at most this many, the most recently seen. */
#define STREAM_CONNS_MAX 65536

static gint
stream_conn_newer_first(gconstpointer a, gconstpointer b)
{
    const stream_conn_t *x = *(const stream_conn_t * const *)a, *y = *(const stream_conn_t * const *)b;
    return x->session > y->session ? -1 : x->session < y->session;
}

/* Stream mode, at a session reset: the connections that no later frame can belong to are
 * forgotten with their directions' counts, so that days of capture keep memory bounded: those
 * that ended (a FIN each way, or a RST) or that a newer connection on their endpoints replaced,
 * before the session that just ended, which did not see them; and, past STREAM_CONNS_MAX, the
 * least recently seen.  A frame of one after that (a retransmission long after the close, a
 * connection idle for longer than that many others were active) counts as a new connection's. */
static void
stream_forget_ended(tcp_dirs_t *t)
{
    GPtrArray *order = g_ptr_array_new_with_free_func(dir_stats_free);
    GPtrArray *conns = g_ptr_array_new_with_free_func(stream_conn_free);

    g_ptr_array_sort(t->conn_list, stream_conn_newer_first);
    for (guint i = 0; i < t->conn_list->len; i++) {
        stream_conn_t *c = (stream_conn_t *)g_ptr_array_index(t->conn_list, i);
        gboolean idle = c->session + 1 < t->sessions;
        c->forget = i >= STREAM_CONNS_MAX
                    || (idle && (c->rst || (c->fin[0] && c->fin[1])
                                 || g_hash_table_lookup(t->conns, c->key) != c));
    }
    for (guint i = 0; i < t->order->len; i++) {
        tcp_dir_stats_t *d = (tcp_dir_stats_t *)g_ptr_array_index(t->order, i);
        if (d->conn && d->conn->forget) {
            g_hash_table_remove(t->dirs, d->key);
            dir_stats_free(d);
        } else {
            g_ptr_array_add(order, d);
        }
    }
    for (guint i = 0; i < t->conn_list->len; i++) {
        stream_conn_t *c = (stream_conn_t *)g_ptr_array_index(t->conn_list, i);
        if (c->forget) {
            if (g_hash_table_lookup(t->conns, c->key) == c)
                g_hash_table_remove(t->conns, c->key);
            stream_conn_free(c);
        } else {
            g_ptr_array_add(conns, c);
        }
    }
    /* The elements moved: the old arrays go without their free functions running. */
    g_free(g_ptr_array_free(t->order, FALSE));
    g_free(g_ptr_array_free(t->conn_list, FALSE));
    t->order = order;
    t->conn_list = conns;
}

/* Stream mode (else nothing): tshark's session reset (-M) numbers frames from 1 again and
 * restarts tcp.stream: #RESET tells the reader, and this session's tcp.stream numbers are mapped
 * afresh (stream_conn()); the counts go on. */
static void
stream_check_reset(tcp_dirs_t *t, guint32 frame)
{
    if (!t->stream)
        return;
    if (frame < t->last_frame) {
        printf("#RESET\tframe=%u\n", t->last_frame);
        t->sessions++;
        g_hash_table_remove_all(t->numbers);
        stream_forget_ended(t);
    }
    t->last_frame = frame;
}

/* The stream column of this session's tcp.stream `stream` between src:sport and dst:dport
 * (stream_conn_t); `th` is the frame's TCP header when the caller is TCP's tap, which notes
 * how the connection began and ended, else NULL. */
static stream_conn_t *
stream_conn(tcp_dirs_t *t, guint32 stream, const address *src, guint32 sport, const address *dst,
            guint32 dport, const tcp_info_t *th)
{
    stream_conn_t *c = (stream_conn_t *)g_hash_table_lookup(t->numbers, GUINT_TO_POINTER(stream));
    int cmp = cmp_address(src, dst);
    int way = (cmp < 0 || (cmp == 0 && sport <= dport)) ? 0 : 1;

    if (!c) {
        gchar *a = address_to_str(NULL, way ? dst : src), *b = address_to_str(NULL, way ? src : dst);
        gchar *key = g_strdup_printf("%s\t%u\t%s\t%u", a, way ? dport : sport, b, way ? sport : dport);
        wmem_free(NULL, a);
        wmem_free(NULL, b);
        c = (stream_conn_t *)g_hash_table_lookup(t->conns, key);
        /* A new connection: none on these endpoints, one this session already numbers (TCP
         * told them apart), or a SYN that does not begin as the earlier one did. */
        if (!c || c->session == t->sessions
            || (th && (th->th_flags & (TH_SYN | TH_ACK)) == TH_SYN && c->seq_set[way]
                && c->first_seq[way] != th->th_rawseq)) {
            c = g_new0(stream_conn_t, 1);
            c->key = key;
            /* Before the first reset the column is tcp.stream itself. */
            c->number = t->sessions ? t->next_number : stream;
            g_hash_table_replace(t->conns, key, c);
            g_ptr_array_add(t->conn_list, c);
        } else {
            g_free(key);
        }
        c->session = t->sessions;
        t->next_number = MAX(t->next_number, c->number + 1);
        g_hash_table_insert(t->numbers, GUINT_TO_POINTER(stream), c);
    }
    if (th) {
        if (!c->seq_set[way]) {
            c->seq_set[way] = TRUE;
            c->first_seq[way] = th->th_rawseq;
        }
        c->fin[way] |= (th->th_flags & TH_FIN) != 0;
        c->rst |= (th->th_flags & TH_RST) != 0;
    }
    return c;
}

/* A line's stream column: tcp.stream as the whole capture numbers it (stream mode), -1 for a
 * record not over TCP. */
static int
stream_column(const p2pc_where_t *at)
{
    if (at->stream == G_MAXUINT32)
        return -1;
    if (stream_tap && stream_tap->tcp.stream)
        return (int)stream_conn(&stream_tap->tcp, at->stream, &at->src, at->srcport, &at->dst,
                                at->dstport, NULL)->number;
    return (int)at->stream;
}

/* A line's kind and its where columns: frame, stream (-1: not TCP), src, srcport, dst, dstport. */
static void
print_where(char kind, const p2pc_where_t *at)
{
    gchar *src = address_to_str(NULL, &at->src);
    gchar *dst = address_to_str(NULL, &at->dst);

    printf("%c\t%u\t%d\t%s\t%u\t%s\t%u\t", kind, at->frame, stream_column(at), src, at->srcport,
           dst, at->dstport);
    wmem_free(NULL, src);
    wmem_free(NULL, dst);
}

static void
print_record(records_tap_t *t, const p2pc_record_t *r)
{
    t->records++;
    print_where('M', &r->at);
    print_ts(stdout, &r->abs_ts);
    putchar('\t');
    print_field(stdout, r->proto);
    putchar('\t');
    print_field(stdout, r->msg_type);
    putchar('\t');
    print_field(stdout, r->codec);
    printf("\t%" G_GUINT64_FORMAT "\t%" G_GUINT64_FORMAT "\t%" G_GUINT64_FORMAT
           "\t%" G_GUINT64_FORMAT "\t%u\t",
           r->wire_len, r->header_len, r->payload_len, r->raw_len, r->batch_count);
    /* Not in a muxed stream: an empty mux_stream. */
    if (r->mux_stream >= 0)
        printf("%" G_GINT64_FORMAT, r->mux_stream);
    printf("\t%u\t%u\t", r->mux_frames, r->snappy_chunks);
    if (r->reason)
        print_field(stdout, r->reason);
    putchar('\t');
    /* Where the unit that completed it ends (none: not over TCP, or a tail). */
    if (r->has_unit_end)
        printf("%" G_GUINT64_FORMAT, r->unit_end);
    putchar('\n');
}

/* A tap's batch (record.h): `line` prints each item's line (stream mode: after
 * stream_check_reset() at its frame), flushed at the end in stream mode. */
static tap_packet_status
print_batch(tcp_dirs_t *tcp, const void *batch, void (*line)(tcp_dirs_t *tcp, const void *item, void *ud),
            void *ud)
{
    for (guint i = 0; i < P2PC_BATCH_COUNT(batch); i++)
        line(tcp, P2PC_BATCH_ITEM(batch, i), ud);
    if (tcp->stream)
        fflush(stdout);
    return TAP_PACKET_DONT_REDRAW;
}

static void
record_line(tcp_dirs_t *tcp, const void *item, void *ud)
{
    const p2pc_record_t *r = (const p2pc_record_t *)item;

    stream_check_reset(tcp, r->at.frame);
    print_record((records_tap_t *)ud, r);
}

static tap_packet_status
records_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
               tap_flags_t flags)
{
    records_tap_t *t = (records_tap_t *)tapdata;
    return print_batch(&t->tcp, p, record_line, t);
}

static void
print_tail(const p2pc_record_t *r, void *ud)
{
    print_record((records_tap_t *)ud, r);
}

static void
drop_tail(const p2pc_record_t *r _U_, void *ud _U_)
{
}

/* What the dissectors still hold, in no record (record.h, p2pc_tail_register): printed once
 * the session's packets are read, unless a display filter chose the records (then called all
 * the same, so that the tails the parts keep across resets do not pile up). */
static void
print_tails(records_tap_t *t, gboolean at_reset)
{
    p2pc_tail_foreach(t->filtered ? drop_tail : print_tail, t, at_reset);
}

/* Stream mode, at a session reset: a connection whose state the next session goes on with
 * (core/conn.h), so that the reader does not count it as cut. */
static void
print_carried(const address *a, guint32 port_a, const address *b, guint32 port_b)
{
    gchar *sa, *sb;

    if (!stream_tap || stream_tap->ended)
        return;
    sa = address_to_str(NULL, a);
    sb = address_to_str(NULL, b);
    printf("#CARRIED\t%s\t%u\t%s\t%u\n", sa, port_a, sb, port_b);
    wmem_free(NULL, sa);
    wmem_free(NULL, sb);
}

/* tshark's session reset (-M) forgets the dissectors' state, tails included: print them first.
 * (A cleanup routine runs before the file scope ends.) */
static void
records_session_end(void)
{
    if (stream_tap && !stream_tap->ended) {
        print_tails(stream_tap, TRUE);
        fflush(stdout);
    }
}

static tap_packet_status
records_peer_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
                    tap_flags_t flags)
{
    peers_tap_t *t = (peers_tap_t *)tapdata;
    const p2pc_peer_t *r = (const p2pc_peer_t *)p;

    stream_check_reset(t->tcp, r->at.frame);
    print_where('I', &r->at);
    print_field(stdout, r->via);
    putchar('\t');
    print_field(stdout, r->peer_id);
    putchar('\n');
    if (t->tcp->stream)
        fflush(stdout);
    return TAP_PACKET_DONT_REDRAW;
}

static void
spec_line(tcp_dirs_t *tcp, const void *item, void *ud)
{
    const p2pc_spec_hit_t *hit = (const p2pc_spec_hit_t *)item;

    stream_check_reset(tcp, hit->frame);
    printf("S\t%u\t%s\n", hit->frame, hit->check);
}

static tap_packet_status
records_spec_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
                    tap_flags_t flags)
{
    return print_batch(((spec_tap_t *)tapdata)->tcp, p, spec_line, NULL);
}

static void
gossip_line(tcp_dirs_t *tcp, const void *item, void *ud)
{
    const p2pc_gossip_part_t *g = (const p2pc_gossip_part_t *)item;

    stream_check_reset(tcp, g->at.frame);
    print_where('G', &g->at);
    fputs(g->kind, stdout);
    putchar('\t');
    print_field(stdout, g->topic);
    printf("\t%u\t%" G_GUINT64_FORMAT "\t%" G_GUINT64_FORMAT "\t%s\n", g->count, g->message_ids, g->bytes,
           g->message_id);
}

static tap_packet_status
records_gossip_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
                      tap_flags_t flags)
{
    return print_batch(((spec_tap_t *)tapdata)->tcp, p, gossip_line, NULL);
}

static void
budget_line(tcp_dirs_t *tcp, const void *item, void *ud)
{
    const p2pc_budget_t *b = (const p2pc_budget_t *)item;

    if (!b->bytes)
        return;     /* what a frame gave and took back (a header its own message took) */
    stream_check_reset(tcp, b->at.frame);
    print_where('B', &b->at);
    printf("%s\t%s\t%s\t%" G_GINT64_FORMAT "\n", b->proto, b->layer, b->kind, b->bytes);
}

static tap_packet_status
records_budget_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
                      tap_flags_t flags)
{
    return print_batch(((spec_tap_t *)tapdata)->tcp, p, budget_line, NULL);
}

/* The direction of `stream` (G_MAXUINT32: a libp2p QUIC connection over UDP) from src:sport,
 * counted with one more frame: `seglen` bytes of payload (TCP) or STREAM data (QUIC), else a
 * pure ACK (QUIC: a packet of ACK and PADDING frames only) or a control frame; and with
 * `ctl_before` control frames of `ctl_before_bytes` before it (QUIC's p2pc_quic_packet_t). */
static void
count_frame(tcp_dirs_t *t, packet_info *pinfo, guint32 stream, stream_conn_t *conn,
            const address *ip_src, guint32 sport, const address *ip_dst, guint32 dport,
            guint32 seglen, gboolean pure_ack, guint32 ctl_before, guint64 ctl_before_bytes)
{
    gchar *src, *key;
    tcp_dir_stats_t *d;
    guint32 frame_len = pinfo->fd->pkt_len;

    stream_check_reset(t, pinfo->num);
    src = address_to_str(NULL, ip_src);
    key = g_strdup_printf("%u\t%s\t%u", stream, src, sport);
    d = (tcp_dir_stats_t *)g_hash_table_lookup(t->dirs, key);
    if (!d) {
        d = g_new0(tcp_dir_stats_t, 1);
        d->src = g_strdup(src);
        d->dst = address_to_str(NULL, ip_dst);
        d->stream = stream;
        d->srcport = sport;
        d->dstport = dport;
        d->first_ts = pinfo->abs_ts;
        d->key = key;
        d->conn = conn;
        g_hash_table_insert(t->dirs, key, d);
        g_ptr_array_add(t->order, d);
    } else {
        g_free(key);
    }
    wmem_free(NULL, src);
    d->frames += 1 + ctl_before;
    d->bytes += frame_len + ctl_before_bytes;
    d->ctl_frames += ctl_before;
    d->ctl_bytes += ctl_before_bytes;
    d->last_ts = pinfo->abs_ts;
    if (seglen > 0) {
        d->data_segs++;
        d->data_bytes += seglen;
        d->data_frame_bytes += frame_len;
        if (seglen > d->max_seg)
            d->max_seg = seglen;
    } else if (pure_ack) {
        d->pure_acks++;
        d->pure_ack_bytes += frame_len;
    } else {
        d->ctl_frames++;
        d->ctl_bytes += frame_len;
    }
    if (t->stream) {
        print_tcp_dir(d);
        fflush(stdout);
    }
}

static tap_packet_status
records_tcp_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
                   tap_flags_t flags)
{
    const tcp_info_t *th = (const tcp_info_t *)p;
    tcp_dirs_t *t = (tcp_dirs_t *)tapdata;
    stream_conn_t *conn = NULL;

    if (t->stream) {
        stream_check_reset(t, pinfo->num);
        conn = stream_conn(t, th->th_stream, &th->ip_src, th->th_sport, &th->ip_dst, th->th_dport, th);
    }
    count_frame(t, pinfo, conn ? conn->number : th->th_stream, conn, &th->ip_src, th->th_sport,
                &th->ip_dst, th->th_dport, th->th_have_seglen ? th->th_seglen : 0,
                (th->th_flags & (TH_SYN | TH_FIN | TH_RST)) == 0 && (th->th_flags & TH_ACK), 0, 0);
    return TAP_PACKET_DONT_REDRAW;
}

static tap_packet_status
records_quic_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
                    tap_flags_t flags)
{
    const p2pc_quic_packet_t *q = (const p2pc_quic_packet_t *)p;

    count_frame((tcp_dirs_t *)tapdata, pinfo, G_MAXUINT32, NULL, &pinfo->src, pinfo->srcport, &pinfo->dst,
                pinfo->destport, q->stream_bytes, q->ack_only, q->before_frames, q->before_bytes);
    return TAP_PACKET_DONT_REDRAW;
}

static void
print_tcp_header(void)
{
    printf("#T\tstream\tsrc\tsrcport\tdst\tdstport\tframes\tbytes\tdata_segs\tdata_bytes"
           "\tdata_frame_bytes\tpure_acks\tpure_ack_bytes\tctl_frames\tctl_bytes\tmax_seg"
           "\tfirst_time\tlast_time\n");
}

static void
print_tcp_dir(const tcp_dir_stats_t *d)
{
    printf("T\t%d\t%s\t%u\t%s\t%u\t%u\t%" G_GUINT64_FORMAT "\t%u\t%" G_GUINT64_FORMAT
           "\t%" G_GUINT64_FORMAT "\t%u\t%" G_GUINT64_FORMAT "\t%u\t%" G_GUINT64_FORMAT "\t%u\t",
           d->stream == G_MAXUINT32 ? -1 : (int)d->stream, d->src, d->srcport, d->dst, d->dstport, d->frames, d->bytes,
           d->data_segs, d->data_bytes, d->data_frame_bytes, d->pure_acks,
           d->pure_ack_bytes, d->ctl_frames, d->ctl_bytes, d->max_seg);
    print_ts(stdout, &d->first_ts);
    putchar('\t');
    print_ts(stdout, &d->last_ts);
    putchar('\n');
}

static void
records_draw(void *tapdata)
{
    records_tap_t *t = (records_tap_t *)tapdata;

    /* Stream mode printed every direction's counts as they changed. */
    if (!t->tcp.stream) {
        print_tcp_header();
        for (guint i = 0; i < t->tcp.order->len; i++)
            print_tcp_dir((const tcp_dir_stats_t *)g_ptr_array_index(t->tcp.order, i));
    }
    print_tails(t, FALSE);
    t->ended = TRUE;
    printf("#END\trecords=%" G_GUINT64_FORMAT "\treplay=%s\tkept_bytes=%" G_GUINT64_FORMAT, t->records,
           p2pc_replay_mode(), p2pc_replay_kept());
    /* A second pass finds nothing kept from this frame on: its records are missing. */
    if (p2pc_replay_cut())
        printf("\tnot_kept_from=%u", p2pc_replay_cut());
    putchar('\n');
    fflush(stdout);
}

static void
dir_stats_free(gpointer p)
{
    tcp_dir_stats_t *d = (tcp_dir_stats_t *)p;
    g_free(d->src);
    wmem_free(NULL, d->dst);
    g_free(d);
}

static void
records_finish(void *tapdata)
{
    records_tap_t *t = (records_tap_t *)tapdata;
    /* Called once at exit: the tcp listener gets no packets after this. */
    if (stream_tap == t)
        stream_tap = NULL;
    g_ptr_array_free(t->tcp.order, TRUE);
    g_hash_table_destroy(t->tcp.dirs);
    if (t->tcp.stream) {
        g_hash_table_destroy(t->tcp.numbers);
        g_hash_table_destroy(t->tcp.conns);
        g_ptr_array_free(t->tcp.conn_list, TRUE);
    }
    g_free(t);
}

/* Registers a listener of tap `tap` (`what` names it), or says why not and ends tshark, as its own
 * taps do with a -z argument they cannot honour (the analyzer reads "Couldn't register p2pc"). */
static void
listen_or_exit(const char *tap, void *data, const char *filter, tap_packet_cb packet, tap_draw_cb draw,
               tap_finish_cb finish, const char *what)
{
    GString *err = register_tap_listener(tap, data, filter, TL_REQUIRES_NOTHING, NULL, packet, draw, finish);
    if (err) {
        fprintf(stderr, "tshark: Couldn't register %s: %s\n", what, err->str);
        g_string_free(err, TRUE);
        exit(1);
    }
}

static p2pc_tap_init_t
records_init(const char *opt_arg, void *userdata)
{
    records_tap_t *t = g_new0(records_tap_t, 1);
    const char *filter = NULL;

    if (!strcmp(opt_arg, "p2pc,records,stream") || !strncmp(opt_arg, "p2pc,records,stream,", 20)) {
        t->tcp.stream = TRUE;
        filter = opt_arg[19] ? opt_arg + 20 : NULL;
    } else if (!strncmp(opt_arg, "p2pc,records,", 13)) {
        filter = opt_arg + 13;
    }
    t->filtered = filter && *filter;
    if (t->tcp.stream) {
        stream_tap = t;
        t->tcp.numbers = g_hash_table_new(g_direct_hash, g_direct_equal);
        t->tcp.conns = g_hash_table_new(g_str_hash, g_str_equal);     /* keys: the conns' own */
        t->tcp.conn_list = g_ptr_array_new_with_free_func(stream_conn_free);
    }
    t->tcp.dirs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    t->tcp.order = g_ptr_array_new_with_free_func(dir_stats_free);

    printf("#p2pc-records\t4\n");
    printf("#M\tframe\tstream\tsrc\tsrcport\tdst\tdstport\ttime\tproto\tmsg_type\tcodec"
           "\twire_len\theader_len\tpayload_len\traw_len\tbatch_count\tmux_stream\tmux_frames"
           "\tsnappy_chunks\treason\tunit_end\n");
    printf("#I\tframe\tstream\tsrc\tsrcport\tdst\tdstport\tvia\tpeer_id\n");
    printf("#S\tframe\tcheck\n");
    printf("#G\tframe\tstream\tsrc\tsrcport\tdst\tdstport\tkind\ttopic\tcount\tmessage_ids\tbytes\tmessage_id\n");
    printf("#B\tframe\tstream\tsrc\tsrcport\tdst\tdstport\tproto\tlayer\tkind\tbytes\n");
    if (t->tcp.stream) {
        print_tcp_header();
        fflush(stdout);
    }
    listen_or_exit("p2pc", t, filter, records_packet, records_draw, records_finish, "p2pc,records tap");
    /* The peer IDs handshakes state, whatever the filter: they name connections, not messages. */
    t->peers.tcp = &t->tcp;
    t->spec.tcp = &t->tcp;
    listen_or_exit("p2pc_peer", &t->peers, NULL, records_peer_packet, NULL, NULL, "the p2pc,records peer listener");
    /* The conformance checks that failed in the frames the filter matches: a muxer's check may
     * be in a frame that completes no message (a NewStream, a window update). */
    listen_or_exit("p2pc_spec", &t->spec, filter, records_spec_packet, NULL, NULL, "the p2pc,records spec listener");
    /* The gossipsub RPCs' parts in the frames the filter matches (gossip control is no message). */
    t->gossip.tcp = &t->tcp;
    listen_or_exit("p2pc_gossip", &t->gossip, filter, records_gossip_packet, NULL, NULL, "the p2pc,records gossip listener");
    /* Each layer's own bytes no record carries, in the frames the filter matches. */
    t->budget.tcp = &t->tcp;
    listen_or_exit("p2pc_budget", &t->budget, filter, records_budget_packet, NULL, NULL, "the p2pc,records budget listener");
    /* The same counts for the packets of libp2p QUIC connections (stream -1). */
    listen_or_exit("p2pc_quic", &t->tcp, NULL, records_quic_packet, NULL, NULL, "the p2pc,records QUIC listener");
    /* TCP segment and ACK counts per connection direction, for the header/ACK model. */
    listen_or_exit("tcp", &t->tcp, NULL, records_tcp_packet, NULL, NULL, "the p2pc,records tcp listener");
    P2PC_TAP_INIT_STARTED;
}

/* ---- -z p2pc,payloads ---- */

static void
print_payload(const p2pc_record_t *r)
{
    guint len = r->raw_bytes_len;
    char *line = (char *)g_malloc((gsize)len * 2 + 1);
    *(len ? bytes_to_hexstr(line, r->raw_bytes, len) : line) = '\0';
    print_where('P', &r->at);
    print_field(stdout, r->proto);
    putchar('\t');
    print_field(stdout, r->msg_type);
    putchar('\t');
    print_field(stdout, r->codec);
    printf("\t%s\n", line);
    g_free(line);
}

static tap_packet_status
payloads_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
                tap_flags_t flags)
{
    for (guint i = 0; i < P2PC_BATCH_COUNT(p); i++) {
        const p2pc_record_t *r = (const p2pc_record_t *)P2PC_BATCH_ITEM(p, i);
        if (r->raw_bytes)
            print_payload(r);
    }
    return TAP_PACKET_DONT_REDRAW;
}

static p2pc_tap_init_t
payloads_init(const char *opt_arg, void *userdata)
{
    const char *filter = NULL;
    if (!strncmp(opt_arg, "p2pc,payloads,", 14))
        filter = opt_arg + 14;
    printf("#p2pc-payloads\t2\n#P\tframe\tstream\tsrc\tsrcport\tdst\tdstport\tproto\tmsg_type\tcodec\traw_hex\n");
    p2pc_record_want_raw();
    listen_or_exit("p2pc", (void *)payloads_init, filter, payloads_packet, NULL, NULL, "p2pc,payloads tap");
    P2PC_TAP_INIT_STARTED;
}

static stat_tap_ui records_ui = {
    REGISTER_STAT_GROUP_GENERIC,
    NULL,
    "p2pc,records",
    records_init,
    0,
    NULL
};

static stat_tap_ui payloads_ui = {
    REGISTER_STAT_GROUP_GENERIC,
    NULL,
    "p2pc,payloads",
    payloads_init,
    0,
    NULL
};

void
register_tap_listener_p2pc_printers(void)
{
    register_stat_tap_ui(&records_ui, NULL);
    register_cleanup_routine(records_session_end);
    p2pc_conn_on_carried(print_carried);
    register_stat_tap_ui(&payloads_ui, NULL);
}
