//! [`MarkdownCache`]: rendered page versions in memory, rendered off the async
//! executor on threads of their own, once per version.
//!
//! Why threads of its own: a render is CPU work on untrusted input (bounded by the
//! nesting cap to well under a second, but not free), and an HTTP worker that
//! rendered would stall every connection it serves (`/healthz` included) for that
//! long. Why at view time rather than at write time: imports write tens of
//! thousands of pages, most never viewed, and a rendered version is cheap to keep
//! once it is asked for; the view awaits its render without holding a worker.
//!
//! Bounds: [`RENDER_THREADS`] renders at a time, at a lower CPU priority than the
//! HTTP workers (nice 10, as the scorers); at most [`RENDER_QUEUE`] versions queued
//! or rendering, beyond which a view shows the body as plain text ([`Rendered::plain`],
//! not kept) rather than wait; concurrent first views of one version share one
//! render; a version whose render panicked is kept as plain text (it would panic
//! again).

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::future::{BoxFuture, FutureExt as _, Shared};
use hashlink::LruCache;

use super::{render, Rendered};

/// Render threads per process.
pub const RENDER_THREADS: usize = 2;

/// Page versions queued or rendering at once, at most.
pub const RENDER_QUEUE: usize = 64;

/// Nice value of the render threads (as `search::scorer::SCORER_NICE`).
const RENDER_NICE: i32 = 10;

/// Test-only fault injection: run on the render thread with the body before each
/// render (it may block, to hold a render in progress).
#[cfg(feature = "fault-injection")]
pub type RenderHook = Arc<dyn Fn(&str) + Send + Sync>;

type Key = (i64, i64);
type Flight = Shared<BoxFuture<'static, Option<Arc<Rendered>>>>;

/// The rendered HTML of recently shown page versions, keyed by (page id, version):
/// a new version is a new key, so an entry is never stale. Holds its render
/// threads; they end when it is dropped.
pub struct MarkdownCache {
    shared: Arc<Inner>,
    jobs: SyncSender<Job>,
}

/// What the cache and its threads share.
struct Inner {
    state: Mutex<State>,
    max_bytes: usize,
}

struct State {
    entries: LruCache<Key, Arc<Rendered>>,
    bytes: usize,
    /// Versions queued or rendering, and the render each view of one awaits.
    flights: HashMap<Key, Flight>,
}

struct Job {
    key: Key,
    body: String,
    done: tokio::sync::oneshot::Sender<Arc<Rendered>>,
}

impl MarkdownCache {
    /// A cache of at most `capacity` rendered versions (at least one) holding at most
    /// `max_bytes` of HTML (the most recent version is kept whatever its size), and
    /// its [`RENDER_THREADS`] threads.
    pub fn start(
        capacity: usize,
        max_bytes: usize,
        #[cfg(feature = "fault-injection")] hook: Option<RenderHook>,
    ) -> Self {
        let shared = Arc::new(Inner {
            state: Mutex::new(State {
                entries: LruCache::new(capacity.max(1)),
                bytes: 0,
                flights: HashMap::new(),
            }),
            max_bytes,
        });
        // Never full: the flights (queued or rendering) are at most RENDER_QUEUE.
        let (jobs, queue) = sync_channel::<Job>(RENDER_QUEUE);
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..RENDER_THREADS {
            let (shared, queue) = (shared.clone(), queue.clone());
            #[cfg(feature = "fault-injection")]
            let hook = hook.clone();
            std::thread::Builder::new()
                .name(format!("markdown-{n}"))
                .spawn(move || {
                    crate::thread_priority::lower_this_thread(RENDER_NICE, "Markdown render");
                    render_loop(
                        &shared,
                        &queue,
                        #[cfg(feature = "fault-injection")]
                        hook.as_ref(),
                    );
                })
                .expect("spawning a render thread");
        }
        Self { shared, jobs }
    }

    /// The rendered `body` of version `version` of page `page_id`: from memory, or
    /// rendered on a render thread (awaited, holding no executor thread; a view that
    /// goes away does not cancel it, the result is kept for the next). When the
    /// render queue is full, `body` as plain text, not kept.
    pub async fn rendered(&self, page_id: i64, version: i64, body: String) -> Arc<Rendered> {
        let key = (page_id, version);
        let flight = {
            let mut state = self.shared.lock();
            if let Some(hit) = state.entries.get(&key) {
                return hit.clone();
            }
            match state.flights.get(&key) {
                Some(flight) => flight.clone(),
                None if state.flights.len() >= RENDER_QUEUE => {
                    drop(state);
                    tracing::warn!(
                        page_id,
                        version,
                        "markdown render queue full: the page is shown as plain text"
                    );
                    return Arc::new(Rendered::plain(&body));
                }
                None => {
                    let (done, result) = tokio::sync::oneshot::channel();
                    let job = Job { key, body, done };
                    if let Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) =
                        self.jobs.try_send(job)
                    {
                        // The channel holds RENDER_QUEUE and the flights are fewer, so
                        // only threads that are gone (never seen) refuse a job.
                        return Arc::new(Rendered::plain(&job.body));
                    }
                    let flight = result.map(Result::ok).boxed().shared();
                    state.flights.insert(key, flight.clone());
                    flight
                }
            }
        };
        match flight.await {
            Some(rendered) => rendered,
            // The render thread went away (never seen: renders catch panics).
            None => Arc::new(Rendered::plain("")),
        }
    }

    /// Rendered versions held.
    pub fn len(&self) -> usize {
        self.shared.lock().entries.len()
    }

    /// Bytes of rendered HTML held.
    pub fn bytes(&self) -> usize {
        self.shared.lock().bytes
    }

    /// Whether nothing is held yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing that can panic runs under the lock (rendering happens outside),
        // so a poisoned lock still guards consistent data.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `rendered` as version `key` (evicting least recently used versions
    /// past the bounds) and ends its flight.
    fn keep(&self, key: Key, rendered: Arc<Rendered>) {
        let mut state = self.lock();
        state.flights.remove(&key);
        let capacity = state.entries.capacity();
        if let Some(old) = state.entries.remove(&key) {
            state.bytes -= old.bytes();
        }
        while state.entries.len() >= capacity
            || (!state.entries.is_empty() && state.bytes + rendered.bytes() > self.max_bytes)
        {
            match state.entries.remove_lru() {
                Some((_, old)) => state.bytes -= old.bytes(),
                None => break,
            }
        }
        state.bytes += rendered.bytes();
        state.entries.insert(key, rendered);
    }
}

/// One render thread: takes jobs until the cache is dropped.
fn render_loop(
    shared: &Inner,
    queue: &Mutex<Receiver<Job>>,
    #[cfg(feature = "fault-injection")] hook: Option<&RenderHook>,
) {
    loop {
        let job = match queue.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let body = job.body;
        // A panic leaves nothing half-changed: the render owns all it touches.
        let rendered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            #[cfg(feature = "fault-injection")]
            if let Some(hook) = hook {
                hook(&body);
            }
            render(&body)
        }))
        .unwrap_or_else(|_| {
            tracing::error!(
                page_id = job.key.0,
                version = job.key.1,
                "rendering a page body panicked: it is shown as plain text"
            );
            Rendered::plain(&body)
        });
        let rendered = Arc::new(rendered);
        shared.keep(job.key, rendered.clone());
        // The views may all be gone; the version is kept either way.
        let _ = job.done.send(rendered);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(capacity: usize, max_bytes: usize) -> MarkdownCache {
        MarkdownCache::start(
            capacity,
            max_bytes,
            #[cfg(feature = "fault-injection")]
            None,
        )
    }

    #[tokio::test]
    async fn the_cache_is_bounded_by_bytes_too() {
        // Each of these is about 70 bytes: HTML and summary.
        let cache = cache(100, 100);
        cache
            .rendered(1, 1, "a paragraph of some forty bytes".into())
            .await;
        cache
            .rendered(2, 1, "another paragraph of forty bytes".into())
            .await;
        assert_eq!(cache.len(), 1, "two would be over 100 bytes");
        assert!(cache.bytes() <= 100);
        // One entry over the budget is still kept: it is the one being shown.
        cache.rendered(3, 1, "long ".repeat(100)).await;
        assert_eq!(cache.len(), 1);
    }

    #[tokio::test]
    async fn the_cache_renders_each_version_once() {
        let cache = cache(2, usize::MAX);
        let a = cache.rendered(1, 1, "# one".into()).await;
        let again = cache
            .rendered(1, 1, "# changed body, same version".into())
            .await;
        assert!(Arc::ptr_eq(&a, &again));
        let v2 = cache.rendered(1, 2, "# two".into()).await;
        assert!(v2.html.contains("two"));
        cache.rendered(2, 1, "x".into()).await;
        assert_eq!(cache.len(), 2);
    }

    #[cfg(feature = "fault-injection")]
    #[tokio::test]
    async fn concurrent_first_views_share_one_render_and_a_full_queue_shows_plain_text() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let started = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let hook: RenderHook = {
            let (started, gate) = (started.clone(), gate.clone());
            Arc::new(move |body: &str| {
                if body.starts_with("slow") {
                    started.fetch_add(1, Ordering::SeqCst);
                    let (open, changed) = &*gate;
                    let mut open = open.lock().unwrap();
                    while !*open {
                        open = changed.wait(open).unwrap();
                    }
                }
            })
        };
        let cache = Arc::new(MarkdownCache::start(1000, usize::MAX, Some(hook)));
        // Every render thread held, and the queue behind them filled.
        let mut views = Vec::new();
        for page in 0..RENDER_QUEUE as i64 {
            for _ in 0..3 {
                let cache = cache.clone();
                views.push(tokio::spawn(async move {
                    cache.rendered(page, 1, format!("slow *{page}*")).await
                }));
            }
        }
        // Wait for every version to be queued, not only for the threads to start:
        // a spawned view not yet run would leave room for the one below, which
        // would then queue behind the held renders and never be answered.
        while started.load(Ordering::SeqCst) < RENDER_THREADS
            || cache.shared.lock().flights.len() < RENDER_QUEUE
        {
            tokio::task::yield_now().await;
        }
        // The queue is full: one more version is shown as it is, at once.
        let plain = cache.rendered(9999, 1, "*not rendered*".into()).await;
        assert_eq!(plain.html, "<pre>*not rendered*</pre>");
        let (open, changed) = &*gate;
        *open.lock().unwrap() = true;
        changed.notify_all();
        for (i, view) in views.into_iter().enumerate() {
            let rendered = view.await.unwrap();
            assert!(
                rendered.html.contains(&format!("<em>{}</em>", i / 3)),
                "{rendered:?}"
            );
        }
        assert_eq!(
            started.load(Ordering::SeqCst),
            RENDER_QUEUE,
            "one render per version"
        );
        assert_eq!(cache.len(), RENDER_QUEUE);
        // The plain-text answer was not kept: the next view renders it.
        let later = cache.rendered(9999, 1, "*not rendered*".into()).await;
        assert!(later.html.contains("<em>not rendered</em>"), "{later:?}");
    }
}
