/* keys.bpf.c
 * Entry uprobes on an unmodified Go program that read the session keys its libp2p connections
 * make, as they are made (docs/libp2p-decryption.md, "Keys from a running node").
 *
 * Also OpenSSL's libssl, dynamically linked into any program (openssl_keys below): C passes its
 * first argument in a register too (rdi on amd64, x0 on arm64).
 *
 * Go passes arguments in registers (the internal ABI, Go 1.17+ on amd64 and arm64: AX, BX, CX,
 * DI, SI, R8, R9, R10, R11 on amd64; R0-R15 on arm64), a string as (pointer, length) and a slice
 * as (pointer, length, capacity).  Only entry probes: a return probe rewrites the return address
 * on a goroutine stack that Go may move, which crashes the traced program.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>

/* The n-th integer argument register of Go's internal ABI. */
#if defined(__TARGET_ARCH_x86)
#define GO_ARG1(r) ((r)->rax)
#define GO_ARG2(r) ((r)->rbx)
#define GO_ARG3(r) ((r)->rcx)
#define GO_ARG4(r) ((r)->rdi)
#define GO_ARG5(r) ((r)->rsi)
#define GO_ARG7(r) ((r)->r9)
#define GO_ARG8(r) ((r)->r10)
#define C_ARG1(r) ((r)->rdi)
#elif defined(__TARGET_ARCH_arm64)
#define GO_REG(r, n) (((const struct user_pt_regs *)(r))->regs[n])
#define GO_ARG1(r) GO_REG(r, 0)
#define GO_ARG2(r) GO_REG(r, 1)
#define GO_ARG3(r) GO_REG(r, 2)
#define GO_ARG4(r) GO_REG(r, 3)
#define GO_ARG5(r) GO_REG(r, 4)
#define GO_ARG7(r) GO_REG(r, 6)
#define GO_ARG8(r) GO_REG(r, 7)
#define C_ARG1(r) GO_REG(r, 0)
#else
#error "Go's register ABI is mapped for amd64 and arm64 only"
#endif

/* The buffers are powers of two, and a length read is masked with size - 1 so that the verifier
 * knows its bound: a label or secret of the buffer's size or more is not read. */
#define LABEL_MAX 64   /* NSS labels: the longest is CLIENT_HANDSHAKE_TRAFFIC_SECRET (31) */
#define RANDOM_LEN 32  /* a TLS client random */
#define SECRET_MAX 64  /* TLS 1.3 secrets: 32 (SHA-256) or 48 (SHA-384) bytes, TLS 1.2's 48 */
#define NOISE_KEY_LEN 32 /* an X25519 private key */
#define MASTER_KEY_LEN 48 /* a TLS 1.0-1.2 master secret (RFC 5246 8.1) */
#define TLS1_VERSION 0x0301
#define TLS1_2_VERSION 0x0303

enum key_kind { KIND_TLS = 1, KIND_NOISE = 2 };

/* One key event.  TLS: label, client random, secret.  Noise: `first` the local static private key,
 * `second` the local ephemeral one. */
struct key_event {
	__u32 tgid;
	__u32 kind;
	__u32 label_len;
	__u32 first_len;
	__u32 second_len;
	__u8 label[LABEL_MAX];
	__u8 first[SECRET_MAX];
	__u8 second[SECRET_MAX];
};
/* So that the type is in the object's BTF, for bpf2go's Go twin (keysKeyEvent). */
const struct key_event *unused_key_event __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");

/* Events the ring buffer had no room for: p2pc keys says how many keys it lost. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

static __always_inline struct key_event *reserve(__u32 kind, __u32 first_len, __u32 second_len)
{
	struct key_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&lost, &zero);
		if (n)
			(*n)++;
		return 0;
	}
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->kind = kind;
	e->first_len = first_len;
	e->second_len = second_len;
	return e;
}

/* The event sent when its reads succeeded (`failed` 0), else given back unsent. */
static __always_inline int send(struct key_event *e, long failed)
{
	if (failed)
		bpf_ringbuf_discard(e, 0);
	else
		bpf_ringbuf_submit(e, 0);
	return 0;
}

/* crypto/tls.(*Config).writeKeyLog(label string, clientRandom, secret []byte): called for every
 * TLS 1.3 secret (and the TLS 1.2 master secret) even when KeyLogWriter is nil, which it checks
 * inside.  The receiver is argument 1, label 2-3, clientRandom 4-6, secret 7-9. */
static __always_inline int tls_key_log(struct pt_regs *ctx)
{
	__u64 label_len = GO_ARG3(ctx), random_len = GO_ARG5(ctx), secret_len = GO_ARG8(ctx);

	if (label_len == 0 || label_len >= LABEL_MAX || random_len != RANDOM_LEN || secret_len == 0 ||
	    secret_len >= SECRET_MAX)
		return 0;
	struct key_event *e = reserve(KIND_TLS, RANDOM_LEN, secret_len);
	if (!e)
		return 0;
	e->label_len = label_len;
	return send(e, bpf_probe_read_user(e->label, label_len & (LABEL_MAX - 1), (void *)GO_ARG2(ctx)) ||
		       bpf_probe_read_user(e->first, RANDOM_LEN, (void *)GO_ARG4(ctx)) ||
		       bpf_probe_read_user(e->second, secret_len & (SECRET_MAX - 1), (void *)GO_ARG7(ctx)));
}

/* A Go slice header. */
struct go_slice {
	__u64 ptr;
	__u64 len;
	__u64 cap;
};

/* github.com/flynn/noise's handshake state is argument 1 of both functions probed:
 * (*symmetricState).MixHash, whose receiver is the HandshakeState's first field ss (so the same
 * address), called as soon as a side has made its ephemeral key (to hash its public half, before
 * the message carrying it is sent); and (*HandshakeState).ReadMessage, where a program's compiler
 * inlined MixHash at that call (each side reads a message after it made its key).  The attach
 * cookie gives the offsets of the state's s.Private (high 32 bits) and e.Private (low 32 bits),
 * from the program's DWARF or a table by flynn/noise version.  Calls before the ephemeral key
 * exists find none and send nothing; the later ones send the same keys again (p2pc keys writes
 * each line once). */
static __always_inline int noise_keys(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 state = GO_ARG1(ctx);
	struct go_slice s, e;

	if (bpf_probe_read_user(&s, sizeof(s), (void *)(state + (cookie >> 32))) ||
	    bpf_probe_read_user(&e, sizeof(e), (void *)(state + (cookie & 0xffffffff))))
		return 0;
	if (s.len != NOISE_KEY_LEN || e.len != NOISE_KEY_LEN)
		return 0;
	struct key_event *ev = reserve(KIND_NOISE, NOISE_KEY_LEN, NOISE_KEY_LEN);
	if (!ev)
		return 0;
	return send(ev, bpf_probe_read_user(ev->first, NOISE_KEY_LEN, (void *)s.ptr) ||
			bpf_probe_read_user(ev->second, NOISE_KEY_LEN, (void *)e.ptr));
}

/* The OpenSSL sessions already sent, by SSL object, its session and the head of its client random:
 * a connection's every SSL_read and SSL_write would send its key again. */
struct openssl_seen {
	__u64 ssl;
	__u64 session;
	__u64 random_head;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct openssl_seen);
	__type(value, __u8);
} openssl_sent SEC(".maps");

/* OpenSSL's SSL_read, SSL_read_ex, SSL_write and SSL_write_ex (libssl's exported functions; the
 * SSL object is argument 1), called on a connection once its handshake is done: a TLS 1.0-1.2
 * connection's client random (SSL.s3.client_random) and master secret (SSL.session->master_key,
 * master_key_length 48) make an NSS CLIENT_RANDOM line.  TLS 1.3 connections (SSL.version
 * 0x0304) send nothing: their traffic secrets have no accessor to read their offsets from.  The
 * attach cookie gives the library's offsets (keys/openssl.go, read from its own accessors): bits
 * 48-63 SSL.version, 32-47 SSL.s3.client_random, 16-31 SSL.session, 8-15
 * SSL_SESSION.master_key_length, 0-7 SSL_SESSION.master_key. */
static __always_inline int openssl_keys(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 ssl = C_ARG1(ctx), mk_len = 0;
	struct openssl_seen seen = { .ssl = ssl };
	__s32 version = 0;
	__u8 one = 1;

	if (bpf_probe_read_user(&version, sizeof(version), (void *)(ssl + (cookie >> 48))) ||
	    version < TLS1_VERSION || version > TLS1_2_VERSION ||
	    bpf_probe_read_user(&seen.session, sizeof(seen.session), (void *)(ssl + ((cookie >> 16) & 0xffff))) ||
	    !seen.session ||
	    bpf_probe_read_user(&mk_len, sizeof(mk_len), (void *)(seen.session + ((cookie >> 8) & 0xff))) ||
	    mk_len != MASTER_KEY_LEN ||
	    bpf_probe_read_user(&seen.random_head, sizeof(seen.random_head), (void *)(ssl + ((cookie >> 32) & 0xffff))) ||
	    bpf_map_lookup_elem(&openssl_sent, &seen))
		return 0;
	struct key_event *e = reserve(KIND_TLS, RANDOM_LEN, MASTER_KEY_LEN);
	if (!e)
		return 0;
	e->label_len = sizeof("CLIENT_RANDOM") - 1;
	__builtin_memcpy(e->label, "CLIENT_RANDOM", sizeof("CLIENT_RANDOM") - 1);
	if (bpf_probe_read_user(e->first, RANDOM_LEN, (void *)(ssl + ((cookie >> 32) & 0xffff))) ||
	    bpf_probe_read_user(e->second, MASTER_KEY_LEN, (void *)(seen.session + (cookie & 0xff))))
		return send(e, 1);
	bpf_map_update_elem(&openssl_sent, &seen, &one, BPF_ANY);
	return send(e, 0);
}

/* Each probe twice: a multi-uprobe link (Linux 6.6+, CAP_BPF and CAP_PERFMON are enough) and a
 * per-probe perf event (older kernels, CAP_SYS_ADMIN).  p2pc keys loads one of the two. */
SEC("uprobe.multi")
int multi_tls_key_log(struct pt_regs *ctx) { return tls_key_log(ctx); }
SEC("uprobe")
int single_tls_key_log(struct pt_regs *ctx) { return tls_key_log(ctx); }
SEC("uprobe.multi")
int multi_noise_keys(struct pt_regs *ctx) { return noise_keys(ctx); }
SEC("uprobe")
int single_noise_keys(struct pt_regs *ctx) { return noise_keys(ctx); }

SEC("uprobe.multi")
int multi_openssl_keys(struct pt_regs *ctx) { return openssl_keys(ctx); }
SEC("uprobe")
int single_openssl_keys(struct pt_regs *ctx) { return openssl_keys(ctx); }

char LICENSE[] SEC("license") = "GPL";
