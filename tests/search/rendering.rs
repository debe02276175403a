//! Page bodies are untrusted input: their Markdown is rendered on render threads,
//! never on an HTTP worker, and nested at most `markdown::MAX_NESTING` deep.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::helpers::spawn_app_with;

/// Holds every render of a body starting with `>>>` until [`Gate::open`].
#[derive(Default)]
struct Gate {
    state: Mutex<(usize, bool)>, // (renders held, open)
    changed: Condvar,
}

impl Gate {
    fn hook(self: &Arc<Self>) -> agent_pages::markdown::RenderHook {
        let gate = self.clone();
        Arc::new(move |body: &str| {
            if !body.starts_with(">>>") {
                return;
            }
            let mut state = gate.state.lock().unwrap();
            state.0 += 1;
            gate.changed.notify_all();
            while !state.1 {
                state = gate.changed.wait(state).unwrap();
            }
        })
    }

    /// Waits (off the async runtime) until a render is held in the hook.
    async fn wait_held(self: &Arc<Self>) {
        let gate = self.clone();
        tokio::task::spawn_blocking(move || {
            let state = gate.state.lock().unwrap();
            let (state, timeout) = gate
                .changed
                .wait_timeout_while(state, Duration::from_secs(60), |s| s.0 == 0)
                .unwrap();
            assert!(!timeout.timed_out(), "no render started: {:?}", *state);
        })
        .await
        .unwrap();
    }

    fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

#[actix_web::test]
async fn a_slow_markdown_render_holds_no_http_worker() {
    let gate = Arc::new(Gate::default());
    let hook = gate.hook();
    // One HTTP worker: were the render on it, nothing else could be answered.
    let app = spawn_app_with(move |settings| {
        settings.http_workers = Some(1);
        settings.markdown_hook = Some(hook);
    })
    .await;
    let deep = format!("{} x", ">".repeat(40_000));
    app.conn()
        .execute("UPDATE pages SET body = ?1 WHERE slug = 'curl'", [&deep])
        .unwrap();
    let view = {
        let request = app.client.get(format!("{}/p/curl", app.address));
        actix_web::rt::spawn(async move {
            let r = request.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        })
    };
    // The deep page's render is running (held in the hook on its render thread)...
    gate.wait_held().await;
    // ...and the one worker answers other connections meanwhile, other pages too.
    // (The timeout only turns a worker stuck in the render into a failure.)
    let health = tokio::time::timeout(Duration::from_secs(30), app.get("/healthz"))
        .await
        .expect("the HTTP worker answered nothing while a render ran");
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), "ok\n");
    let other = app.get("/p/kubernetes").await;
    assert_eq!(other.status(), 200);
    assert!(!view.is_finished(), "the deep page waits for its render");

    gate.open();
    let (status, page) = view.await.unwrap();
    assert_eq!(status, 200);
    // Readable: the quotes up to the cap render, the rest is shown as written.
    let quotes = page.matches("<blockquote>").count();
    assert!(
        (10..=agent_pages::markdown::MAX_NESTING).contains(&quotes),
        "{quotes} block quotes"
    );
    assert!(
        page.contains("<pre><code>&gt;&gt;&gt;"),
        "the deeper source is shown"
    );
    assert!(page.contains("&gt; x"), "the innermost text is kept");
    // Rendered once (beside the other page): the next view is served from memory.
    assert_eq!(app.state.pages.markdown.len(), 2);
    assert_eq!(app.get("/p/curl").await.status(), 200);
    assert_eq!(app.state.pages.markdown.len(), 2);
}
