//! Two Bitcoin P2P peers over real TCP, for captures: the dialer speaks BIP324 (v2, the
//! rust-bitcoin `bip324` crate's `io::Protocol`) or v1; the listener is a BIP324 responder
//! that falls back to v1 as BIP324 says: it reads the first 16 bytes before sending anything,
//! and if they are the network magic followed by "version\0\0\0\0\0" the connection is v1.
//! v1 messages are rust-bitcoin's `RawNetworkMessage` encoding; a v2 message's contents are
//! BIP324's: a 1-byte short message type ID (ping 18, pong 19, block 2) or 0 and the 12-byte
//! command (version, verack: they have no short ID), then the same payload.
//!
//! The exchange: the dialer sends version, the listener version and verack, the dialer verack
//! and a ping, the listener a pong and a block (the file given), then both close.  Each peer
//! prints one JSON line: its transport and, in order, every unit it wrote with its size on
//! the wire (the BIP324 key and garbage, terminator, decoy and version packets, and each
//! message), and the bytes it wrote in all.
//!
//!     bip324peers listen PORT BLOCKFILE
//!     bip324peers dial HOST:PORT v2|v1 BLOCKFILE

use std::cell::Cell;
use std::io::{BufReader, Cursor, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;

use bip324::io::{Payload, Protocol};
use bip324::{PacketType, Role};
use bitcoin::consensus::{deserialize, encode::serialize};
use bitcoin::hashes::Hash;
use bitcoin::p2p::message::{NetworkMessage, RawNetworkMessage};
use bitcoin::p2p::message_network::VersionMessage;
use bitcoin::p2p::{Address, Magic, ServiceFlags};

const MAGIC: Magic = Magic::BITCOIN;
const PING_NONCE: u64 = 0x0123_4567_89ab_cdef;
/// Garbage each side sends after its key (BIP324 allows up to 4095 bytes), and one decoy
/// packet before its version packet: both are part of the real handshake's shape.
const GARBAGE: [usize; 2] = [121, 37]; // dialer, listener
const DECOY: [usize; 2] = [50, 0];

/// Counts every byte written to the socket: the truth of what this peer sent.
struct Counting {
    inner: TcpStream,
    n: Rc<Cell<u64>>,
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let k = self.inner.write(buf)?;
        self.n.set(self.n.get() + k as u64);
        Ok(k)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

enum Wire {
    V1 {
        r: BufReader<Box<dyn Read>>,
        w: Counting,
    },
    V2(Protocol<BufReader<Box<dyn Read>>, Counting>),
}

struct Peer {
    wire: Wire,
    sent: Vec<String>,
    count: Rc<Cell<u64>>,
}

/// BIP324, "v2 Bitcoin P2P message structure": the short message type IDs of the messages
/// sent here that have one.
const SHORT_IDS: [(u8, &str); 3] = [(2, "block"), (18, "ping"), (19, "pong")];

fn short_id(cmd: &str) -> Option<u8> {
    SHORT_IDS.iter().find(|(_, c)| *c == cmd).map(|(id, _)| *id)
}

/// A v1 command field (12 bytes, NUL-padded) for a short ID.
fn command_of(id: u8) -> [u8; 12] {
    let (_, c) = SHORT_IDS
        .iter()
        .find(|(i, _)| *i == id)
        .expect("a short ID sent here");
    let mut out = [0u8; 12];
    out[..c.len()].copy_from_slice(c.as_bytes());
    out
}

/// One message this peer wrote: its command, its payload and its bytes on the wire.
fn unit(kind: &str, command: &str, payload_len: usize, wire_len: u64) -> String {
    format!(
        "{{\"kind\": \"{kind}\", \"command\": \"{command}\", \"payload_len\": {payload_len}, \"wire_len\": {wire_len}}}"
    )
}

impl Peer {
    fn send(&mut self, msg: NetworkMessage) {
        let raw = RawNetworkMessage::new(MAGIC, msg);
        let cmd = raw.cmd().to_string();
        let before = self.count.get();
        let bytes = serialize(&raw);
        let payload = &bytes[24..];
        match &mut self.wire {
            Wire::V1 { w, .. } => {
                w.write_all(&bytes).unwrap();
                w.flush().unwrap();
            }
            Wire::V2(p) => {
                let mut contents = Vec::with_capacity(13 + payload.len());
                match short_id(&cmd) {
                    Some(id) => contents.push(id),
                    None => {
                        contents.push(0);
                        contents.extend_from_slice(&bytes[4..16]);
                    }
                }
                contents.extend_from_slice(payload);
                p.write(&Payload::genuine(contents)).unwrap();
            }
        }
        let kind = if matches!(self.wire, Wire::V1 { .. }) {
            "v1 message"
        } else {
            "v2 packet"
        };
        self.sent
            .push(unit(kind, &cmd, payload.len(), self.count.get() - before));
    }

    fn recv(&mut self) -> NetworkMessage {
        match &mut self.wire {
            Wire::V1 { r, .. } => {
                let mut hdr = [0u8; 24];
                r.read_exact(&mut hdr).unwrap();
                let len = u32::from_le_bytes(hdr[16..20].try_into().unwrap()) as usize;
                let mut all = hdr.to_vec();
                all.resize(24 + len, 0);
                r.read_exact(&mut all[24..]).unwrap();
                let raw: RawNetworkMessage = deserialize(&all).expect("a v1 message");
                raw.into_payload()
            }
            Wire::V2(p) => loop {
                let got = p.read().unwrap();
                if got.packet_type() == PacketType::Decoy {
                    continue;
                }
                let c = got.contents();
                // As a v1 message, whose decoding (and checksum) rust-bitcoin has.
                let (cmd, payload) = if c[0] == 0 {
                    (c[1..13].to_vec(), &c[13..])
                } else {
                    (command_of(c[0]).to_vec(), &c[1..])
                };
                let mut v1 = MAGIC.to_bytes().to_vec();
                v1.extend_from_slice(&cmd);
                v1.extend_from_slice(&(payload.len() as u32).to_le_bytes());
                let h = bitcoin::hashes::sha256d::Hash::hash(payload);
                v1.extend_from_slice(&h[..4]);
                v1.extend_from_slice(payload);
                let raw: RawNetworkMessage = deserialize(&v1).expect("a v2 message");
                break raw.into_payload();
            },
        }
    }

    fn report(&self, role: &str) {
        let transport = if matches!(self.wire, Wire::V1 { .. }) {
            "v1"
        } else {
            "v2"
        };
        println!(
            "{{\"role\": \"{role}\", \"transport\": \"{transport}\", \"bytes_sent\": {}, \"sent\": [{}]}}",
            self.count.get(),
            self.sent.join(", ")
        );
    }
}

fn version(me: &TcpStream) -> NetworkMessage {
    let local = me.local_addr().unwrap();
    let remote = me.peer_addr().unwrap();
    NetworkMessage::Version(VersionMessage::new(
        ServiceFlags::NETWORK | ServiceFlags::WITNESS,
        1_700_000_000,
        Address::new(&remote, ServiceFlags::NONE),
        Address::new(&local, ServiceFlags::NETWORK | ServiceFlags::WITNESS),
        u64::from(local.port()) * 7919,
        "/p2pc-bip324peers:0.1.0/".to_string(),
        924_634,
    ))
}

/// A BIP324 handshake through the crate, its units (key + garbage, then terminator, decoys
/// and the version packet: the crate writes each group at once) counted as they are written.
fn v2(stream: &TcpStream, reader: BufReader<Box<dyn Read>>, role: Role, side: usize) -> Peer {
    let count = Rc::new(Cell::new(0));
    let w = Counting {
        inner: stream.try_clone().unwrap(),
        n: count.clone(),
    };
    let garbage = vec![0x5a; GARBAGE[side]];
    let decoys = if DECOY[side] > 0 {
        Some(vec![vec![0u8; DECOY[side]]])
    } else {
        None
    };
    let p = Protocol::new(MAGIC.to_bytes(), role, Some(garbage), decoys, reader, w)
        .expect("BIP324 handshake");
    // The key (64) and garbage; then the terminator (16), the decoys (each 20 + its length: the
    // first authenticates the garbage) and the version packet (20 + 0), written together.
    let key = 64 + GARBAGE[side] as u64;
    let sent = vec![
        format!(
            "{{\"kind\": \"v2 key+garbage\", \"garbage_len\": {}, \"wire_len\": {key}}}",
            GARBAGE[side]
        ),
        format!(
            "{{\"kind\": \"v2 terminator+decoys+version\", \"decoy_len\": {}, \"wire_len\": {}}}",
            DECOY[side],
            count.get() - key
        ),
    ];
    Peer {
        wire: Wire::V2(p),
        sent,
        count,
    }
}

fn v1(stream: &TcpStream, reader: BufReader<Box<dyn Read>>) -> Peer {
    let count = Rc::new(Cell::new(0));
    let w = Counting {
        inner: stream.try_clone().unwrap(),
        n: count.clone(),
    };
    Peer {
        wire: Wire::V1 { r: reader, w },
        sent: Vec::new(),
        count,
    }
}

fn block(path: &str) -> NetworkMessage {
    let raw = std::fs::read(path).expect("block file");
    NetworkMessage::Block(deserialize(&raw).expect("a serialized block"))
}

fn listen(port: u16, block_file: &str) {
    let l = TcpListener::bind(("0.0.0.0", port)).unwrap();
    let (s, _) = l.accept().unwrap();
    s.set_nodelay(true).unwrap();
    // BIP324: the responder sends nothing before the first 16 bytes tell v1 from v2.
    let mut first = [0u8; 16];
    (&s).read_exact(&mut first).unwrap();
    let mut v1_prefix = MAGIC.to_bytes().to_vec();
    v1_prefix.extend_from_slice(b"version\0\0\0\0\0");
    let reader: Box<dyn Read> = Box::new(Cursor::new(first.to_vec()).chain(s.try_clone().unwrap()));
    let reader = BufReader::new(reader);
    let mut p = if first[..] == v1_prefix[..] {
        v1(&s, reader)
    } else {
        v2(&s, reader, Role::Responder, 1)
    };
    assert!(matches!(p.recv(), NetworkMessage::Version(_)));
    p.send(version(&s));
    p.send(NetworkMessage::Verack);
    assert!(matches!(p.recv(), NetworkMessage::Verack));
    assert_eq!(p.recv(), NetworkMessage::Ping(PING_NONCE));
    p.send(NetworkMessage::Pong(PING_NONCE));
    p.send(block(block_file));
    // The dialer closes first once it has the block.
    let mut rest = Vec::new();
    let _ = (&s).read_to_end(&mut rest);
    p.report("listener");
}

fn dial(addr: &str, transport: &str, block_file: &str) {
    let s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    let reader: Box<dyn Read> = Box::new(s.try_clone().unwrap());
    let reader = BufReader::new(reader);
    let mut p = match transport {
        "v2" => v2(&s, reader, Role::Initiator, 0),
        "v1" => v1(&s, reader),
        _ => panic!("transport: v2 or v1"),
    };
    p.send(version(&s));
    assert!(matches!(p.recv(), NetworkMessage::Version(_)));
    assert!(matches!(p.recv(), NetworkMessage::Verack));
    p.send(NetworkMessage::Verack);
    p.send(NetworkMessage::Ping(PING_NONCE));
    assert_eq!(p.recv(), NetworkMessage::Pong(PING_NONCE));
    let got = p.recv();
    assert_eq!(got, block(block_file));
    s.shutdown(std::net::Shutdown::Both).unwrap();
    p.report("dialer");
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    match a.get(1).map(String::as_str) {
        Some("listen") => listen(a[2].parse().unwrap(), &a[3]),
        Some("dial") => dial(&a[2], &a[3], &a[4]),
        _ => {
            eprintln!("usage: bip324peers listen PORT BLOCKFILE | dial HOST:PORT v2|v1 BLOCKFILE");
            std::process::exit(2);
        }
    }
}
