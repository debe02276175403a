//! A bare actix-web handler that answers every request with one fixed body: the
//! reference the gated search is measured against (`scripts/bench.sh`). It does
//! nothing per request but what actix-web itself does, so its req/s is what the
//! stack allows on this machine for a response of that size.
//!
//! ```sh
//! cargo run --release --example bare -- --body page.html --bind 127.0.0.1:0
//! ```
//! Prints `listening on http://ADDR:PORT` when ready, like the service.

use std::path::PathBuf;

use actix_web::{web, App, HttpResponse, HttpServer};
use clap::Parser;

#[derive(Debug, Parser)]
struct Args {
    /// The file whose bytes every answer carries (e.g. a saved search page).
    #[arg(long)]
    body: PathBuf,
    /// `Content-Type` of the answers.
    #[arg(long, default_value = "text/html; charset=utf-8")]
    content_type: String,
    /// Listen address; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    bind: String,
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let body = web::Bytes::from(std::fs::read(&args.body)?);
    let content_type = args.content_type.clone();
    let server = HttpServer::new(move || {
        let body = body.clone();
        let content_type = content_type.clone();
        App::new().default_service(web::to(move || {
            let body = body.clone();
            let content_type = content_type.clone();
            async move {
                HttpResponse::Ok()
                    .content_type(content_type)
                    .insert_header(("cache-control", "no-store"))
                    .body(body)
            }
        }))
    })
    .bind(&args.bind)?;
    for addr in server.addrs() {
        println!("listening on http://{addr}");
    }
    server.run().await
}
