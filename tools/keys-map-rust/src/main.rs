//! Two rust-libp2p swarms in one process: the listener on 127.0.0.1, the dialer connects over TCP,
//! both run the Noise XX handshake and yamux, exchange one ping and exit.  Prints one line the
//! caller checks: `handshake ok <listener peer id> <rtt>`.

use std::time::Duration;

use futures::StreamExt;
use libp2p::{noise, ping, swarm::SwarmEvent, yamux, Swarm, SwarmBuilder};

fn swarm() -> Swarm<ping::Behaviour> {
    SwarmBuilder::with_new_identity()
        .with_tokio()
        .with_tcp(Default::default(), noise::Config::new, yamux::Config::default)
        .unwrap()
        .with_behaviour(|_| ping::Behaviour::default())
        .unwrap()
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(5)))
        .build()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut listener = swarm();
    let mut dialer = swarm();
    listener.listen_on("/ip4/127.0.0.1/tcp/0".parse().unwrap()).unwrap();
    let addr = loop {
        if let SwarmEvent::NewListenAddr { address, .. } = listener.select_next_some().await {
            break address;
        }
    };
    dialer.dial(addr).unwrap();
    let deadline = tokio::time::sleep(Duration::from_secs(10));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = listener.select_next_some() => {}
            ev = dialer.select_next_some() => {
                if let SwarmEvent::Behaviour(ping::Event { peer, result: Ok(rtt), .. }) = ev {
                    println!("handshake ok {peer} {rtt:?}");
                    return;
                }
            }
            _ = &mut deadline => { eprintln!("no ping within 10 s"); std::process::exit(1); }
        }
    }
}
