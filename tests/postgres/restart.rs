//! A PostgreSQL restart under quiet replicas (Issue 31 §2): two `serve` processes
//! each hold pooled connections, the server restarts (`pg_ctl stop -m fast`, then
//! start), and the first search on each replica afterwards is served: recovery
//! costs no visitor's request.

use std::net::TcpStream;

use super::replicas::{http, seeded, Replica};
use crate::helpers::PostgresServer;

async fn search(url: &str, client: &str) -> u16 {
    http()
        .get(format!("{url}/search"))
        .query(&[("q", "kubernetes")])
        .header("X-Forwarded-For", client)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_server_restart_the_first_search_on_each_quiet_replica_is_served() {
    let mut server = PostgresServer::start();
    let url = seeded(&server).await;
    let dir = tempfile::tempdir().unwrap();
    let a = Replica::start("restart-a", dir.path(), &url, &[]);
    let b = Replica::start("restart-b", dir.path(), &url, &[]);
    // Each replica's pools hold connections to the server about to restart.
    assert_eq!(search(&a.url, "192.0.2.90").await, 200);
    assert_eq!(search(&b.url, "192.0.2.91").await, 200);
    let sessions = server.text_rows(
        "postgres",
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'agent-pages'",
    );
    let sessions: i64 = sessions[0][0].as_deref().unwrap().parse().unwrap();
    assert!(sessions >= 2, "each replica holds connections: {sessions}");

    server.stop("fast");
    // The fault first: every connection they held is gone with the server.
    assert!(
        TcpStream::connect(("127.0.0.1", server.port())).is_err(),
        "the server is down"
    );
    server.start_again();

    for (replica, client) in [(&a, "192.0.2.92"), (&b, "192.0.2.93")] {
        assert_eq!(
            search(&replica.url, client).await,
            200,
            "{}",
            replica.process.output()
        );
    }
}
