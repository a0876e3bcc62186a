// quic-keylog-probe.mjs: does @chainsafe/libp2p-quic write its TLS secrets to $SSLKEYLOGFILE?
// Two js-libp2p nodes connect over /quic-v1 on loopback with SSLKEYLOGFILE set in their
// environment; the answer is whether the file appeared and what it holds.  Exit status 0: it
// wrote secrets; 1: it did not (2.1.1: it does not, see docs/libp2p-decryption.md "js-libp2p over
// QUIC").  The package is not in package.json (see there why); install it for this run only:
//
//   npm install --no-save @chainsafe/libp2p-quic@2.1.1
//   SSLKEYLOGFILE=/tmp/js-quic.keys node --import ./polyfill.mjs quic-keylog-probe.mjs
import { existsSync, readFileSync } from 'node:fs'
import { createLibp2p } from 'libp2p'
import { quic } from '@chainsafe/libp2p-quic'

const file = process.env.SSLKEYLOGFILE
if (!file) throw new Error('set SSLKEYLOGFILE')
const version = JSON.parse(readFileSync(new URL('./node_modules/@chainsafe/libp2p-quic/package.json', import.meta.url))).version
const node = listen => createLibp2p({ addresses: { listen }, transports: [quic()] })
const listener = await node(['/ip4/127.0.0.1/udp/0/quic-v1'])
const dialer = await node([])
const conn = await dialer.dial(listener.getMultiaddrs()[0])
await new Promise(resolve => setTimeout(resolve, 500))
const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []
console.log(JSON.stringify({
  '@chainsafe/libp2p-quic': version, node: process.version, connected: conn.status, remote: conn.remoteAddr.toString(),
  keylog: file, exists: existsSync(file), labels: [...new Set(lines.map(l => l.split(' ')[0]))]
}))
await dialer.stop()
await listener.stop()
process.exit(lines.length > 0 ? 0 : 1)
