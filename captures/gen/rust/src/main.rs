//! eth2peer-rs: a rust-libp2p (0.57.1) peer that speaks eth2peers' workload
//! (captures/gen/libp2p/main.go) for p2pc's interop captures.  As listener it serves status/1,
//! ping/1, metadata/2, beacon_blocks_by_range/2 (the block given, then a ResourceUnavailable
//! error chunk) and goodbye/1; as dialer it asks for them in that order, publishes the block on
//! the mainnet beacon_block gossip topic (gossipsub, anonymous: no author, no signature), and
//! says goodbye.  One request_response::Behaviour per protocol (the crate negotiates the first of
//! a behaviour's protocols the remote supports), a codec that reads to the end of the stream,
//! Snappy framing by the snap crate's FrameEncoder.  It writes its truth (--truth) as
//! eth2peers' truth.go does.  --transport quic runs over /quic-v1 (libp2p-quic: TLS 1.3 inside
//! QUIC, no muxer: --security and --muxer do not apply) instead of TCP; --security tls runs
//! /tls/1.0.0 over TCP (libp2p-tls, ALPN "libp2p" only, so multistream-select agrees the muxer).
//! libp2p-tls 0.7.0 gives its rustls configs rustls's KeyLogFile (src/lib.rs, make_client_config
//! and make_server_config, used by both transports), so with $SSLKEYLOGFILE set the peer writes
//! its QUIC and TCP TLS connections' secrets there (NSS key log format) with no change to the
//! library.
use std::io::{Cursor, Read, Write};
use std::time::Duration;

use futures::{AsyncReadExt, AsyncWriteExt, StreamExt};
use libp2p::gossipsub::{self, IdentTopic, MessageAuthenticity, ValidationMode};
use libp2p::identity::Keypair;
use libp2p::request_response::{self, ProtocolSupport};
use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
use libp2p::{identify, noise, plaintext, tls, yamux, Multiaddr, PeerId, StreamProtocol, Swarm, SwarmBuilder};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const REQ: &str = "/eth2/beacon_chain/req/";
const TOPIC: &str = "/eth2/bba4da96/beacon_block/ssz_snappy";
const ERROR_MESSAGE: &[u8] = b"blocks beyond the three real ones are not served";

#[derive(Clone, Default)]
struct Raw;

impl request_response::Codec for Raw {
    type Protocol = StreamProtocol;
    type Request = Vec<u8>;
    type Response = Vec<u8>;
    async fn read_request<T: futures::AsyncRead + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T) -> std::io::Result<Vec<u8>> {
        let mut v = Vec::new();
        io.read_to_end(&mut v).await?;
        Ok(v)
    }
    async fn read_response<T: futures::AsyncRead + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T) -> std::io::Result<Vec<u8>> {
        let mut v = Vec::new();
        io.read_to_end(&mut v).await?;
        Ok(v)
    }
    async fn write_request<T: futures::AsyncWrite + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T, req: Vec<u8>) -> std::io::Result<()> {
        io.write_all(&req).await
    }
    async fn write_response<T: futures::AsyncWrite + Unpin + Send>(&mut self, _: &StreamProtocol, io: &mut T, res: Vec<u8>) -> std::io::Result<()> {
        io.write_all(&res).await
    }
}

type Rr = request_response::Behaviour<Raw>;

#[derive(NetworkBehaviour)]
struct Behaviour {
    status: Rr,
    ping: Rr,
    metadata: Rr,
    by_range: Rr,
    goodbye: Rr,
    gossipsub: gossipsub::Behaviour,
    identify: identify::Behaviour,
}

fn rr(name: &str) -> Rr {
    let p = StreamProtocol::try_from_owned(format!("{REQ}{name}/ssz_snappy")).unwrap();
    request_response::Behaviour::new([(p, ProtocolSupport::Full)],
        request_response::Config::default().with_request_timeout(Duration::from_secs(60)))
}

fn uvarint(mut n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 { out.push(b); return out; }
        out.push(b | 0x80);
    }
}
fn framed(ssz: &[u8]) -> Vec<u8> {
    let mut w = snap::write::FrameEncoder::new(Vec::new());
    w.write_all(ssz).unwrap();
    w.into_inner().unwrap()
}
fn request(ssz: &[u8]) -> Vec<u8> { [uvarint(ssz.len() as u64), framed(ssz)].concat() }
fn chunk(result: u8, ctx: &[u8], ssz: &[u8]) -> Vec<u8> { [vec![result], ctx.to_vec(), uvarint(ssz.len() as u64), framed(ssz)].concat() }
fn u64le(v: u64) -> Vec<u8> { v.to_le_bytes().to_vec() }
fn status() -> Vec<u8> {
    [hex::decode("bba4da96").unwrap(), vec![0x11; 32], u64le(203_000), vec![0x22; 32], u64le(6_507_058)].concat()
}
fn sha(b: &[u8]) -> String { hex::encode(Sha256::digest(b)) }

fn read_uvarint(c: &mut Cursor<&[u8]>) -> Option<u64> {
    let (mut n, mut shift) = (0u64, 0);
    loop {
        let mut b = [0u8];
        c.read_exact(&mut b).ok()?;
        n |= ((b[0] & 0x7f) as u64) << shift;
        if b[0] & 0x80 == 0 { return Some(n); }
        shift += 7;
    }
}

/// The request or response chunks in buf, as truth entries.
fn record(truth: &mut Vec<Value>, name: &str, buf: &[u8], response: bool, dir: &str) {
    let mut c = Cursor::new(buf);
    while (c.position() as usize) < buf.len() {
        let mut m = json!({"protocol": name, "kind": if response {"response"} else {"request"}, "dir": dir});
        if response {
            let mut r = [0u8];
            if c.read_exact(&mut r).is_err() { return; }
            m["result"] = json!(r[0]);
            if name == "beacon_blocks_by_range/2" && r[0] == 0 {
                let mut ctx = [0u8; 4];
                if c.read_exact(&mut ctx).is_err() { return; }
                m["context"] = json!(hex::encode(ctx));
            }
        }
        let Some(n) = read_uvarint(&mut c) else { return };
        let start = c.position();
        let mut ssz = vec![0u8; n as usize];
        {
            let mut d = snap::read::FrameDecoder::new(&mut c);
            if d.read_exact(&mut ssz).is_err() { return; }
        }
        m["ssz_len"] = json!(n);
        m["ssz_sha256"] = json!(sha(&ssz));
        m["framed_len"] = json!(c.position() - start);
        truth.push(m);
        if !response { return; }
    }
}

fn message_id(topic: &str, data: &[u8]) -> Vec<u8> {
    let (dom, body) = match snap::raw::Decoder::new().decompress_vec(data) {
        Ok(d) => (vec![1u8, 0, 0, 0], d),
        Err(_) => (vec![0u8; 4], data.to_vec()),
    };
    let mut h = Sha256::new();
    h.update(&dom);
    h.update((topic.len() as u64).to_le_bytes());
    h.update(topic.as_bytes());
    h.update(&body);
    h.finalize()[..20].to_vec()
}
fn record_gossip(truth: &mut Vec<Value>, data: &[u8], dir: &str) {
    let mut m = json!({"protocol": "gossip beacon_block", "kind": "gossip", "dir": dir, "topic": TOPIC,
        "msg_id": hex::encode(message_id(TOPIC, data)), "data_len": data.len()});
    if let Ok(ssz) = snap::raw::Decoder::new().decompress_vec(data) {
        m["ssz_len"] = json!(ssz.len());
        m["ssz_sha256"] = json!(sha(&ssz));
    }
    truth.push(m);
}

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter().position(|a| a == name).map(|i| args[i + 1].clone()).unwrap_or_else(|| default.to_string())
}

fn behaviour(key: &Keypair) -> Behaviour {
    let cfg = gossipsub::ConfigBuilder::default()
        .validation_mode(ValidationMode::Anonymous)
        .max_transmit_size(10 * 1024 * 1024)
        .message_id_fn(|m: &gossipsub::Message| gossipsub::MessageId::new(&message_id(m.topic.as_str(), &m.data)))
        .build().unwrap();
    Behaviour {
        status: rr("status/1"), ping: rr("ping/1"), metadata: rr("metadata/2"),
        by_range: rr("beacon_blocks_by_range/2"), goodbye: rr("goodbye/1"),
        gossipsub: gossipsub::Behaviour::new(MessageAuthenticity::Anonymous, cfg).unwrap(),
        identify: identify::Behaviour::new(identify::Config::new("eth2/1.0.0".into(), key.public())),
    }
}

fn swarm(key: Keypair, transport: &str, security: &str, muxer: &str) -> Swarm<Behaviour> {
    let idle = |c: libp2p::swarm::Config| c.with_idle_connection_timeout(Duration::from_secs(60));
    let b = SwarmBuilder::with_existing_identity(key).with_tokio();
    if transport == "quic" {
        return b.with_quic().with_behaviour(|k| behaviour(k)).unwrap().with_swarm_config(idle).build();
    }
    match (security, muxer) {
        ("noise", "mplex") => b.with_tcp(Default::default(), noise::Config::new, libp2p_mplex::Config::default).unwrap()
            .with_behaviour(|k| behaviour(k)).unwrap().with_swarm_config(idle).build(),
        ("noise", _) => b.with_tcp(Default::default(), noise::Config::new, yamux::Config::default).unwrap()
            .with_behaviour(|k| behaviour(k)).unwrap().with_swarm_config(idle).build(),
        ("tls", "mplex") => b.with_tcp(Default::default(), tls::Config::new, libp2p_mplex::Config::default).unwrap()
            .with_behaviour(|k| behaviour(k)).unwrap().with_swarm_config(idle).build(),
        ("tls", _) => b.with_tcp(Default::default(), tls::Config::new, yamux::Config::default).unwrap()
            .with_behaviour(|k| behaviour(k)).unwrap().with_swarm_config(idle).build(),
        (_, "mplex") => b.with_tcp(Default::default(), |k: &Keypair| Ok::<_, std::convert::Infallible>(plaintext::Config::new(k)),
            libp2p_mplex::Config::default).unwrap().with_behaviour(|k| behaviour(k)).unwrap().with_swarm_config(idle).build(),
        _ => b.with_tcp(Default::default(), |k: &Keypair| Ok::<_, std::convert::Infallible>(plaintext::Config::new(k)),
            yamux::Config::default).unwrap().with_behaviour(|k| behaviour(k)).unwrap().with_swarm_config(idle).build(),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let role = arg(&args, "--role", "listen");
    let seed: u8 = arg(&args, "--seed", "1").parse().unwrap();
    let block = std::fs::read(arg(&args, "--block", "")).unwrap();
    let gossip_n: usize = arg(&args, "--gossip", "0").parse().unwrap();
    let key = Keypair::ed25519_from_bytes([seed; 32]).unwrap();
    let transport = arg(&args, "--transport", "tcp");
    let mut sw = swarm(key, &transport, &arg(&args, "--security", "plaintext"), &arg(&args, "--muxer", "yamux"));
    let topic = IdentTopic::new(TOPIC);
    sw.behaviour_mut().gossipsub.subscribe(&topic).unwrap();
    let mut truth: Vec<Value> = Vec::new();
    let debug = std::env::var("ETH2PEER_DEBUG").is_ok();

    if role == "listen" {
        let addr: Multiaddr = arg(&args, "--listen", "/ip4/0.0.0.0/tcp/9000").parse().unwrap();
        sw.listen_on(addr).unwrap();
        let idfile = arg(&args, "--idfile", "");
        let mut bye_at: Option<tokio::time::Instant> = None;
        loop {
            let ev = match bye_at {
                Some(t) => match tokio::time::timeout_at(t, sw.select_next_some()).await { Ok(e) => e, Err(_) => break },
                None => sw.select_next_some().await,
            };
            match ev {
                SwarmEvent::NewListenAddr { address, .. } => {
                    std::fs::write(&idfile, format!("{address}/p2p/{}", sw.local_peer_id())).unwrap();
                }
                SwarmEvent::Behaviour(e) => {
                    let (name, req, channel, which) = match e {
                        BehaviourEvent::Status(request_response::Event::Message { message: request_response::Message::Request { request, channel, .. }, .. }) => ("status/1", request, channel, 0),
                        BehaviourEvent::Ping(request_response::Event::Message { message: request_response::Message::Request { request, channel, .. }, .. }) => ("ping/1", request, channel, 1),
                        BehaviourEvent::Metadata(request_response::Event::Message { message: request_response::Message::Request { request, channel, .. }, .. }) => ("metadata/2", request, channel, 2),
                        BehaviourEvent::ByRange(request_response::Event::Message { message: request_response::Message::Request { request, channel, .. }, .. }) => ("beacon_blocks_by_range/2", request, channel, 3),
                        BehaviourEvent::Goodbye(request_response::Event::Message { message: request_response::Message::Request { request, channel, .. }, .. }) => ("goodbye/1", request, channel, 4),
                        BehaviourEvent::Gossipsub(gossipsub::Event::Message { message, .. }) => {
                            record_gossip(&mut truth, &message.data, "received");
                            continue;
                        }
                        other => { if debug { eprintln!("{other:?}"); } continue; }
                    };
                    if which != 2 { record(&mut truth, name, &req, false, "received"); }
                    let resp = match which {
                        0 => chunk(0, &[], &status()),
                        1 => chunk(0, &[], &u64le(7)),
                        2 => chunk(0, &[], &[u64le(7), vec![0xff; 8], vec![0x0f]].concat()),
                        3 => [chunk(0, &hex::decode("bba4da96").unwrap(), &block), chunk(3, &[], ERROR_MESSAGE)].concat(),
                        _ => Vec::new(),
                    };
                    record(&mut truth, name, &resp, true, "sent");
                    let b = sw.behaviour_mut();
                    let rr = match which { 0 => &mut b.status, 1 => &mut b.ping, 2 => &mut b.metadata, 3 => &mut b.by_range, _ => &mut b.goodbye };
                    let _ = rr.send_response(channel, resp);
                    if which == 4 { bye_at = Some(tokio::time::Instant::now() + Duration::from_secs(2)); }
                }
                other => { if debug { eprintln!("{other:?}"); } }
            }
        }
    } else {
        let addr: Multiaddr = arg(&args, "--peer", "").parse().unwrap();
        let Some(libp2p::multiaddr::Protocol::P2p(peer)) = addr.iter().last() else { panic!("no /p2p/ in --peer") };
        sw.dial(addr).unwrap();
        let calls: Vec<(usize, &str, Vec<u8>)> = vec![
            (0, "status/1", request(&status())), (1, "ping/1", request(&u64le(3))), (2, "metadata/2", Vec::new()),
            (3, "beacon_blocks_by_range/2", request(&[u64le(6_507_058), u64le(8), u64le(1)].concat())),
        ];
        for (which, name, req) in calls {
            call(&mut sw, &mut truth, peer, which, name, req, debug).await;
        }
        // Gossip: wait for the peer's subscription, then publish.
        while sw.behaviour().gossipsub.all_peers().all(|(_, topics)| topics.is_empty()) {
            pump(&mut sw, &mut truth, Duration::from_millis(100), debug).await;
        }
        pump(&mut sw, &mut truth, Duration::from_millis(1500), debug).await;
        for _ in 0..gossip_n {
            let data = snap::raw::Encoder::new().compress_vec(&block).unwrap();
            record_gossip(&mut truth, &data, "sent");
            sw.behaviour_mut().gossipsub.publish(topic.clone(), data).unwrap();
            pump(&mut sw, &mut truth, Duration::from_millis(300), debug).await;
        }
        pump(&mut sw, &mut truth, Duration::from_secs(2), debug).await;
        call(&mut sw, &mut truth, peer, 4, "goodbye/1", request(&u64le(1)), debug).await;
        pump(&mut sw, &mut truth, Duration::from_millis(500), debug).await;
    }
    // One transport per run: every message went over it (named as eth2peers' truth names it).
    for m in truth.iter_mut() {
        m["transport"] = json!(if transport == "quic" { "quic-v1" } else { "tcp" });
    }
    let out = json!({"stack": "rust-libp2p", "version": "0.57.1", "role": role,
        "snappy": "snap 1 (FrameEncoder, raw::Encoder)", "messages": truth});
    std::fs::write(arg(&args, "--truth", "/dev/null"), serde_json::to_string_pretty(&out).unwrap()).unwrap();
}

async fn pump(sw: &mut Swarm<Behaviour>, truth: &mut Vec<Value>, d: Duration, debug: bool) {
    let end = tokio::time::Instant::now() + d;
    while let Ok(ev) = tokio::time::timeout_at(end, sw.select_next_some()).await {
        if let SwarmEvent::Behaviour(BehaviourEvent::Gossipsub(gossipsub::Event::Message { message, .. })) = &ev {
            record_gossip(truth, &message.data, "received");
        } else if debug { eprintln!("{ev:?}"); }
    }
}

async fn call(sw: &mut Swarm<Behaviour>, truth: &mut Vec<Value>, peer: PeerId, which: usize, name: &str, req: Vec<u8>, debug: bool) {
    if !req.is_empty() { record(truth, name, &req, false, "sent"); }
    let b = sw.behaviour_mut();
    let rr = match which { 0 => &mut b.status, 1 => &mut b.ping, 2 => &mut b.metadata, 3 => &mut b.by_range, _ => &mut b.goodbye };
    let id = rr.send_request(&peer, req);
    loop {
        let ev = sw.select_next_some().await;
        let got = match ev {
            SwarmEvent::Behaviour(BehaviourEvent::Status(request_response::Event::Message { message: request_response::Message::Response { request_id, response }, .. }))
            | SwarmEvent::Behaviour(BehaviourEvent::Ping(request_response::Event::Message { message: request_response::Message::Response { request_id, response }, .. }))
            | SwarmEvent::Behaviour(BehaviourEvent::Metadata(request_response::Event::Message { message: request_response::Message::Response { request_id, response }, .. }))
            | SwarmEvent::Behaviour(BehaviourEvent::ByRange(request_response::Event::Message { message: request_response::Message::Response { request_id, response }, .. }))
            | SwarmEvent::Behaviour(BehaviourEvent::Goodbye(request_response::Event::Message { message: request_response::Message::Response { request_id, response }, .. })) if request_id == id => response,
            SwarmEvent::Behaviour(BehaviourEvent::Goodbye(request_response::Event::OutboundFailure { request_id, .. })) if request_id == id => Vec::new(),
            SwarmEvent::Behaviour(BehaviourEvent::Gossipsub(gossipsub::Event::Message { message, .. })) => { record_gossip(truth, &message.data, "received"); continue; }
            other => { if debug { eprintln!("{other:?}"); } continue; }
        };
        record(truth, name, &got, true, "received");
        return;
    }
}
