/* fuzz_dissect.c — a fuzzshark-like libFuzzer harness: the whole p2pc plugin (its sources,
 * compiled in, registered as the .so would be) inside libwireshark, fed one TCP connection
 * built from the fuzz input and dissected twice, as `tshark -2 -V` does (first pass without a
 * tree, second pass with visited frames and a printed tree).
 *
 * Input: byte 0 picks the server port (0: 8333 Bitcoin, 1: 30300 FISCO, 2: 45678 where only
 * the heuristics — libp2p multistream, FISCO, Bitcoin — can claim the stream), then records
 *   [flags:1][length:2 BE][data:length]
 * flags bit 0: 0 client->server, 1 server->client; bit 7: the segment is lost (its sequence
 * space is skipped, no frame is sent).  Each record is one Ethernet/IPv4/TCP frame after a
 * SYN, SYN-ACK, ACK handshake.  fuzz/make_seeds.py writes real connections from the captures
 * in this format.  WIRESHARK_ABORT_ON_DISSECTOR_BUG makes a "Dissector bug" abort.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <wireshark.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <epan/epan.h>
#include <epan/epan_dissect.h>
#include <epan/prefs.h>
#include <epan/print.h>
#include <epan/print_stream.h>
#include <epan/timestamp.h>
#include <wiretap/wtap.h>
#include <wsutil/filesystem.h>
#include <wsutil/privileges.h>
#include <wsutil/report_message.h>
#include <wsutil/wslog.h>

void plugin_register(void);   /* the generated plugin.c (P2PC_PLUGIN_ENTRY) */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FRAMES   300
#define MAX_SEGMENT  16000
#define HDR_LEN      (14 + 20 + 20)
#define CLIENT_PORT  50123

static const char *const p2pc_protos_expected[] = { "btcc", "fisco", "multistream", "yamux", "eth2" };
static const guint16 server_ports[] = { 8333, 30300, 45678 };

struct packet_provider_data {
    frame_data *frames;
    guint32 count;
};

static frame_data frames[MAX_FRAMES];
static guint8 *bufs[MAX_FRAMES];
static guint32 lens[MAX_FRAMES];
static struct packet_provider_data prov = { frames, 0 };
static print_stream_t *devnull;
/* epan_new() costs ~0.3 s (every protocol's init routine): one session serves SESSION_INPUTS
 * inputs, each on a connection of its own (client address and port from `conn`), with frame
 * numbers continuing from `base` — as fuzzshark keeps one session. */
#define SESSION_INPUTS 256
static epan_t *session;
static guint32 base, conn, session_inputs;

static const nstime_t *
get_frame_ts(struct packet_provider_data *p, guint32 num)
{
    static const nstime_t zero = NSTIME_INIT_ZERO;
    if (num <= base || num > base + p->count)
        return &zero;   /* a frame of an earlier input (the session's reference frame) */
    return &p->frames[num - base - 1].abs_ts;
}

static const struct packet_provider_funcs funcs = { get_frame_ts, NULL, NULL, NULL };

static void quiet_v(const char *f, va_list ap) { (void)f; (void)ap; }
static void quiet_open(const char *n, int e, gboolean w) { (void)n; (void)e; (void)w; }
static void quiet_rw(const char *n, int e) { (void)n; (void)e; }
static void quiet_cf(const char *n, int e, gchar *d) { (void)n; (void)e; (void)d; }
static void quiet_cfd(const char *n, int e, gchar *d, int t) { (void)n; (void)e; (void)d; (void)t; }
static void quiet_cfw(const char *a, const char *b, int e, gchar *d, guint32 f, int t)
{ (void)a; (void)b; (void)e; (void)d; (void)f; (void)t; }

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const struct report_message_routines routines = {
        quiet_v, quiet_v, quiet_open, quiet_rw, quiet_rw, quiet_cf, quiet_cfd, quiet_cf,
        quiet_cfw, quiet_cf,
    };
    char *err;
    e_prefs *prefs_p;
    FILE *null;

    /* As Wireshark's fuzzshark and fuzz-test.sh: exact heap bounds for ASan, loud bugs. */
    g_setenv("WIRESHARK_DEBUG_WMEM_OVERRIDE", "simple", 0);
    g_setenv("G_SLICE", "always-malloc", 0);
    g_setenv("WIRESHARK_ABORT_ON_DISSECTOR_BUG", "1", 0);
    g_setenv("WIRESHARK_ABORT_ON_TOO_MANY_ITEMS", "1", 0);
    g_setenv("XDG_CONFIG_HOME", "/nonexistent/p2pc-fuzz", 0);
    /* Uninitialised, the log prints every debug message (one per heuristic try): quiet. */
    ws_log_init("fuzz_dissect", NULL);
    ws_log_set_level(LOG_LEVEL_WARNING);
    init_process_policies();
    err = configuration_init((*argv)[0], NULL);
    g_free(err);
    init_report_message("fuzz_dissect", &routines);
    timestamp_set_type(TS_RELATIVE);
    timestamp_set_precision(TS_PREC_AUTO);
    timestamp_set_seconds_type(TS_SECONDS_DEFAULT);
    wtap_init(FALSE);
    plugin_register();          /* what loading p2pc.so does, before epan_init() */
    if (!epan_init(NULL, NULL, FALSE)) {
        fprintf(stderr, "fuzz_dissect: epan_init failed\n");
        abort();
    }
    prefs_p = epan_load_settings();
    (void)prefs_p;
    for (size_t i = 0; i < G_N_ELEMENTS(p2pc_protos_expected); i++)
        if (proto_get_id_by_filter_name(p2pc_protos_expected[i]) < 0) {
            fprintf(stderr, "fuzz_dissect: protocol %s is not registered\n", p2pc_protos_expected[i]);
            abort();
        }
    null = fopen("/dev/null", "w");
    devnull = print_stream_text_stdio_new(null);
    return 0;
}

static guint16
csum16(const guint8 *p, size_t n)
{
    guint32 s = 0;
    for (size_t i = 0; i + 1 < n; i += 2)
        s += (guint32)(p[i] << 8 | p[i + 1]);
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (guint16)~s;
}

static void
add_frame(int dir, guint16 sport, guint16 dport, guint32 seq, guint32 ack, guint8 flags,
          const guint8 *data, guint32 len)
{
    guint32 n = prov.count;
    guint8 *f = g_malloc(HDR_LEN + len);
    static const guint8 mac_c[6] = { 2, 0, 0, 0, 0, 1 }, mac_s[6] = { 2, 0, 0, 0, 0, 2 };
    guint8 *ip = f + 14, *tcp = f + 34;

    memcpy(f, dir ? mac_c : mac_s, 6);
    memcpy(f + 6, dir ? mac_s : mac_c, 6);
    f[12] = 0x08; f[13] = 0x00;
    memset(ip, 0, 20);
    ip[0] = 0x45;
    ip[2] = (guint8)((20 + 20 + len) >> 8); ip[3] = (guint8)(20 + 20 + len);
    ip[4] = (guint8)(n >> 8); ip[5] = (guint8)n;
    ip[6] = 0x40; ip[8] = 64; ip[9] = 6;
    /* client 10.x.y.z (from conn), server 192.0.2.2 */
    if (dir) {
        ip[12] = 192; ip[14] = 2; ip[15] = 2;
        ip[16] = 10; ip[17] = (guint8)(conn >> 16); ip[18] = (guint8)(conn >> 8); ip[19] = (guint8)conn;
    } else {
        ip[12] = 10; ip[13] = (guint8)(conn >> 16); ip[14] = (guint8)(conn >> 8); ip[15] = (guint8)conn;
        ip[16] = 192; ip[18] = 2; ip[19] = 2;
    }
    {
        guint16 c = csum16(ip, 20);
        ip[10] = (guint8)(c >> 8); ip[11] = (guint8)c;
    }
    memset(tcp, 0, 20);
    tcp[0] = (guint8)(sport >> 8); tcp[1] = (guint8)sport;
    tcp[2] = (guint8)(dport >> 8); tcp[3] = (guint8)dport;
    tcp[4] = (guint8)(seq >> 24); tcp[5] = (guint8)(seq >> 16); tcp[6] = (guint8)(seq >> 8); tcp[7] = (guint8)seq;
    tcp[8] = (guint8)(ack >> 24); tcp[9] = (guint8)(ack >> 16); tcp[10] = (guint8)(ack >> 8); tcp[11] = (guint8)ack;
    tcp[12] = 5 << 4;
    tcp[13] = flags;
    tcp[14] = 0xff; tcp[15] = 0xff;
    if (len)
        memcpy(tcp + 20, data, len);
    bufs[n] = f;
    lens[n] = HDR_LEN + len;
    prov.count = n + 1;
}

static void
dissect_all(epan_t *session, gboolean second_pass)
{
    const frame_data *ref = NULL, *prev_dis = NULL, *prev_cap = NULL;
    guint32 cum_bytes = 0;
    nstime_t elapsed = NSTIME_INIT_ZERO;

    for (guint32 i = 0; i < prov.count; i++) {
        wtap_rec rec;
        epan_dissect_t edt;
        frame_data *fd = &frames[i];

        wtap_rec_init(&rec);
        rec.rec_type = REC_TYPE_PACKET;
        rec.presence_flags = WTAP_HAS_TS | WTAP_HAS_CAP_LEN;
        rec.ts.secs = 1700000000 + i / 10;
        rec.ts.nsecs = (int)(i % 10) * 100000000;
        rec.rec_header.packet_header.caplen = lens[i];
        rec.rec_header.packet_header.len = lens[i];
        rec.rec_header.packet_header.pkt_encap = WTAP_ENCAP_ETHERNET;
        if (!second_pass) {
            frame_data_init(fd, base + i + 1, &rec, (gint64)i * 65536, cum_bytes);
            frame_data_set_before_dissect(fd, &elapsed, &ref, prev_dis);
        }
        epan_dissect_init(&edt, session, second_pass, second_pass);
        epan_dissect_run(&edt, WTAP_FILE_TYPE_SUBTYPE_UNKNOWN, &rec,
                         tvb_new_real_data(bufs[i], lens[i], lens[i]), fd, NULL);
        if (second_pass)
            proto_tree_print(print_dissections_expanded, TRUE, &edt, NULL, devnull);
        else
            frame_data_set_after_dissect(fd, &cum_bytes);
        prev_dis = prev_cap = fd;
        epan_dissect_cleanup(&edt);
        wtap_rec_cleanup(&rec);
    }
    (void)prev_cap;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    guint16 sport = (guint16)(CLIENT_PORT + (conn & 0x3ff)), dport;
    guint32 seq[2] = { 1000, 500000 };
    size_t pos = 1;

    if (size < 1)
        return 0;
    dport = server_ports[data[0] % G_N_ELEMENTS(server_ports)];
    prov.count = 0;
    add_frame(0, sport, dport, seq[0]++, 0, 0x02, NULL, 0);                 /* SYN */
    add_frame(1, dport, sport, seq[1]++, seq[0], 0x12, NULL, 0);            /* SYN-ACK */
    add_frame(0, sport, dport, seq[0], seq[1], 0x10, NULL, 0);              /* ACK */
    while (pos + 3 <= size && prov.count < MAX_FRAMES) {
        guint8 flags = data[pos];
        guint32 len = (guint32)data[pos + 1] << 8 | data[pos + 2];
        int dir = flags & 1;
        pos += 3;
        if (len > size - pos)
            len = (guint32)(size - pos);
        if (len > MAX_SEGMENT)
            len = MAX_SEGMENT;
        if (len == 0)
            continue;
        if (!(flags & 0x80)) {
            if (dir)
                add_frame(1, dport, sport, seq[1], seq[0], 0x18, data + pos, len);
            else
                add_frame(0, sport, dport, seq[0], seq[1], 0x18, data + pos, len);
        }
        seq[dir] += len;
        pos += len;
    }

    if (!session || session_inputs >= SESSION_INPUTS) {
        if (session)
            epan_free(session);
        session = epan_new(&prov, &funcs);
        session_inputs = 0;
        base = 0;
    }
    session_inputs++;
    dissect_all(session, FALSE);
    for (guint32 i = 0; i < prov.count; i++)
        frames[i].visited = 1;
    dissect_all(session, TRUE);
    for (guint32 i = 0; i < prov.count; i++) {
        frame_data_destroy(&frames[i]);
        g_free(bufs[i]);
    }
    base += prov.count;
    prov.count = 0;
    conn++;
    return 0;
}
