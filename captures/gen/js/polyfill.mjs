// js-libp2p 3.x (through it-queue) calls Promise.withResolvers, which Node.js has from 22 on;
// the machine's Node.js is 20, so it is given here (node --import ./polyfill.mjs).
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function () {
    let resolve, reject
    const promise = new this((res, rej) => { resolve = res; reject = rej })
    return { promise, resolve, reject }
  }
}
