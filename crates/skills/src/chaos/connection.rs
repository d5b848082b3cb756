//! Serves one proxied connection: its two pumps (client to target and back), through the
//! proxy's own HTTP server when the target speaks HTTP.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::net::TcpStream;

use super::fault::Direction;
use super::http_proxy;
use super::link::{Link, Shared};
use super::pump::pump;
use super::target::Target;

/// Longest the proxy waits to connect to the target.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves one accepted connection until it ends.
pub(crate) async fn serve(client: TcpStream, id: u64, shared: Arc<Shared>) {
    let link = Arc::new(Link::new(id, shared.clone()));
    let stage = link.stage();
    if let Some(j) = link.down_in(stage.index) {
        let fault = &shared.phases[stage.index].faults[j];
        link.chaos(
            stage.index,
            fault,
            None,
            json!({"refused": "reset as accepted"}),
        );
        let _ = client.set_zero_linger();
        return;
    }
    let _ = client.set_nodelay(true);
    match &shared.target {
        Target::Tcp { .. } => tcp(client, link).await,
        Target::Http(_) => http(client, link).await,
    }
}

async fn tcp(client: TcpStream, link: Arc<Link>) {
    let authority = link.shared.target.authority();
    let upstream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&authority)).await
    {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(error)) => {
            let error = format!("could not connect to {authority}: {error}");
            link.shared.ledger.genuine("target", Some(link.id), error);
            return;
        }
        Err(_) => {
            let error = format!("no connection to {authority} within {CONNECT_TIMEOUT:?}");
            link.shared.ledger.genuine("target", Some(link.id), error);
            return;
        }
    };
    let _ = upstream.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (target_read, target_write) = upstream.into_split();
    let ((client_read, target_write), (target_read, client_write)) = tokio::join!(
        pump(client_read, target_write, Direction::Upstream, &link),
        pump(target_read, client_write, Direction::Downstream, &link),
    );
    if link.is_reset() {
        for stream in [
            client_read.reunite(client_write),
            target_read.reunite(target_write),
        ]
        .into_iter()
        .flatten()
        {
            let _ = stream.set_zero_linger();
        }
    }
}

async fn http(client: TcpStream, link: Arc<Link>) {
    // The client's bytes go through the pumps (and their faults) to an HTTP server of
    // the proxy's own, which forwards each request to the target (and injects the
    // HTTP faults).
    let (inner, outer) = tokio::io::duplex(64 * 1024);
    let (outer_read, outer_write) = tokio::io::split(outer);
    let (client_read, client_write) = client.into_split();
    let pumps = async {
        let ((client_read, outer_write), (outer_read, client_write)) = tokio::join!(
            pump(client_read, outer_write, Direction::Upstream, &link),
            pump(outer_read, client_write, Direction::Downstream, &link),
        );
        drop((outer_read, outer_write));
        link.close();
        (client_read, client_write)
    };
    let server = http_proxy::serve(inner, link.clone());
    let ((client_read, client_write), ()) = tokio::join!(pumps, server);
    if link.is_reset()
        && let Ok(stream) = client_read.reunite(client_write)
    {
        let _ = stream.set_zero_linger();
    }
}
