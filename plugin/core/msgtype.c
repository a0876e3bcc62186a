/* msgtype.c
 * A record's msg_type: the protocol's own name or "unknown" (msgtype.h says why).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/msgtype.h"

#include <epan/expert.h>

static expert_field ei_unknown_msg_type = EI_INIT;

void
p2pc_msg_type_register(int proto)
{
    static ei_register_info ei[] = {
        { &ei_unknown_msg_type, { "p2pc.unknown_msg_type", PI_UNDECODED, PI_NOTE,
            "Not a message type of the protocol: counted as unknown", EXPFILL } },
    };

    expert_register_field_array(expert_register_protocol(proto), ei, array_length(ei));
}

const char *
p2pc_msg_type_unknown(packet_info *pinfo, proto_item *item, const char *fmt, ...)
{
    va_list ap;
    char *what;

    va_start(ap, fmt);
    what = wmem_strdup_vprintf(pinfo->pool, fmt, ap);
    va_end(ap);
    expert_add_info_format(pinfo, item, &ei_unknown_msg_type,
                           "%s is not a message type of the protocol: counted as unknown", what);
    return P2PC_MSG_TYPE_UNKNOWN;
}

const char *
p2pc_msg_type_of(packet_info *pinfo, proto_item *item, const char *name, const string_string *names)
{
    const char *known = try_str_to_str(name, names);
    return known ? known : p2pc_msg_type_unknown(pinfo, item, "\"%s\"", name);
}
