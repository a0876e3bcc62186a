// noise-keylog.cjs: makes an unchanged js-libp2p node (Lodestar) write its Noise keys, for p2pc.
//
//   LIBP2P_NOISE_KEYLOG=/var/lib/beacon/noise.keys \
//   NODE_OPTIONS="--require /path/to/p2pc/keys/node/noise-keylog.cjs" lodestar beacon ...
//
// appends to $LIBP2P_NOISE_KEYLOG, in the WireGuard key log format p2pc reads
// (docs/libp2p-decryption.md, plugin/libp2p/noise-keys.c):
//   LOCAL_STATIC_PRIVATE_KEY = <base64>     the node's Noise static key, once when it is made
//   LOCAL_EPHEMERAL_PRIVATE_KEY = <base64>  each handshake's ephemeral key, before it is sent
// Without the variable it does nothing.  Anyone holding the file can decrypt the sessions.
//
// How: @chainsafe/libp2p-noise (11.0.0 in Lodestar 1.5.1) is an ES module, which a preload
// cannot wrap, but it makes its X25519 keys with @stablelib/x25519, a CommonJS module that Node
// compiles through Module.prototype._compile even when an ES module imports it.  Its key pair
// functions are wrapped there, before the importer sees them.  Whose key a new pair is comes
// from the caller: the Noise constructor (dist/src/noise.js) makes the static key, the XX
// handshake (dist/src/handshakes/xx.js) an ephemeral one; pairs made by anything else are not
// logged.  (A node that installs source-map-support, as Lodestar does, shows the frames as
// their src/*.ts sources: both forms are matched.)
'use strict'
const fs = require('node:fs')
const Module = require('node:module')

const path = process.env.LIBP2P_NOISE_KEYLOG
const X25519 = /[\\/]@stablelib[\\/]x25519[\\/]lib[\\/]x25519\.js$/
const KINDS = [
  [/[\\/]libp2p-noise[\\/](dist[\\/])?src[\\/]handshakes[\\/]xx\.[jt]s:/, 'EPHEMERAL'],
  [/[\\/]libp2p-noise[\\/](dist[\\/])?src[\\/]noise\.[jt]s:/, 'STATIC']
]

function kindOfCaller () {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 12
  const stack = new Error().stack
  Error.stackTraceLimit = limit
  for (const line of stack.split('\n').slice(2)) {
    for (const [re, kind] of KINDS) if (re.test(line)) return kind
  }
  return null
}

function logged (make) {
  return function (...args) {
    const pair = make.apply(this, args)
    const kind = kindOfCaller()
    if (kind) {
      // Synchronous: the line is in the file before the handshake sends the key's public half.
      fs.appendFileSync(path, `LOCAL_${kind}_PRIVATE_KEY = ${Buffer.from(pair.secretKey).toString('base64')}\n`,
        { mode: 0o600 })
    }
    return pair
  }
}

if (path) {
  const compile = Module.prototype._compile
  Module.prototype._compile = function (content, filename) {
    const result = compile.apply(this, arguments)
    if (X25519.test(filename)) {
      this.exports.generateKeyPair = logged(this.exports.generateKeyPair)
      this.exports.generateKeyPairFromSeed = logged(this.exports.generateKeyPairFromSeed)
    }
    return result
  }
}
