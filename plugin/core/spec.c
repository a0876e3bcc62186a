/* spec.c
 * Conformance checks on the wire (spec.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/spec.h"

#include <epan/expert.h>

static expert_field ei_spec_varint = EI_INIT;

void
p2pc_spec_varint(tvbuff_t *tvb, int offset, guint len, packet_info *pinfo, proto_item *item)
{
    if (len > 1 && tvb_get_uint8(tvb, offset + (int)len - 1) == 0)
        expert_add_info_format(pinfo, item, &ei_spec_varint,
                               "Non-canonical varint: %u bytes where fewer would do (multiformats "
                               "unsigned-varint: \"integers are minimally encoded\")", len);
}

void
p2pc_spec_register(int proto)
{
    static ei_register_info ei[] = {
        { &ei_spec_varint, { "p2pc.spec.varint", PI_PROTOCOL, PI_WARN,
            "A varint longer than its value needs (multiformats unsigned-varint: \"integers are "
            "minimally encoded\"); decoded all the same", EXPFILL } },
    };
    expert_register_field_array(expert_register_protocol(proto), ei, array_length(ei));
}
