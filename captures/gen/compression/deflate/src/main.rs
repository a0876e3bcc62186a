//! Two rust-libp2p hosts whose connection runs /deflate/1.0.0 (libp2p-deflate: raw deflate,
//! sync-flushed on every flush) between /plaintext/2.0.0 and yamux, and ping each other, for
//! p2pc's captures.
//!
//!   deflatepeers listen IDFILE 0        (writes its multiaddr to IDFILE; listens on 9100;
//!                                        runs until it is killed)
//!   deflatepeers dial MULTIADDR PINGS   (exits after PINGS answered pings of its own)
//!
//! The listener is killed rather than left to see the connection close: libp2p-deflate spins
//! on a stream that ends without its final deflate block, which is how the dialer leaves it.
//!
//! Identities are Ed25519 keys from a fixed seed (1 dialer, 2 listener).
// libp2p-deflate (and the 0.52 swarm builder that can still take it) are deprecated: capturing
// that deprecated transport is the point of this program.
#![allow(deprecated)]

use std::time::Duration;

use futures::StreamExt;
use libp2p::{
    core::upgrade, deflate, identity, ping, plaintext, swarm::SwarmBuilder, swarm::SwarmEvent, tcp,
    yamux, Multiaddr, PeerId, Transport,
};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (role, target, n) = (args[1].as_str(), args[2].clone(), args[3].parse::<u32>().unwrap());
    let seed = if role == "listen" { 2u8 } else { 1u8 };
    let key = identity::Keypair::ed25519_from_bytes([seed; 32]).unwrap();
    let peer_id = PeerId::from(key.public());
    // The order rust-libp2p upgrades a connection in: security, then any I/O upgrade
    // (here the compression), then the muxer.
    let transport = tcp::tokio::Transport::new(tcp::Config::default().nodelay(true))
        .upgrade(upgrade::Version::V1)
        .authenticate(plaintext::Config::new(&key))
        .apply(deflate::DeflateConfig::default())
        .multiplex(yamux::Config::default())
        .boxed();
    let behaviour = ping::Behaviour::new(ping::Config::new().with_interval(Duration::from_millis(300)));
    let mut swarm = SwarmBuilder::with_tokio_executor(transport, behaviour, peer_id)
        .idle_connection_timeout(Duration::from_secs(30))
        .build();
    if role == "listen" {
        swarm.listen_on("/ip4/0.0.0.0/tcp/9100".parse().unwrap()).unwrap();
    } else {
        swarm.dial(target.parse::<Multiaddr>().unwrap()).unwrap();
    }
    let (mut done, mut written) = (0, false);
    loop {
        match swarm.select_next_some().await {
            SwarmEvent::NewListenAddr { address, .. } if !written => {
                std::fs::write(&target, format!("{address}/p2p/{peer_id}")).unwrap();
                written = true;
            }
            SwarmEvent::Behaviour(ping::Event { result: Ok(rtt), .. }) => {
                println!("ping rtt {rtt:?}");
                done += 1;
                if role == "dial" && done >= n {
                    break;
                }
            }
            _ => {}
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
}
