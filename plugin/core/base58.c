/* base58.c
 * base58btc encoding (draft-msporny-base58; the Bitcoin alphabet).  Wireshark 4.0 exports no
 * base58 encoder in its public API, and people know libp2p peer IDs only in this form, so p2pc
 * has its own: the schoolbook base conversion, quadratic in the input, which is fine for peer
 * IDs (at most 44 bytes); longer input is refused (P2PC_BASE58_MAX).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/base58.h"

#include <string.h>

static const char b58_alphabet[] = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

char *
p2pc_base58_encode(wmem_allocator_t *scope, const guint8 *data, size_t len)
{
    size_t zeros = 0, size, high, i;
    guint8 *digits;
    char *out;

    if (len > P2PC_BASE58_MAX)
        return NULL;
    while (zeros < len && data[zeros] == 0)
        zeros++;
    /* log(256) / log(58) < 1.37: enough base-58 digits for the remaining bytes. */
    size = (len - zeros) * 138 / 100 + 1;
    digits = (guint8 *)wmem_alloc0(NULL, size);
    high = size;                        /* digits[high..size) hold the number so far */
    for (i = zeros; i < len; i++) {
        guint carry = data[i];
        size_t j = size;
        while (j > high || carry) {
            j--;
            carry += 256u * digits[j];
            digits[j] = (guint8)(carry % 58);
            carry /= 58;
        }
        high = j;
    }
    out = (char *)wmem_alloc(scope, zeros + (size - high) + 1);
    memset(out, '1', zeros);
    for (i = 0; high + i < size; i++)
        out[zeros + i] = b58_alphabet[digits[high + i]];
    out[zeros + i] = '\0';
    wmem_free(NULL, digits);
    return out;
}
