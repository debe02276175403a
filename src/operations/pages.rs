//! The page operations both faces expose (SPEC §4: publish, list, read, update,
//! archive, claim): each takes the [`Caller`] and the fields as sent, applies the
//! field rules ([`crate::domain`]), the publish budget ([`super::publish_budget`])
//! and the PIN check ([`super::pin_check`]) in that order, calls the page store
//! ([`crate::page_store`]) and answers a body type of [`super::types`] or an
//! [`ApiError`]. `routes::api` and the MCP tools only translate a request into one
//! of these calls and its answer into HTTP or a tool result, so both count against
//! the same budgets.
//!
//! A publish may carry an idempotency key ([`Conditions::idempotency`]): it is
//! claimed after the fields are checked and before the publish budget is spent
//! ([`super::idempotency`]), so a replay of the first answer spends nothing.
//!
//! A write names the page it changes as a [`Target`] (slug and PIN as sent), states
//! its [`Conditions`], and answers [`Written`] (its body and the spend's
//! `RateLimit` values). Those three are where a write grows: a precondition on the
//! page's version or an idempotency key is a field of [`Conditions`] that each face
//! fills from its request, an outcome such as "version mismatch" is an [`ApiError`]
//! kind both faces already answer from its problem row, and what a write answers
//! beside its body is a field of [`Written`].

use super::error::ApiError;
use super::idempotency::{self, Begun, Idempotency};
use super::publish_budget::{self, Spent};
use super::types::{
    CreatePage, Created, ListQuery, PageList, PageListItem, PageView, StateChanged, UpdatePage,
    Updated,
};
use super::{pin_check, Caller};
use crate::domain::{NewPage, PageBody, PageSlug, PageTitle};
use crate::page_store::{CreateRefused, StateChange};
use crate::pin;
use crate::state::AppState;

/// The page a write changes, as the request named it: what update, archive and
/// claim take beside their own fields.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The slug as sent (a path segment, a tool argument); one that breaks the slug
    /// pattern names no page (404).
    pub slug: &'a str,
    /// The PIN as sent (the `X-Page-Pin` header, the tool's `pin`), `None` when
    /// none was; checked by [`pin_check::authorize`].
    pub pin: Option<&'a [u8]>,
}

impl<'a> Target<'a> {
    /// The page `slug` with the PIN `pin` (an MCP tool's required `pin`).
    pub fn pinned(slug: &'a str, pin: &'a str) -> Self {
        Self {
            slug,
            pin: Some(pin.as_bytes()),
        }
    }
}

/// One call of an operation on the page a request names: the app, who calls, the
/// page with the PIN as sent, and what a write must find. Each face builds it once
/// per request (the HTTP routes from the path, `X-Page-Pin` and `If-Match`; the MCP
/// tools from their `slug`, `pin` and `expected_version`); the reads and
/// [`super::history::rotate_pin`] leave [`Conditions`] at its default and check none.
#[derive(Clone)]
pub struct PageCall<'a> {
    pub state: &'a AppState,
    pub caller: &'a Caller,
    pub target: Target<'a>,
    pub conditions: Conditions,
}

impl<'a> PageCall<'a> {
    /// A call on `target` for `caller` with no conditions.
    pub fn new(state: &'a AppState, caller: &'a Caller, target: Target<'a>) -> Self {
        Self {
            state,
            caller,
            target,
            conditions: Conditions::default(),
        }
    }

    /// This call with `conditions` for its write.
    pub fn expecting(self, conditions: Conditions) -> Self {
        Self { conditions, ..self }
    }

    /// The page store.
    pub fn store(&self) -> &'a crate::page_store::PageStore {
        &self.state.pages.store
    }

    /// The slug of the target, parsed: [`path_slug`].
    pub fn slug(&self) -> Result<PageSlug, ApiError> {
        path_slug(self.target.slug)
    }

    /// The PIN check ([`pin_check::authorize`]) of the page `slug` (this call's
    /// target, parsed) with the PIN as sent, a wrong one counted; the page's id.
    pub(crate) async fn authorize(&self, slug: &PageSlug) -> Result<i64, ApiError> {
        pin_check::authorize(self.state, &self.caller.client, slug, self.target.pin).await
    }

    /// The publish budget, then [`Self::authorize`]: what every write to an existing
    /// page does once its own fields are checked. Answers the spend and the page's id.
    pub(crate) async fn spend_and_authorize(
        &self,
        slug: &PageSlug,
    ) -> Result<(Spent, i64), ApiError> {
        let spent = publish_budget::spend(self.state, &self.caller.client).await?;
        Ok((spent, self.authorize(slug).await?))
    }
}

/// What a write must find before it is made, beside its PIN. Each face fills them
/// in one place (`If-Match`, the tools' `expected_version`) and every write checks
/// them in one (the page store, inside the write's transaction).
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    /// The version the page must be at (`If-Match: "v7"`); `None` (no header, or
    /// `If-Match: *`) writes whatever version it is at. A page at another version
    /// is [`ApiError::VersionMismatch`] and nothing changes.
    pub expected_version: Option<i64>,
    /// The idempotency key of a publish (`Idempotency-Key`, the tool's
    /// `idempotency_key`) with the request's fingerprint; other writes ignore it.
    pub idempotency: Option<Idempotency>,
}

impl Conditions {
    /// Only a version the page must be at: the conditions of a write other than a
    /// publish.
    pub fn expecting(expected_version: Option<i64>) -> Self {
        Self {
            expected_version,
            idempotency: None,
        }
    }
}

/// What a page write answers: the body both faces send, the `RateLimit` values
/// of the publish budget it spent (the HTTP face's headers), and whether it is a
/// replay.
#[derive(Debug, Clone)]
pub struct Written<T> {
    pub answer: T,
    /// `None` when nothing was spent (a replay).
    pub spent: Option<Spent>,
    /// The status of the first answer when this one replays it (an idempotent
    /// publish sent again): nothing was written or spent now.
    pub replayed: Option<u16>,
}

impl<T> Written<T> {
    /// The answer of a write that spent `spent`.
    pub fn spent(answer: T, spent: Spent) -> Self {
        Self {
            answer,
            spent: Some(spent),
            replayed: None,
        }
    }
}

/// Rows of `GET /api/pages` unless `per_page` says otherwise, and the most it may say.
pub const DEFAULT_PER_PAGE: i64 = 50;
pub const MAX_PER_PAGE: i64 = 100;

/// The highest `page` a paged API route reads: `(page - 1) * per_page` always fits;
/// a larger number asks for this page (past the end: empty).
pub const MAX_PAGE: i64 = i64::MAX / MAX_PER_PAGE;

/// A slug from the path; one that breaks the slug pattern names no page.
pub fn path_slug(slug: &str) -> Result<PageSlug, ApiError> {
    PageSlug::parse(slug).map_err(|_| ApiError::no_page(slug))
}

/// Publishes `input` for `caller`: fields, then the idempotency key when one is
/// given (a replay answers here), then the publish budget, then the PIN hash and
/// the write. Errors as `POST /api/pages` answers them.
pub async fn publish(
    state: &AppState,
    caller: &Caller,
    input: CreatePage,
    conditions: Conditions,
) -> Result<Written<Created>, ApiError> {
    counted(state, "publish", async {
        let page = NewPage::parse(input.slug.as_deref(), &input.title, input.body)?;
        let Some(idempotency) = &conditions.idempotency else {
            return create_page(state, caller, page, input.pin).await;
        };
        let claim = match idempotency::begin(state, &caller.client, idempotency).await? {
            Begun::Fresh(claim) => claim,
            Begun::Replay { status, answer } => {
                return Ok(Written {
                    answer,
                    spent: None,
                    replayed: Some(status),
                })
            }
        };
        let created = create_page(state, caller, page, input.pin).await;
        let (answer, spent) = match created {
            Ok(Written { answer, spent, .. }) => (Ok(answer), spent),
            Err(e) => (Err(e), None),
        };
        idempotency::end(state, claim, &answer).await;
        Ok(Written {
            answer: answer?,
            spent,
            replayed: None,
        })
    })
    .await
}

/// The publish budget, then the PIN hash and the write of `page`.
async fn create_page(
    state: &AppState,
    caller: &Caller,
    page: NewPage,
    pin: Option<String>,
) -> Result<Written<Created>, ApiError> {
    let spent = publish_budget::spend(state, &caller.client).await?;
    let pin_hash = match pin {
        Some(pin) => Some(pin::hash_off_thread(&state.api.hash_slots, pin).await?),
        None => None,
    };
    let now = state.clock.now();
    let created = state
        .pages
        .store
        .create(page, pin_hash, now)
        .await?
        .map_err(|CreateRefused::SlugTaken(slug)| ApiError::Conflict(slug.to_string()))?;
    let slug = created.slug.to_string();
    let answer = Created {
        url: caller.page_url(&slug),
        version: created.version,
        slug,
    };
    Ok(Written::spent(answer, spent))
}

/// One page of the ledger as `GET /api/pages` answers it; `query` holds `page` and
/// `per_page` as sent (text), checked here.
pub async fn list(
    state: &AppState,
    caller: &Caller,
    query: &ListQuery,
) -> Result<PageList, ApiError> {
    let (per_page, page) = paging(query)?;
    let offset = (page - 1) * per_page;
    let listed = state.pages.store.ledger(offset, per_page).await?;
    let total = listed.total;
    let pages = listed
        .rows
        .into_iter()
        .map(|p| PageListItem {
            url: caller.page_url(&p.slug),
            slug: p.slug,
            title: p.title,
            version: p.version,
            updated_at: p.updated_at,
        })
        .collect();
    Ok(PageList {
        pages,
        page,
        per_page,
        total,
        next_page: (offset + per_page < total).then_some(page + 1),
    })
}

/// `per_page` and `page` of a paged route as sent, checked: whole numbers from 1,
/// `per_page` to [`MAX_PER_PAGE`] (default [`DEFAULT_PER_PAGE`]), `page` any
/// (default 1; past [`MAX_PAGE`] it is [`MAX_PAGE`], an empty page past the end).
pub fn paging(query: &ListQuery) -> Result<(i64, i64), ApiError> {
    let per_page = whole_number(
        "per_page",
        query.per_page.as_deref(),
        DEFAULT_PER_PAGE,
        MAX_PER_PAGE,
    )?;
    // Any page past the end is an empty page, however large its number (the rule
    // of `/` and `/search` too): one past what an offset can hold is the last
    // such page, not a 400.
    let page = match crate::domain::parse_whole_number(query.page.as_deref()) {
        Ok(None) => 1,
        Ok(Some(n)) => i64::try_from(n).unwrap_or(i64::MAX).min(MAX_PAGE),
        Err(_) => {
            return Err(ApiError::validation(
                "page",
                "page must be a whole number from 1".to_owned(),
            ))
        }
    };
    Ok((per_page, page))
}

/// `text` as a whole number from 1 to `max` under the rule every paged route shares
/// ([`crate::domain::parse_whole_number`]), or `default` when absent or blank.
fn whole_number(field: &str, text: Option<&str>, default: i64, max: i64) -> Result<i64, ApiError> {
    let n = crate::domain::parse_whole_number(text).map(|n| n.map(i64::try_from));
    match n {
        Ok(None) => Ok(default),
        Ok(Some(Ok(n))) if n <= max => Ok(n),
        _ => Err(ApiError::validation(
            field,
            format!("{field} must be a whole number from 1 to {max}"),
        )),
    }
}

/// The published page `slug` as `GET /api/pages/{slug}` answers it.
pub async fn read(state: &AppState, caller: &Caller, slug: &str) -> Result<PageView, ApiError> {
    let slug = path_slug(slug)?;
    let page = state
        .pages
        .store
        .page(slug.as_str())
        .await?
        .ok_or_else(|| ApiError::no_page(slug.as_str()))?;
    Ok(PageView {
        url: caller.page_url(&page.slug),
        slug: page.slug,
        title: page.title,
        body: page.body,
        version: page.version,
        created_at: page.created_at,
        updated_at: page.updated_at,
    })
}

/// Replaces title and/or body of the page `call` names: the slug, the fields, then
/// the publish budget, then the PIN check ([`pin_check::authorize`]), then the write
/// under `call.conditions`. Errors as `PUT /api/pages/{slug}` answers them.
pub async fn update(call: PageCall<'_>, input: UpdatePage) -> Result<Written<Updated>, ApiError> {
    counted(call.state, "update", async {
        let slug = call.slug()?;
        if input.title.is_none() && input.body.is_none() {
            return Err(ApiError::validation("title", "give title, body or both"));
        }
        let title = input.title.as_deref().map(PageTitle::parse).transpose()?;
        let body = input.body.map(PageBody::parse).transpose()?;
        let (spent, id) = call.spend_and_authorize(&slug).await?;
        let (now, expected) = (call.state.clock.now(), call.conditions.expected_version);
        let version = call
            .store()
            .update_expecting(id, title, body, now, expected)
            .await??;
        let answer = Updated {
            slug: slug.to_string(),
            version,
        };
        Ok(Written::spent(answer, spent))
    })
    .await
}

/// Runs the page write `operation` and counts it in
/// `agent_pages_page_writes_total`: `ok`, or the kind of problem that refused it.
pub(crate) async fn counted<T>(
    state: &AppState,
    operation: &str,
    write: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    let written = write.await;
    let refused = written.as_ref().err().map(|e| e.kind().problem_type);
    state.metrics.count_page_write(operation, refused);
    written
}

/// Archives or claims (`change`) the page `call` names, counted under the change's
/// name: the slug, then the publish budget, then the PIN check, then the write under
/// `call.conditions`; errors as `POST /api/pages/{slug}/archive` and `…/claim`
/// answer them.
pub async fn change_state(
    call: PageCall<'_>,
    change: StateChange,
) -> Result<Written<StateChanged>, ApiError> {
    let operation = match change {
        StateChange::Archive => "archive",
        StateChange::Claim => "claim",
    };
    counted(call.state, operation, async {
        let slug = call.slug()?;
        let (spent, id) = call.spend_and_authorize(&slug).await?;
        let (now, expected) = (call.state.clock.now(), call.conditions.expected_version);
        let after = call
            .store()
            .change_state_expecting(id, change, now, expected)
            .await??;
        let answer = StateChanged {
            slug: after.slug,
            version: after.version,
            lifecycle: after.lifecycle,
            claimed_at: after.claimed_at,
        };
        Ok(Written::spent(answer, spent))
    })
    .await
}
