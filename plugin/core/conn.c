/* conn.c
 * A connection's state, carried over session resets (conn.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/conn.h"

#include <epan/conversation.h>
#include <epan/prefs.h>
#include <epan/dissectors/packet-tcp.h>

/* What a connection's own pool costs besides what its parts charge (structures, pipes, the
 * pool's own bookkeeping): counted against the budget for every carried connection. */
#define CONN_BASE_COST (64 * 1024)
/* Connections whose state was dropped, remembered (their endpoints and why, about 100 bytes
 * each, outside the budget) so that their bytes are counted with the reason: the most recently
 * used this many. */
#define DROPPED_MAX 65536

struct p2pc_conn {
    wmem_allocator_t *pool;
    void *slot[P2PC_SLOTS];
    /* Carry mode only: */
    address addr[2];            /* the endpoints, in the order of conn_key() */
    guint32 port[2];
    gboolean carry, stay, ended;
    gboolean retired;           /* a new connection took its endpoints (on the retired list) */
    gboolean goes_on;           /* at a reset: the budget's choice (decide()) */
    const char *dropped;        /* why a reset dropped its state (conn.h) */
    guint had;                  /* the slots filled before that (1 << slot) */
    gint64 charged;
    guint64 used;               /* when it was last looked up (use_clock) */
};

static guint pref_live_state_mib;
static guint session;
static guint decided = G_MAXUINT;   /* the session whose end decide() chose for */
static guint64 use_clock;
/* This session's connections: conversation_t * -> p2pc_conn_t *. */
static wmem_map_t *by_conv;
/* Carry mode: every connection of this session and those carried into it, by endpoints
 * (p2pc_conn_t * -> itself, hashed and compared by conn_hash()/conn_equal()). */
static GHashTable *carried;
/* Carry mode: connections whose endpoints a new connection took in this session, freed at its
 * end (frames of this session may still point at them). */
static GSList *retired;
static GSList *free_fns;
static GSList *retire_fns;
static p2pc_conn_carried_fn carried_fn;
static guint32 carried_slots;     /* the slots some connection carried into this session fills */

gboolean
p2pc_conn_carry_mode(void)
{
    return pref_live_state_mib > 0;
}

static guint
conn_hash(gconstpointer k)
{
    const p2pc_conn_t *c = (const p2pc_conn_t *)k;
    guint h = add_address_to_hash(0, &c->addr[0]);
    h = add_address_to_hash(h, &c->addr[1]);
    return h ^ (c->port[0] << 16) ^ c->port[1];
}

static gboolean
conn_equal(gconstpointer a, gconstpointer b)
{
    const p2pc_conn_t *x = (const p2pc_conn_t *)a, *y = (const p2pc_conn_t *)b;
    return x->port[0] == y->port[0] && x->port[1] == y->port[1] &&
           addresses_equal(&x->addr[0], &y->addr[0]) && addresses_equal(&x->addr[1], &y->addr[1]);
}

/* The frame's endpoints in one order whichever side sent it (shallow copies). */
static void
conn_key(const packet_info *pinfo, p2pc_conn_t *key)
{
    int cmp = cmp_address(&pinfo->src, &pinfo->dst);
    gboolean src_first = cmp < 0 || (cmp == 0 && pinfo->srcport <= pinfo->destport);
    copy_address_shallow(&key->addr[src_first ? 0 : 1], &pinfo->src);
    copy_address_shallow(&key->addr[src_first ? 1 : 0], &pinfo->dst);
    key->port[src_first ? 0 : 1] = pinfo->srcport;
    key->port[src_first ? 1 : 0] = pinfo->destport;
}

/* Its state goes (its parts' first, for what they keep outside the pool). */
static void
state_free(p2pc_conn_t *c)
{
    for (GSList *l = free_fns; l; l = l->next)
        ((p2pc_conn_free_fn)l->data)(c);
    wmem_destroy_allocator(c->pool);
}

/* Only its endpoints stay, for the session that follows: why (conn.h, p2pc_conn_dropped()). */
static void
state_drop(p2pc_conn_t *c, const char *why)
{
    for (int i = 0; i < P2PC_SLOTS; i++)
        if (c->slot[i])
            c->had |= 1u << i;
    state_free(c);
    c->pool = wmem_allocator_new(WMEM_ALLOCATOR_SIMPLE);
    memset(c->slot, 0, sizeof c->slot);
    c->dropped = why;
    c->stay = c->carry = FALSE;
    c->charged = 0;
}

static void
conn_free(gpointer data)
{
    p2pc_conn_t *c = (p2pc_conn_t *)data;
    state_free(c);
    free_address(&c->addr[0]);
    free_address(&c->addr[1]);
    g_free(c);
}

int
p2pc_conn_dir(const address *first, guint32 first_port, const packet_info *pinfo)
{
    return (addresses_equal(first, &pinfo->src) && first_port == pinfo->srcport) ? 0 : 1;
}

gboolean
p2pc_conn_start_seen(packet_info *pinfo)
{
    conversation_t *conv = pinfo->ptype == PT_TCP ? find_conversation_pinfo(pinfo, 0) : NULL;
    struct tcp_analysis *tcpd = conv ? get_tcp_conversation_data(conv, pinfo) : NULL;
    return tcpd && !nstime_is_zero(&tcpd->ts_mru_syn);
}

/* A new connection took c's endpoints: its parts keep what it holds for the capture's end, and
 * it is freed at the end of this session. */
static void
retire(p2pc_conn_t *c)
{
    c->retired = TRUE;
    for (GSList *l = retire_fns; l; l = l->next)
        ((p2pc_conn_free_fn)l->data)(c);
    retired = g_slist_prepend(retired, c);
}

/* This session's connection of the frame's conversation, or one carried into this session
 * (attached to the conversation now). */
static p2pc_conn_t *
conn_of(packet_info *pinfo, conversation_t *conv)
{
    p2pc_conn_t *c = (p2pc_conn_t *)wmem_map_lookup(by_conv, conv), key;

    if (!c && p2pc_conn_carry_mode() && g_hash_table_size(carried)) {
        conn_key(pinfo, &key);
        c = (p2pc_conn_t *)g_hash_table_lookup(carried, &key);
        if (c && p2pc_conn_start_seen(pinfo)) {  /* a new connection: the endpoints' earlier one ends */
            g_hash_table_steal(carried, c);
            retire(c);
            c = NULL;
        }
        if (c)
            wmem_map_insert(by_conv, conv, c);
    }
    if (c)
        c->used = ++use_clock;
    return c;
}

p2pc_conn_t *
p2pc_conn_find(packet_info *pinfo)
{
    conversation_t *conv = find_conversation_pinfo(pinfo, 0);
    return conv ? conn_of(pinfo, conv) : NULL;
}

p2pc_conn_t *
p2pc_conn_get(packet_info *pinfo)
{
    conversation_t *conv = find_or_create_conversation(pinfo);
    p2pc_conn_t *c = conn_of(pinfo, conv), key;
    gpointer old;

    if (!c) {
        if (p2pc_conn_carry_mode()) {
            c = g_new0(p2pc_conn_t, 1);
            c->pool = wmem_allocator_new(WMEM_ALLOCATOR_SIMPLE);
            conn_key(pinfo, &key);
            for (int i = 0; i < 2; i++) {
                copy_address(&c->addr[i], &key.addr[i]);
                c->port[i] = key.port[i];
            }
            if (g_hash_table_steal_extended(carried, c, &old, NULL))    /* an earlier one, in this session */
                retire((p2pc_conn_t *)old);
            g_hash_table_add(carried, c);
        } else {
            c = wmem_new0(wmem_file_scope(), p2pc_conn_t);
            c->pool = wmem_file_scope();
        }
        wmem_map_insert(by_conv, conv, c);
        c->used = ++use_clock;
    }
    return c;
}

wmem_allocator_t *
p2pc_conn_pool(const p2pc_conn_t *c)
{
    return c->pool;
}

void *
p2pc_conn_slot(const p2pc_conn_t *c, p2pc_conn_slot_t slot)
{
    return c->slot[slot];
}

void
p2pc_conn_set_slot(p2pc_conn_t *c, p2pc_conn_slot_t slot, void *data)
{
    c->slot[slot] = data;
}

void *
p2pc_conn_state(packet_info *pinfo, p2pc_conn_slot_t slot, size_t size, gboolean *made)
{
    p2pc_conn_t *c = p2pc_conn_get(pinfo);
    void *state = c->slot[slot];

    if (made)
        *made = !state;
    if (!state)
        state = c->slot[slot] = wmem_alloc0(c->pool, size);
    return state;
}

guint
p2pc_conn_session(void)
{
    return session;
}

void
p2pc_conn_carry(p2pc_conn_t *c)
{
    c->carry = !c->dropped;     /* what was dropped does not come back */
}

const char *
p2pc_conn_dropped(const p2pc_conn_t *c)
{
    return c->dropped;
}

gboolean
p2pc_conn_had(const p2pc_conn_t *c, p2pc_conn_slot_t slot)
{
    return (c->had >> slot) & 1;
}

void
p2pc_conn_stay(p2pc_conn_t *c)
{
    c->stay = TRUE;
}

void
p2pc_conn_ended(p2pc_conn_t *c)
{
    c->ended = TRUE;
}

void
p2pc_conn_charge(p2pc_conn_t *c, gint64 bytes)
{
    c->charged += bytes;
}

void
p2pc_conn_on_free(p2pc_conn_free_fn fn)
{
    free_fns = g_slist_append(free_fns, (gpointer)fn);
}

void
p2pc_conn_on_retire(p2pc_conn_free_fn fn)
{
    retire_fns = g_slist_append(retire_fns, (gpointer)fn);
}

void
p2pc_conn_on_carried(p2pc_conn_carried_fn fn)
{
    carried_fn = fn;
}

static gint
more_recent_first(gconstpointer a, gconstpointer b)
{
    guint64 x = (*(p2pc_conn_t *const *)a)->used, y = (*(p2pc_conn_t *const *)b)->used;
    return x > y ? -1 : x < y;
}

/* At the end of a session (a reset, or the file's): the connections that go on, most recently
 * used first, while they fit in the budget (goes_on), once per session. */
static void
decide(void)
{
    GPtrArray *order;
    guint64 budget = (guint64)pref_live_state_mib << 20, spent = 0;
    GHashTableIter it;
    gpointer k;

    if (decided == session)
        return;
    decided = session;
    order = g_ptr_array_new();
    g_hash_table_iter_init(&it, carried);
    while (g_hash_table_iter_next(&it, &k, NULL)) {
        p2pc_conn_t *c = (p2pc_conn_t *)k;
        c->goes_on = FALSE;
        if (p2pc_conn_carry_mode() && c->carry && !c->stay && !c->ended)
            g_ptr_array_add(order, c);
    }
    g_ptr_array_sort(order, more_recent_first);
    for (guint i = 0; i < order->len; i++) {
        p2pc_conn_t *c = (p2pc_conn_t *)g_ptr_array_index(order, i);
        guint64 cost = CONN_BASE_COST + (guint64)MAX(c->charged, 0);
        if (spent + cost <= budget) {
            spent += cost;
            c->goes_on = TRUE;
        }
    }
    g_ptr_array_free(order, TRUE);
}

gboolean
p2pc_conn_goes_on(const p2pc_conn_t *c)
{
    decide();
    return c->goes_on && !c->retired;
}

gboolean
p2pc_conn_retired(const p2pc_conn_t *c)
{
    return c->retired;
}

const char *
p2pc_conn_cut(const p2pc_conn_t *c)
{
    if (c->ended || c->retired || p2pc_conn_goes_on(c))
        return NULL;
    if (c->dropped)             /* at an earlier reset, and not carried since */
        return c->dropped;
    return p2pc_conn_carry_mode() && c->carry && !c->stay ? "evicted" : "reset";
}

/* The session ends: the connections decide() chose go on; the others' state is dropped (their
 * endpoints stay, the most recently used DROPPED_MAX); the ones that ended, and those no part
 * asked to carry, are freed. */
static void
conns_session_end(void)
{
    GPtrArray *dropped;
    GHashTableIter it;
    gpointer k;
    guint32 slots = 0;

    decide();
    g_slist_free_full(retired, conn_free);
    retired = NULL;
    dropped = g_ptr_array_new();
    g_hash_table_iter_init(&it, carried);
    while (g_hash_table_iter_next(&it, &k, NULL)) {
        p2pc_conn_t *c = (p2pc_conn_t *)k;
        if (c->goes_on) {
            for (int slot = 0; slot < P2PC_SLOTS; slot++)
                slots |= (guint32)(c->slot[slot] != NULL) << slot;
            if (carried_fn)
                carried_fn(&c->addr[0], c->port[0], &c->addr[1], c->port[1]);
        } else if (!p2pc_conn_carry_mode() || c->ended || (!c->carry && !c->dropped)) {
            g_hash_table_iter_remove(&it);
        } else {
            /* Evicted, or its state is not p2pc's (stay), or dropped at an earlier reset: what
             * this session kept of it goes. */
            state_drop(c, c->carry ? (c->stay ? "reset" : "evicted") : c->dropped);
            g_ptr_array_add(dropped, c);
        }
    }
    g_ptr_array_sort(dropped, more_recent_first);
    for (guint i = DROPPED_MAX; i < dropped->len; i++)
        g_hash_table_remove(carried, g_ptr_array_index(dropped, i));
    g_ptr_array_free(dropped, TRUE);
    carried_slots = slots;
    session++;
}

gboolean
p2pc_conn_tail_now(const p2pc_conn_t *c, gboolean at_reset, const char **why)
{
    *why = at_reset ? "reset" : NULL;
    if (c && c->retired)
        return FALSE;
    return !(at_reset && c && !(*why = p2pc_conn_cut(c)) && p2pc_conn_goes_on(c));
}

gboolean
p2pc_conn_carried_any(p2pc_conn_slot_t slot)
{
    return (carried_slots >> slot) & 1;
}

void
p2pc_conn_register(module_t *module)
{
    prefs_register_uint_preference(module, "live_state_mib", "State carried over session resets (MiB)",
        "0 (the default): a session reset (tshark -M) forgets every connection, as a new file does. "
        "Above 0: the libp2p, Bitcoin and FISCO connections open at a reset go on decoding in the next "
        "session where they stopped, the most recently used first, as long as their state fits in this many MiB; "
        "the others are forgotten. Only for one packet stream that goes on across the resets: "
        "p2pc live sets it", 10, &pref_live_state_mib);
    by_conv = wmem_map_new_autoreset(wmem_epan_scope(), wmem_file_scope(), g_direct_hash, g_direct_equal);
    carried = g_hash_table_new_full(conn_hash, conn_equal, conn_free, NULL);
    register_cleanup_routine(conns_session_end);
}
