// eth2peer.mjs: a js-libp2p peer that speaks eth2peers' workload (captures/gen/libp2p/main.go)
// for p2pc's interop captures: as listener it serves status/1, ping/1, metadata/2,
// beacon_blocks_by_range/2 (the block given, then a ResourceUnavailable error chunk) and
// goodbye/1; as dialer it asks for them in that order, publishes blocks on the mainnet
// beacon_block gossip topic in between, and says goodbye.  The encodings are eth2peers' (status
// values, fork digests, the error message); the Snappy framing is written here over snappyjs's
// block format, as Lodestar frames its own (@lodestar/reqresp).  It writes its truth (-truth):
// what it sent and received, as eth2peers' truth.go does.  --transport quic runs over /quic-v1
// (@chainsafe/libp2p-quic: TLS 1.3 inside QUIC, no muxer, --security and --muxer unused); the
// package is not in package.json (docs/libp2p-decryption.md, "js-libp2p over QUIC" says why),
// make_interop.py installs it with npm install --no-save before a js QUIC cell.
//
//   node eth2peer.mjs --role listen --muxer yamux --security plaintext|noise|tls --block F --idfile F --truth F
//   node eth2peer.mjs --role dial --peer /ip4/.../p2p/<id> --block F --gossip 1 --truth F
//   node eth2peer.mjs --transport quic --listen /ip4/0.0.0.0/udp/9000/quic-v1 ...
import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { basename } from 'node:path'
import { parseArgs } from 'node:util'
import { createLibp2p } from 'libp2p'
import { tcp } from '@libp2p/tcp'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { mplex } from '@libp2p/mplex'
import { plaintext } from '@libp2p/plaintext'
import { tls } from '@libp2p/tls'
import { identify } from '@libp2p/identify'
import { gossipsub } from '@libp2p/gossipsub'
import { generateKeyPairFromSeed } from '@libp2p/crypto/keys'
import { multiaddr } from '@multiformats/multiaddr'
import snappy from 'snappyjs'

const { values: opt } = parseArgs({
  options: {
    role: { type: 'string', default: 'listen' }, muxer: { type: 'string', default: 'yamux' },
    security: { type: 'string', default: 'plaintext' }, listen: { type: 'string', default: '/ip4/0.0.0.0/tcp/9000' },
    peer: { type: 'string' }, block: { type: 'string' }, gossip: { type: 'string', default: '0' },
    seed: { type: 'string', default: '1' }, idfile: { type: 'string' }, truth: { type: 'string' },
    transport: { type: 'string', default: 'tcp' }
  }
})

const REQ = '/eth2/beacon_chain/req/'
const P = {
  status: REQ + 'status/1/ssz_snappy', ping: REQ + 'ping/1/ssz_snappy', metadata: REQ + 'metadata/2/ssz_snappy',
  goodbye: REQ + 'goodbye/1/ssz_snappy', byRange: REQ + 'beacon_blocks_by_range/2/ssz_snappy'
}
const DIGESTS = { bellatrix: '4a26c58b', capella: 'bba4da96' }
const TOPIC = `/eth2/${DIGESTS.capella}/beacon_block/ssz_snappy`
const ERROR_MESSAGE = 'blocks beyond the three real ones are not served'
const QUIC = opt.transport === 'quic'
if (!['tcp', 'quic'].includes(opt.transport)) throw new Error(`--transport tcp|quic, not ${opt.transport}`)
const VERSIONS = Object.fromEntries(['libp2p', '@chainsafe/libp2p-noise', '@chainsafe/libp2p-yamux', '@libp2p/mplex',
  '@libp2p/tcp', '@libp2p/plaintext', '@libp2p/tls', '@libp2p/gossipsub', 'snappyjs',
  ...(QUIC ? ['@chainsafe/libp2p-quic', '@chainsafe/libp2p-quic-linux-x64-gnu'] : [])].map(n =>
  [n, JSON.parse(readFileSync(new URL(`./node_modules/${n}/package.json`, import.meta.url))).version]))
// Every message of a run goes over its one transport, named as eth2peers' truth names it.
const TRANSPORT = QUIC ? 'quic-v1' : 'tcp'

// --- encodings (consensus-specs p2p-interface.md; Snappy framing_format.txt) ---
const CRC_TABLE = (() => {
  const t = new Uint32Array(256)
  for (let i = 0; i < 256; i++) {
    let c = i
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
    t[i] = c >>> 0
  }
  return t
})()
function maskedCrc32c (buf) {
  let c = 0xffffffff
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8)
  c = (c ^ 0xffffffff) >>> 0
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0
}
const STREAM_ID = Buffer.from([0xff, 0x06, 0x00, 0x00, 0x73, 0x4e, 0x61, 0x50, 0x70, 0x59])
function framed (data) {
  const parts = [STREAM_ID]
  for (let off = 0; off < data.length || off === 0; off += 65536) {
    const raw = data.subarray(off, off + 65536)
    const comp = Buffer.from(snappy.compress(raw))
    // A compressed chunk only when it is smaller, as the framing format's writers do.
    const [type, body] = comp.length < raw.length ? [0x00, comp] : [0x01, raw]
    const hdr = Buffer.alloc(8)
    hdr[0] = type
    hdr.writeUIntLE(body.length + 4, 1, 3)
    hdr.writeUInt32LE(maskedCrc32c(raw), 4)
    parts.push(hdr, body)
    if (data.length === 0) break
  }
  return Buffer.concat(parts)
}
function uvarint (n) {
  const out = []
  do { let b = n % 128; n = Math.floor(n / 128); if (n > 0) b |= 0x80; out.push(b) } while (n > 0)
  return Buffer.from(out)
}
const request = ssz => Buffer.concat([uvarint(ssz.length), framed(ssz)])
const chunk = (result, ctx, ssz) => Buffer.concat([Buffer.from([result]), ctx ?? Buffer.alloc(0), uvarint(ssz.length), framed(ssz)])
const u64 = v => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); return b }
function status () {
  return Buffer.concat([Buffer.from(DIGESTS.capella, 'hex'), Buffer.alloc(32, 0x11), u64(203000),
    Buffer.alloc(32, 0x22), u64(6507058)])
}

// --- truth ---
const truth = []
const sha = b => createHash('sha256').update(b).digest('hex')
const short = p => p.replace(REQ, '').replace('/ssz_snappy', '')

function readUvarint (buf, pos) {
  let n = 0; let mul = 1
  for (;;) {
    if (pos >= buf.length) return null
    const b = buf[pos++]; n += (b & 0x7f) * mul; mul *= 128
    if (!(b & 0x80)) return [n, pos]
  }
}
// Reads Snappy frames from buf at pos until `want` bytes came out: [data, end] or null.
function unframe (buf, pos, want) {
  const out = []; let got = 0
  while (got < want || (want === 0 && pos < buf.length && buf[pos] === 0xff)) {
    if (pos + 4 > buf.length) return null
    const type = buf[pos]; const len = buf.readUIntLE(pos + 1, 3); const body = buf.subarray(pos + 4, pos + 4 + len)
    pos += 4 + len
    if (type === 0x00) out.push(Buffer.from(snappy.uncompress(body.subarray(4))))
    else if (type === 0x01) out.push(body.subarray(4))
    else continue
    got += out[out.length - 1].length
  }
  return [Buffer.concat(out), pos]
}
// Records the request (uvarint, frames) or the response chunks in buf.
function record (proto, buf, response, dir) {
  let pos = 0
  while (pos < buf.length) {
    const m = { protocol: short(proto), kind: response ? 'response' : 'request', dir, transport: TRANSPORT }
    if (response) {
      m.result = buf[pos++]
      if (proto === P.byRange && m.result === 0) { m.context = buf.subarray(pos, pos + 4).toString('hex'); pos += 4 }
    }
    const v = readUvarint(buf, pos); if (!v) return
    const start = v[1]
    const u = unframe(buf, start, v[0]); if (!u) return
    Object.assign(m, { ssz_len: v[0], ssz_sha256: sha(u[0]), framed_len: u[1] - start })
    truth.push(m)
    pos = u[1]
    if (!response) return
  }
}
// The Altair message-id: SHA256(domain || uint64_le(len(topic)) || topic || data)[:20].
function messageId (topic, data) {
  let dom = Buffer.from([1, 0, 0, 0]); let body
  try { body = Buffer.from(snappy.uncompress(data)) } catch { dom = Buffer.alloc(4); body = Buffer.from(data) }
  const t = Buffer.from(topic)
  return createHash('sha256').update(Buffer.concat([dom, u64(t.length), t, body])).digest().subarray(0, 20)
}
function recordGossip (topic, data, dir) {
  const m = { protocol: 'gossip beacon_block', kind: 'gossip', dir, topic, msg_id: messageId(topic, data).toString('hex'), data_len: data.length, transport: TRANSPORT }
  try { const ssz = Buffer.from(snappy.uncompress(data)); m.ssz_len = ssz.length; m.ssz_sha256 = sha(ssz) } catch {}
  truth.push(m)
}
function writeTruth () {
  if (!opt.truth) return
  writeFileSync(opt.truth, JSON.stringify({ stack: 'js-libp2p', version: VERSIONS.libp2p, role: opt.role, node: process.version,
    packages: VERSIONS, snappy: `snappyjs ${VERSIONS.snappyjs} (block format), framing written by eth2peer.mjs`, connections, messages: truth }, null, 1))
}

// --- streams ---
// Reads a stream until `whole(bytes so far)` and the remote has closed its end, or the stream
// ends.  js-libp2p 3.3.11 never ends the iteration of a stream whose remote end closed before
// it was handed over (a go-libp2p dialer's lazy proposal, request and FIN in one go; a
// go-libp2p responder's answer and FIN right behind its multistream echo), so the remote's
// status is polled as well; the bytes themselves are all delivered.  The remote may have closed
// with bytes still queued for the iterator (a js-libp2p responder's last chunk and its close),
// so once the bytes so far are whole and the remote closed, what comes within IDLE_MS is read too.
const IDLE_MS = 500
async function readUntil (stream, whole) {
  const parts = []
  const it = stream[Symbol.asyncIterator]()
  let pending = null   // the iterator's next(), kept across races so that no value is lost
  for (;;) {
    const buf = Buffer.concat(parts)
    const done = () => whole(buf) && stream.remoteWriteStatus === 'closed'
    let timer
    const poll = new Promise(resolve => { timer = setInterval(() => { if (done()) resolve({ poll: true }) }, 200) })
    pending = pending ?? it.next()
    const idle = done() ? new Promise(resolve => setTimeout(() => resolve({ idle: true }), IDLE_MS)) : poll
    let next = await Promise.race([pending, idle])
    clearInterval(timer)
    if (next.poll) next = await Promise.race([pending, new Promise(resolve => setTimeout(() => resolve({ idle: true }), IDLE_MS))])
    if (next.idle || next.poll) return buf
    pending = null
    if (next.done) return buf
    parts.push(Buffer.from(next.value.subarray()))
  }
}
// Whether buf holds whole request / response chunks and nothing cut short.
function wholeChunks (buf, response, withContext) {
  if (!response && buf.length === 0) return false
  let pos = 0
  try {
    while (pos < buf.length) {
      if (response) { const r = buf[pos++]; if (withContext && r === 0) pos += 4 }
      const v = readUvarint(buf, pos); if (!v) return false
      const u = unframe(buf, v[1], v[0]); if (!u || u[1] > buf.length) return false
      pos = u[1]
      if (!response) return pos === buf.length
    }
    return pos === buf.length
  } catch { return false }
}
const readRequest = stream => readUntil(stream, buf => wholeChunks(buf, false, false))
// Every response but goodbye's holds at least one chunk.
const readResponse = (stream, proto) => readUntil(stream, buf =>
  (buf.length > 0 || proto === P.goodbye) && wholeChunks(buf, true, proto === P.byRange))
async function write (stream, buf) {
  if (!stream.send(buf)) await stream.onDrain()
}
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

const seed = Buffer.alloc(32, Number(opt.seed))
const privateKey = await generateKeyPairFromSeed('Ed25519', seed)
const blockSsz = opt.block ? readFileSync(opt.block) : null
const fork = opt.block && basename(opt.block).includes('bellatrix') ? 'bellatrix' : 'capella'
const node = await createLibp2p({
  privateKey,
  addresses: { listen: opt.role === 'listen' ? [opt.listen] : [] },
  // Over QUIC the TLS session is rustls's inside the transport's native module, which logs no
  // secrets (libp2p-tls 0.6.2 sets no key_log): the go peer's key log decrypts such a cell.  The
  // package is imported only then, as it is installed only for QUIC cells.
  transports: [QUIC ? (await import('@chainsafe/libp2p-quic')).quic() : tcp()],
  // @libp2p/tls makes its session with node:tls (a TLSSocket over the connection), so node's own
  // --tls-keylog (make_interop.py puts it in NODE_OPTIONS) writes its secrets; no change here.
  connectionEncrypters: [opt.security === 'noise' ? noise() : opt.security === 'tls' ? tls() : plaintext()],
  // @libp2p/mplex 12.0.32 aborts the muxer when the remote opens more than disconnectThreshold
  // (default 5) streams in a second, and leaves the TCP connection open until its ping fails: a
  // go-libp2p dialer opens six (identify, meshsub, status, ping, metadata, blocks by range) in
  // about 0.6 s over the 60 ms link, and then waits for ever for the by-range response.
  streamMuxers: [opt.muxer === 'mplex' ? mplex({ disconnectThreshold: 100 }) : yamux()],
  services: {
    identify: identify(),
    pubsub: gossipsub({ globalSignaturePolicy: 'StrictNoSign', msgIdFn: m => messageId(m.topic, m.data), emitSelf: false })
  }
})
// Each connection as js-libp2p reports it (it does not say whether the muxer was agreed early).
const connections = []
node.addEventListener('connection:open', evt => {
  connections.push({ transport: TRANSPORT, security: evt.detail.encryption, muxer: evt.detail.multiplexer })
})
const pubsub = node.services.pubsub
pubsub.subscribe(TOPIC)
pubsub.addEventListener('message', evt => {
  if (evt.detail.topic === TOPIC) recordGossip(TOPIC, Buffer.from(evt.detail.data), 'received')
})

if (opt.role === 'listen') {
  let bye
  const done = new Promise(resolve => { bye = resolve })
  const serve = (proto, fn) => node.handle(proto, async stream => {
    if (process.env.ETH2PEER_DEBUG) console.error('serve', short(proto), stream.readStatus, stream.remoteWriteStatus)
    // The request is read until it is whole (its uvarint length is met), as Lodestar reads one:
    // when a go-libp2p dialer's lazy proposal, request and FIN come in together, the stream
    // reaches the handler with its remote end already closed and iterating it never ends.
    const req = proto === P.metadata ? Buffer.alloc(0) : await readRequest(stream)
    if (proto !== P.metadata) record(proto, req, false, 'received')
    for (const c of fn()) { record(proto, c, true, 'sent'); await write(stream, c) }
    await stream.close()
    if (proto === P.goodbye) bye()
  })
  serve(P.status, () => [chunk(0, null, status())])
  serve(P.ping, () => [chunk(0, null, u64(7))])
  serve(P.metadata, () => [chunk(0, null, Buffer.concat([u64(7), Buffer.alloc(8, 0xff), Buffer.from([0x0f])]))])
  serve(P.byRange, () => [chunk(0, Buffer.from(DIGESTS[fork], 'hex'), blockSsz), chunk(3, null, Buffer.from(ERROR_MESSAGE))])
  serve(P.goodbye, () => [])
  const addr = node.getMultiaddrs().find(a => a.toString().includes(QUIC ? '/quic-v1' : '/tcp/'))
  writeFileSync(opt.idfile, addr.toString())
  await done
  await sleep(2000)
} else {
  const peer = multiaddr(opt.peer)
  await node.dial(peer)
  const call = async (proto, req) => {
    if (process.env.ETH2PEER_DEBUG) console.error("call", short(proto))
    const stream = await node.dialProtocol(peer, proto)
    if (process.env.ETH2PEER_DEBUG) console.error('  opened', stream.readStatus, stream.remoteWriteStatus, stream.writeStatus)
    if (req) { record(proto, req, false, 'sent'); await write(stream, req) }
    await stream.close()
    if (process.env.ETH2PEER_DEBUG) console.error('  closed', stream.readStatus, stream.remoteWriteStatus, stream.writeStatus)
    const resp = await readResponse(stream, proto)
    record(proto, resp, true, 'received')
  }
  await call(P.status, request(status()))
  await call(P.ping, request(u64(3)))
  await call(P.metadata, null)
  await call(P.byRange, request(Buffer.concat([u64(6507058), u64(8), u64(1)])))
  if (process.env.ETH2PEER_DEBUG) console.error("waiting for the mesh")
  while (pubsub.getSubscribers(TOPIC).length === 0) await sleep(100)
  await sleep(1500)
  for (let i = 0; i < Number(opt.gossip); i++) {
    const data = Buffer.from(snappy.compress(blockSsz))
    recordGossip(TOPIC, data, 'sent')
    await pubsub.publish(TOPIC, data)
    await sleep(300)
  }
  await sleep(2000)
  await call(P.goodbye, request(u64(1)))
  await sleep(500)
}
writeTruth()
await node.stop()
process.exit(0)
