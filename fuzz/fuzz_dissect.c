/* fuzz_dissect.c — fuzzshark-like libFuzzer harnesses: the whole p2pc plugin (its objects,
 * registered as the .so would be) inside libwireshark, fed one TCP connection built from the
 * fuzz input and dissected twice, as `tshark -2 -V` does (first pass without a tree, second
 * pass with visited frames and a printed tree).
 *
 * One source, one harness per framing parser: -DFUZZ_TARGET=<name> picks a row of `targets`
 * below, which fixes the server port and a preamble: real multistream-select lines (the
 * header and a protocol ID, uvarint-length-prefixed, from both sides) that negotiate the
 * connection down to the layer under test, so every input's bytes are that layer's.  Where a
 * target has several protocol IDs (or, for dissect_tcp, ports), input byte 0 picks one.
 *
 * Input (after that byte): records [flags:1][length:2 BE][data:length]; flags bit 0: 0
 * client->server, 1 server->client; bit 7: the segment is lost (its sequence space is
 * skipped, no frame is sent).  Each record is one Ethernet/IPv4/TCP frame after a SYN,
 * SYN-ACK, ACK handshake and the preamble's frames.  fuzz/make_seeds.py writes real
 * connections from the captures in this format, cut after the same negotiation.
 *
 * dissect_signed_key is no connection's layer: every segment is the value of a libp2p TLS
 * certificate extension (a SignedKey, DER), handed to the dissector packet-libp2p-tls.c
 * registers for the extension's OID, as Wireshark's x509 dissector hands it the extensions of
 * a certificate (a small protocol of this harness's, on PORT_CERT, does the handing).
 *
 * dissect_quic is the libp2p QUIC stream path (packet-libp2p-quic.c) without QUIC's decryption:
 * every segment is one STREAM frame's data as Wireshark's QUIC dissector hands it to the
 * dissector its "quic.proto" table has for the ALPN "libp2p", [stream id:1][stream offset:4 BE]
 * [data], with a quic_stream_info as data (from_server: sent by the server side; the connection
 * stands for the QUIC connection).  The offset's top bit is the frame's FIN bit: then, as QUIC
 * does, a quic.stream.fin item goes in the tree just before the call (the stream direction
 * ends; a stream whose two did is freed).  Each QUIC stream is then a libp2p stream: the offsets drive
 * the retransmission skip and the holes, multistream-select and everything it selects run on
 * each stream (a small protocol of this harness's, on PORT_QUIC, does the handing).
 *
 * A target may also set a preference.  noise_keyed sets a Noise key log (the keys of
 * captures/eth2/eth2-noise-yamux, whose connection its seeds replay): then the transport
 * messages decrypt, and a lost segment makes the direction resynchronise on the next message
 * that decrypts (packet-libp2p-noise.c).  items sets a small gui.max_tree_items, so that the
 * lists of Bitcoin blocks, FISCO, gossipsub and Bitswap messages pass it: each list asks
 * p2pc_tree_room() (core/tree-room.c) before it draws, the rest is counted and not drawn
 * (p2pc.tree_cut), and an item past the limit (a list that did not ask) aborts, as
 * WIRESHARK_ABORT_ON_TOO_MANY_ITEMS makes it.  Its byte 0 picks the port, and on PORT_OTHER
 * the protocol: the multistream-select preamble is libp2p's, so it is sent on PORT_OTHER only.
 *
 * Every decoder call the plugin makes is checked (ld --wrap): no output over its bound, no
 * bytes in a NULL buffer, no failure without a detail.  WIRESHARK_ABORT_ON_DISSECTOR_BUG
 * makes a "Dissector bug" abort.
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
#include <epan/packet.h>
#include <epan/conversation.h>
#include <epan/disabled_protos.h>
#include <epan/dissectors/packet-ber.h>
#include <epan/dissectors/packet-quic.h>
#include <epan/prefs.h>
#include <epan/print.h>
#include <epan/print_stream.h>
#include <epan/timestamp.h>
#include <wiretap/wtap.h>
#include <wsutil/filesystem.h>
#include <wsutil/privileges.h>
#include <wsutil/report_message.h>
#include <wsutil/wslog.h>

#include "core/codecs.h"
#include "libp2p/engine.h"

void plugin_register(void);   /* the generated plugin.c (P2PC_PLUGIN_ENTRY) */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FRAMES   300
#define MAX_SEGMENT  16000
#define HDR_LEN      (14 + 20 + 20)
#define CLIENT_PORT  50123

#ifndef FUZZ_TARGET
#define FUZZ_TARGET tcp
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

static const char *const upstream_buggy[] = { "jxta", "ceph" };
static const char *const p2pc_protos_expected[] = { "btcc", "fisco", "multistream", "yamux", "eth2" };

#define PORT_BITCOIN 8333
#define PORT_FISCO   30300
#define PORT_OTHER   45678      /* nobody's port: only the heuristics can claim the stream */
#define PORT_CERT    45679      /* dissect_signed_key's: every segment is a certificate extension */
#define PORT_QUIC    45680      /* dissect_quic's: every segment is a QUIC STREAM frame's data */
/* libp2p/specs tls: the libp2p Public Key Extension (packet-libp2p-tls.c registers its dissector). */
#define LIBP2P_TLS_OID "1.3.6.1.4.1.53594.1.1"
#define MAX_CHOICES  19

/* A harness: its server port(s) and the multistream-select negotiation its inputs follow. */
typedef struct {
    const char *name;
    guint16 ports[3];               /* more than one: input byte 0 picks */
    gboolean ms_header;             /* the client's "/multistream/1.0.0" (the heuristic's cue) */
    const char *protocols[MAX_CHOICES];  /* negotiated by both sides; more than one: byte 0 picks */
    const char *pref;               /* a preference "name:value" (prefs_set_pref()), or NULL */
} target_t;

#ifndef FUZZ_KEYLOG
#define FUZZ_KEYLOG ""
#endif
/* items: small enough that a Bitcoin block of a few hundred transactions or a gossipsub RPC of
 * a few dozen messages passes it (tree-room.h keeps half of it for what is drawn after a cut). */
#define ITEMS_MAX "400"

static const target_t targets[] = {
    /* The whole plugin, every entry point (the original harness). */
    { "tcp", { PORT_BITCOIN, PORT_FISCO, PORT_OTHER }, FALSE, { NULL } },
    /* The Bitcoin header and commands (stock dissector's framing replaced by btcc's). */
    { "bitcoin", { PORT_BITCOIN }, FALSE, { NULL } },
    /* The FISCO header, its Snappy payloads, BlockSync and PBFT. */
    { "fisco", { PORT_FISCO }, FALSE, { NULL } },
    /* multistream-select itself: proposals, na, ls, and whatever they select. */
    { "multistream", { PORT_OTHER }, TRUE, { NULL } },
    /* The /plaintext/2.0.0 Exchange (its peer ID and public key; base58 never fed one longer
     * than a peer ID can be), then the multistream-select that follows it. */
    { "plaintext", { PORT_OTHER }, TRUE, { "/plaintext/2.0.0" } },
    { "yamux", { PORT_OTHER }, TRUE, { "/yamux/1.0.0" } },
    { "mplex", { PORT_OTHER }, TRUE, { "/mplex/6.7.0" } },
    /* eth2 req/resp chunks: byte 0 picks the method (the protocol IDs packet-eth2.c registers). */
    { "eth2_reqresp", { PORT_OTHER }, TRUE, {
        "/eth2/beacon_chain/req/status/1/ssz_snappy", "/eth2/beacon_chain/req/status/2/ssz_snappy",
        "/eth2/beacon_chain/req/goodbye/1/ssz_snappy", "/eth2/beacon_chain/req/ping/1/ssz_snappy",
        "/eth2/beacon_chain/req/metadata/1/ssz_snappy", "/eth2/beacon_chain/req/metadata/2/ssz_snappy",
        "/eth2/beacon_chain/req/metadata/3/ssz_snappy", "/eth2/beacon_chain/req/beacon_blocks_by_range/1/ssz_snappy",
        "/eth2/beacon_chain/req/beacon_blocks_by_range/2/ssz_snappy", "/eth2/beacon_chain/req/beacon_blocks_by_root/1/ssz_snappy",
        "/eth2/beacon_chain/req/beacon_blocks_by_root/2/ssz_snappy", "/eth2/beacon_chain/req/blob_sidecars_by_range/1/ssz_snappy",
        "/eth2/beacon_chain/req/blob_sidecars_by_root/1/ssz_snappy", "/eth2/beacon_chain/req/data_column_sidecars_by_range/1/ssz_snappy",
        "/eth2/beacon_chain/req/data_column_sidecars_by_root/1/ssz_snappy", "/eth2/beacon_chain/req/light_client_bootstrap/1/ssz_snappy",
        "/eth2/beacon_chain/req/light_client_updates_by_range/1/ssz_snappy", "/eth2/beacon_chain/req/light_client_finality_update/1/ssz_snappy",
        "/eth2/beacon_chain/req/light_client_optimistic_update/1/ssz_snappy" } },
    { "gossipsub", { PORT_OTHER }, TRUE, { "/meshsub/1.1.0" } },
    /* The compression transport: byte 0 picks the stream codec. */
    { "compression", { PORT_OTHER }, TRUE, {
        "/compression/gzip", "/compression/cbrotli", "/deflate/1.0.0", "/compression/none" } },
    { "noise", { PORT_OTHER }, TRUE, { "/noise" } },
    /* Noise with the keys of its seeds' connection: decryption, and resynchronisation after holes. */
    { "noise_keyed", { PORT_OTHER }, TRUE, { "/noise" }, "libp2p_noise.keylog_file:" FUZZ_KEYLOG },
    /* The certificate extension's SignedKey (DER), one per segment. */
    { "signed_key", { PORT_CERT }, FALSE, { NULL } },
    /* libp2p over QUIC: STREAM frames' data, each QUIC stream a libp2p stream. */
    { "quic", { PORT_QUIC }, FALSE, { NULL } },
    /* gui.max_tree_items passed: Bitcoin, FISCO, gossipsub and Bitswap lists cut (p2pc.tree_cut). */
    { "items", { PORT_BITCOIN, PORT_FISCO, PORT_OTHER }, TRUE, { "/meshsub/1.1.0", "/ipfs/bitswap/1.2.0" },
      "gui.max_tree_items:" ITEMS_MAX },
};

static const target_t *target;
static guint n_ports, n_protocols;

struct packet_provider_data {
    frame_data *frames;
    guint32 count;
};

static frame_data frames[MAX_FRAMES];
static guint8 *bufs[MAX_FRAMES];
static guint32 lens[MAX_FRAMES];
static struct packet_provider_data prov = { frames, 0 };
static print_stream_t *tree_out;
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

/* ---- every decoder call the plugin makes, checked (linked with -Wl,--wrap=NAME) ---- */

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "fuzz_dissect: " __VA_ARGS__); \
                                             fputc('\n', stderr); abort(); } } while (0)

static void
check_decoded(const char *fn, p2pc_dc_status_t st, const guint8 *out, size_t out_len, size_t bound,
              const char *detail)
{
    CHECK(out_len <= bound, "%s returned %zu bytes over its bound %zu (status %s)", fn, out_len, bound,
          p2pc_dc_status_name(st));
    CHECK(out_len == 0 || out != NULL, "%s returned %zu bytes in a NULL buffer", fn, out_len);
    if (st != P2PC_DC_OK)
        CHECK(detail != NULL, "%s failed (%s) without a detail", fn, p2pc_dc_status_name(st));
}

tvbuff_t *__real_p2pc_decompress_tvb(tvbuff_t *, int, int, packet_info *, p2pc_codec_t, size_t, const char *,
                                     p2pc_dc_status_t *, const char **);
tvbuff_t *__wrap_p2pc_decompress_tvb(tvbuff_t *, int, int, packet_info *, p2pc_codec_t, size_t, const char *,
                                     p2pc_dc_status_t *, const char **);
tvbuff_t *
__wrap_p2pc_decompress_tvb(tvbuff_t *tvb, int offset, int len, packet_info *pinfo, p2pc_codec_t codec,
                           size_t bound, const char *tab, p2pc_dc_status_t *status, const char **detail)
{
    tvbuff_t *out = __real_p2pc_decompress_tvb(tvb, offset, len, pinfo, codec, bound, tab, status, detail);
    if (out)
        CHECK(tvb_captured_length(out) <= bound, "p2pc_decompress_tvb returned %u bytes over its bound %zu",
              tvb_captured_length(out), bound);
    else
        CHECK(*detail != NULL, "p2pc_decompress_tvb failed (%s) without a detail", p2pc_dc_status_name(*status));
    return out;
}

p2pc_dc_status_t __real_p2pc_snappy_framed_decode(wmem_allocator_t *, const guint8 *, size_t, size_t, size_t,
                                                  guint8 **, size_t *, size_t *, wmem_array_t *, const char **);
p2pc_dc_status_t __wrap_p2pc_snappy_framed_decode(wmem_allocator_t *, const guint8 *, size_t, size_t, size_t,
                                                  guint8 **, size_t *, size_t *, wmem_array_t *, const char **);
p2pc_dc_status_t
__wrap_p2pc_snappy_framed_decode(wmem_allocator_t *scope, const guint8 *in, size_t in_len, size_t stop_after,
                                 size_t bound, guint8 **out, size_t *out_len, size_t *consumed,
                                 wmem_array_t *chunks, const char **detail)
{
    p2pc_dc_status_t st;
    *out = NULL;
    *out_len = 0;
    *consumed = 0;
    *detail = NULL;
    st = __real_p2pc_snappy_framed_decode(scope, in, in_len, stop_after, bound, out, out_len, consumed,
                                          chunks, detail);
    check_decoded("p2pc_snappy_framed_decode", st, *out, *out_len, bound, *detail);
    CHECK(*consumed <= in_len, "p2pc_snappy_framed_decode consumed %zu of %zu bytes", *consumed, in_len);
    return st;
}

p2pc_dc_status_t __real_p2pc_stream_feed(p2pc_stream_t *, const guint8 *, size_t, size_t, wmem_allocator_t *,
                                         guint8 **, size_t *, const char **);
p2pc_dc_status_t __wrap_p2pc_stream_feed(p2pc_stream_t *, const guint8 *, size_t, size_t, wmem_allocator_t *,
                                         guint8 **, size_t *, const char **);
p2pc_dc_status_t
__wrap_p2pc_stream_feed(p2pc_stream_t *s, const guint8 *in, size_t in_len, size_t bound,
                        wmem_allocator_t *scope, guint8 **out, size_t *out_len, const char **detail)
{
    p2pc_dc_status_t st;
    *detail = NULL;
    st = __real_p2pc_stream_feed(s, in, in_len, bound, scope, out, out_len, detail);
    check_decoded("p2pc_stream_feed", st, *out, *out_len, bound, *detail);
    return st;
}

/* ---- dissect_signed_key: a segment handed to the certificate extension's dissector ---- */

static int proto_cert_ext = -1;

static int
dissect_cert_ext(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    return call_ber_oid_callback(LIBP2P_TLS_OID, tvb, 0, pinfo, tree, data);
}

static void
register_cert_ext(void)
{
    proto_cert_ext = proto_register_protocol("p2pc fuzz: certificate extension", "p2pc_fuzz_cert_ext",
                                             "p2pc_fuzz_cert_ext");
}

static void
handoff_cert_ext(void)
{
    dissector_add_uint("tcp.port", PORT_CERT, create_dissector_handle(dissect_cert_ext, proto_cert_ext));
}

/* ---- dissect_quic: a segment handed to the libp2p QUIC stream dissector as QUIC would ---- */

static int proto_quic_stream = -1;
static int hf_quic_stream_fin = -1;     /* Wireshark's QUIC's quic.stream.fin */
static dissector_handle_t l2p_quic;

static int
dissect_quic_stream(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    quic_stream_info si = { 0 };
    guint len = tvb_captured_length(tvb);

    if (len < 5)
        return len;
    si.stream_id = tvb_get_uint8(tvb, 0);
    si.stream_offset = si.offset = tvb_get_ntohl(tvb, 1) & 0x7fffffff;
    if (tvb_get_uint8(tvb, 1) & 0x80) {
        /* The STREAM frame type with its FIN bit set (RFC 9000 19.8: 0x08 | FIN 0x01). */
        static const guint8 stream_fin = 0x09;
        proto_tree_add_item(tree, hf_quic_stream_fin, tvb_new_child_real_data(tvb, &stream_fin, 1, 1), 0, 1, ENC_NA);
    }
    /* The connection's conversation stands for QUIC's per-connection state: only its
     * address is used, as the key of the connection's streams. */
    si.quic_info = (struct quic_info_data *)find_or_create_conversation(pinfo);
    si.from_server = pinfo->srcport == PORT_QUIC;
    call_dissector_with_data(l2p_quic, tvb_new_subset_remaining(tvb, 5), pinfo, tree, &si);
    return len;
}

static void
register_quic_stream(void)
{
    proto_quic_stream = proto_register_protocol("p2pc fuzz: QUIC STREAM frames", "p2pc_fuzz_quic_stream",
                                                "p2pc_fuzz_quic_stream");
}

static void
handoff_quic_stream(void)
{
    l2p_quic = find_dissector("libp2p_quic");
    CHECK(l2p_quic, "no dissector libp2p_quic");
    hf_quic_stream_fin = proto_registrar_get_id_byname("quic.stream.fin");
    CHECK(hf_quic_stream_fin > 0, "no field quic.stream.fin");
    dissector_add_uint("tcp.port", PORT_QUIC, create_dissector_handle(dissect_quic_stream, proto_quic_stream));
}

/* ---- the preamble: the target's multistream-select negotiation ---- */

static GByteArray *preamble;        /* sent by the client, then echoed by the server */

/* One multistream-select message: uvarint(len(text) + 1) || text || '\n'. */
static void
ms_line(GByteArray *to, const char *text)
{
    size_t n = strlen(text) + 1;
    guint8 len = (guint8)n;
    CHECK(n < 0x80, "protocol ID %s too long for a one-byte length", text);
    g_byte_array_append(to, &len, 1);
    g_byte_array_append(to, (const guint8 *)text, (guint)n - 1);
    g_byte_array_append(to, (const guint8 *)"\n", 1);
}

static void
init_target(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(targets); i++)
        if (!strcmp(targets[i].name, STR(FUZZ_TARGET)))
            target = &targets[i];
    CHECK(target, "no target %s", STR(FUZZ_TARGET));
    while (n_ports < G_N_ELEMENTS(target->ports) && target->ports[n_ports])
        n_ports++;
    while (n_protocols < MAX_CHOICES && target->protocols[n_protocols])
        n_protocols++;
    for (guint i = 0; i < n_protocols; i++) {
        /* Each protocol ID must reach its own dissector, not the catch-all. */
        dissector_handle_t h = l2p_handle_for(target->protocols[i]);
        CHECK(h && h != find_dissector("libp2p_app"), "%s: %s selects no dissector of its own",
              target->name, target->protocols[i]);
    }
    preamble = g_byte_array_new();
    if (target->pref) {
        char *pref = g_strdup(target->pref), *err = NULL;     /* prefs_set_pref() writes in it */
        CHECK(prefs_set_pref(pref, &err) == PREFS_SET_OK, "%s: %s", target->pref, err ? err : "not set");
        prefs_apply_all();
        g_free(pref);
    }
}

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
    if (!strcmp(STR(FUZZ_TARGET), "signed_key")) {
        static const proto_plugin cert_ext = { register_cert_ext, handoff_cert_ext };
        proto_register_plugin(&cert_ext);
    }
    if (!strcmp(STR(FUZZ_TARGET), "quic")) {
        static const proto_plugin quic_stream = { register_quic_stream, handoff_quic_stream };
        proto_register_plugin(&quic_stream);
    }
    if (!epan_init(NULL, NULL, FALSE)) {
        fprintf(stderr, "fuzz_dissect: epan_init failed\n");
        abort();
    }
    prefs_p = epan_load_settings();
    (void)prefs_p;
    /* Stock dissectors with a dissector bug of their own on these inputs, off as fuzzshark turns
     * off the ones its runs must not meet (its FUZZSHARK_DISABLE): each was reproduced with
     * stock tshark -2 -V, no p2pc loaded, and its input kept in regressions/.
     * jxta: 4.0's TCP heuristic, given a "JXTAHELLO" welcome then other bytes, returns "not mine"
     * with the desegment request changed (packet-tcp.c's assertion in decode_tcp_ports).
     * ceph: 4.0's heuristic, given a "ceph v" banner in a later segment, claims on the second
     * pass frames it kept no state for on the first (packet-ceph.c:1521, "Frame visited, but no
     * saved state"). */
    for (size_t i = 0; i < G_N_ELEMENTS(upstream_buggy); i++)
        proto_disable_proto_by_name(upstream_buggy[i]);
    for (size_t i = 0; i < G_N_ELEMENTS(p2pc_protos_expected); i++)
        if (proto_get_id_by_filter_name(p2pc_protos_expected[i]) < 0) {
            fprintf(stderr, "fuzz_dissect: protocol %s is not registered\n", p2pc_protos_expected[i]);
            abort();
        }
    init_target();
    /* FUZZ_PRINT=1: the second pass's trees go to stdout (to see what an input reaches). */
    null = getenv("FUZZ_PRINT") ? stdout : fopen("/dev/null", "w");
    tree_out = print_stream_text_stdio_new(null);
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
        /* The first pass as tshark's with p2pc: its postdissector asks for fields, so tshark
         * builds a (hidden) tree for every frame and primes it with them. */
        epan_dissect_init(&edt, session, second_pass || postdissectors_want_hfids(), second_pass);
        if (!second_pass)
            prime_epan_dissect_with_postdissector_wanted_hfids(&edt);
        epan_dissect_run(&edt, WTAP_FILE_TYPE_SUBTYPE_UNKNOWN, &rec,
                         tvb_new_real_data(bufs[i], lens[i], lens[i]), fd, NULL);
        if (second_pass)
            proto_tree_print(print_dissections_expanded, TRUE, &edt, NULL, tree_out);
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
    size_t pos = 0;
    guint choice = 0;

    if (n_ports > 1 || n_protocols > 1) {
        if (size < 1)
            return 0;
        choice = data[pos++];
    }
    dport = target->ports[choice % n_ports];
    prov.count = 0;
    add_frame(0, sport, dport, seq[0]++, 0, 0x02, NULL, 0);                 /* SYN */
    add_frame(1, dport, sport, seq[1]++, seq[0], 0x12, NULL, 0);            /* SYN-ACK */
    add_frame(0, sport, dport, seq[0], seq[1], 0x10, NULL, 0);              /* ACK */
    if (target->ms_header && dport == PORT_OTHER) {
        /* The client's header and proposal in one write (as go-libp2p sends them); the
         * server's header and echo: the connection now speaks the proposed protocol. */
        g_byte_array_set_size(preamble, 0);
        ms_line(preamble, L2P_MULTISTREAM_HEADER);
        if (n_protocols)
            ms_line(preamble, target->protocols[choice % n_protocols]);
        add_frame(0, sport, dport, seq[0], seq[1], 0x18, preamble->data, preamble->len);
        seq[0] += preamble->len;
        if (n_protocols) {
            add_frame(1, dport, sport, seq[1], seq[0], 0x18, preamble->data, preamble->len);
            seq[1] += preamble->len;
        }
    }
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
