/* p2pc-compat.h
 * The one place where Wireshark version differences live (4.0 → 4.2 → 4.4 → 4.6), so the
 * dissectors are written once against the newer names.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_COMPAT_H
#define P2PC_COMPAT_H

#include <wireshark.h>
#include <ws_version.h>
#include <epan/packet.h>
#include <epan/proto.h>
#include <epan/tap.h>
#include <wsutil/pint.h>

#define P2PC_VERSION "0.1.0"

#define P2PC_WS_AT_LEAST(maj, min) \
    (WIRESHARK_VERSION_MAJOR > (maj) || \
     (WIRESHARK_VERSION_MAJOR == (maj) && WIRESHARK_VERSION_MINOR >= (min)))

/* 4.4 renamed the glib-typed accessors; 4.0 only has the old names. */
#if !P2PC_WS_AT_LEAST(4, 2)
#define tvb_get_uint8  tvb_get_guint8
#define tvb_get_uint16 tvb_get_guint16
#define tvb_get_uint24 tvb_get_guint24
#define tvb_get_uint32 tvb_get_guint32
#define tvb_get_uint64 tvb_get_guint64
#define tvb_get_int8   tvb_get_gint8
#define tvb_get_int16  tvb_get_gint16
#define tvb_get_int32  tvb_get_gint32
#define tvb_find_uint8 tvb_find_guint8
#endif

/* 4.6 renamed the unaligned big-endian readers. */
#if !P2PC_WS_AT_LEAST(4, 6)
#define pntohu16 pntoh16
#define pntohu24 pntoh24
#define pntohu32 pntoh32
#define pntohu64 pntoh64
#define pletohu16 pletoh16
#define pletohu24 pletoh24
#define pletohu32 pletoh32
#define pletohu64 pletoh64
#endif

/* format_text() (a string made printable for the tree): epan/strutil.h taking a guchar * in
 * 4.0, wsutil/str_util.h taking a char * from 4.2. */
#if P2PC_WS_AT_LEAST(4, 2)
#include <wsutil/str_util.h>
#define p2pc_format_text(scope, s) format_text((scope), (s), strlen(s))
#else
#include <epan/strutil.h>
#define p2pc_format_text(scope, s) format_text((scope), (const guchar *)(s), strlen(s))
#endif

/* An unsigned integer field's value (another dissector's, read from the tree): a field_info holds
 * its fvalue_t in 4.0 and a pointer to one from 4.2. */
#if P2PC_WS_AT_LEAST(4, 2)
#define p2pc_field_uint(fi) fvalue_get_uinteger((fi)->value)
#define p2pc_field_uint64(fi) fvalue_get_uinteger64((fi)->value)
#else
#define p2pc_field_uint(fi) fvalue_get_uinteger(&(fi)->value)
#define p2pc_field_uint64(fi) fvalue_get_uinteger64(&(fi)->value)
#endif

/* Wireshark 4.4 parses segwit transactions in its own bitcoin `tx` handler; 4.0 does not
 * (a segwit tx ends in "Malformed Packet"), so there we show our own walker's view instead. */
#define P2PC_STOCK_BITCOIN_SEGWIT P2PC_WS_AT_LEAST(4, 4)

/* String dissector tables: 4.2+ name the case flag; 0 is case sensitive in every version. */
#ifdef STRING_CASE_SENSITIVE
#define P2PC_STRING_CASE_SENSITIVE STRING_CASE_SENSITIVE
#else
#define P2PC_STRING_CASE_SENSITIVE 0
#endif

/* Preference booleans, heuristic dissector results, wmem user callbacks (wmem_user_cb_t), UAT
 * record and field checks (uat_update_cb_t, uat_fld_chk_cb_t) and the flags
 * get_ber_identifier() / get_ber_length() return: gboolean in 4.0, bool from 4.2. */
#if P2PC_WS_AT_LEAST(4, 2)
typedef bool p2pc_bool_t;
#else
typedef gboolean p2pc_bool_t;
#endif

/* A stat_tap_ui init callback (-z NAME,...) returns void up to 4.4 and bool (started) from 4.6. */
#if P2PC_WS_AT_LEAST(4, 6)
typedef bool p2pc_tap_init_t;
#define P2PC_TAP_INIT_STARTED return true
#else
typedef void p2pc_tap_init_t;
#define P2PC_TAP_INIT_STARTED return
#endif

/* Whether the program that runs the dissection still holds frame `num` (an earlier one) in its
 * frame store.  Wireshark, sharkd and tshark -2 keep every frame they read and dissect frames
 * again later; tshark's one pass keeps none but the reference, the previous captured and the
 * previous displayed frame, and never dissects a frame twice.  No exported call asks the store
 * (epan_get_frame_ts is internal in every version up to 4.6), but frame_data_compare() with
 * COL_DELTA_TIME asks it for the frame before each argument's number.  What it does with a frame
 * that is not there differs:
 *   - 4.0 to 4.4: the delta is 0 (4.0 also logs a warning);
 *   - 4.6: there is no delta, and two missing deltas compare equal; a frame_data without has_ts
 *     has none either, so a probe must set it.
 * Two probes for the same frame, one stamped 2^40 s before any capture and one 2^40 s after,
 * compare below 0 when the frame is there (the early one's delta is the smaller) and equal when
 * it is not, on every version: no #if needed.  The log hears nothing of the expected miss. */
#include <string.h>
#include <epan/column-utils.h>
#include <epan/frame_data.h>
#include <wsutil/wslog.h>

static inline gboolean
p2pc_session_has_frame(const struct epan_session *epan, guint32 num)
{
    frame_data early, late;
    enum ws_log_level level = ws_log_get_level();
    int order;

    memset(&early, 0, sizeof early);
    early.num = num + 1;
    early.has_ts = 1;
    late = early;
    early.abs_ts.secs = -((time_t)1 << 40);
    late.abs_ts.secs = (time_t)1 << 40;
    ws_log_set_level(LOG_LEVEL_CRITICAL);
    order = frame_data_compare(epan, &early, &late, COL_DELTA_TIME);
    ws_log_set_level(level);
    return order < 0;
}

/* TCP's per-frame analysis flags (struct tcp_acked's `flags`) that its retransmission items
 * read: packet-tcp.c's TCP_A_RETRANSMISSION, TCP_A_FAST_RETRANSMISSION and
 * TCP_A_SPURIOUS_RETRANSMISSION, which no header exports (the same values 4.0 to 4.6). */
#define P2PC_TCP_A_RETRANSMITTED (0x0001 | 0x0400 | 0x4000)

/* Which Wireshark major.minor the plugin was built for, as a string `p2pc doctor` finds in the
 * file: a plugin loads only into the version it was built for. */
#define P2PC_BUILT_FOR_MARKER                                                   \
    WS_DLL_PUBLIC_DEF const char p2pc_built_for[] = "p2pc-built-for-wireshark=" \
        G_STRINGIFY(WIRESHARK_VERSION_MAJOR) "." G_STRINGIFY(WIRESHARK_VERSION_MINOR);

/* The body both registration styles share: every protocol, then every tap. */
#define P2PC_REGISTER_ALL(protos, nprotos, taps, ntaps)                         \
    {                                                                           \
        for (size_t i = 0; i < (nprotos); i++)                                  \
            proto_register_plugin(&(protos)[i]);                                \
        for (size_t i = 0; i < (size_t)(ntaps); i++)                            \
            tap_register_plugin(&(taps)[i]);                                    \
    }

/* Plugin entry points: plugin_version, plugin_want_major/minor and plugin_register() in every
 * supported version; 4.2 adds plugin_describe().  (The struct ws_module registration of
 * Wireshark's development tree is not in any release up to 4.6: 4.6.9's plugins.h has none.) */
#if P2PC_WS_AT_LEAST(4, 2)
#include <wsutil/plugins.h>
#define P2PC_PLUGIN_DESCRIBE                                                    \
    WS_DLL_PUBLIC uint32_t plugin_describe(void);                               \
    uint32_t plugin_describe(void) { return WS_PLUGIN_DESC_DISSECTOR | WS_PLUGIN_DESC_TAP_LISTENER; }
#else
#define P2PC_PLUGIN_DESCRIBE
#endif
#define P2PC_PLUGIN_ENTRY(protos, nprotos, taps, ntaps)                         \
    WS_DLL_PUBLIC_DEF const gchar plugin_version[] = P2PC_VERSION;              \
    WS_DLL_PUBLIC_DEF const int plugin_want_major = WIRESHARK_VERSION_MAJOR;    \
    WS_DLL_PUBLIC_DEF const int plugin_want_minor = WIRESHARK_VERSION_MINOR;    \
    WS_DLL_PUBLIC void plugin_register(void);                                   \
    void plugin_register(void)                                                  \
    P2PC_REGISTER_ALL(protos, nprotos, taps, ntaps)                             \
    P2PC_PLUGIN_DESCRIBE                                                        \
    P2PC_BUILT_FOR_MARKER

#endif /* P2PC_COMPAT_H */
