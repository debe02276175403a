//! The page operations both faces expose (SPEC §4: publish, list, read, update,
//! archive, claim): each takes the [`Caller`] and the fields as sent, applies the
//! field rules ([`crate::domain`]), the publish budget ([`super::publish_budget`])
//! and the PIN check ([`super::pin_check`]) in that order, calls the page store
//! ([`crate::page_store`]) and answers a body type of [`super::types`] or an
//! [`ApiError`]. `routes::api` and the MCP tools only translate a request into one
//! of these calls and its answer into HTTP or a tool result, so both count against
//! the same budgets.

use super::error::ApiError;
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

/// Rows of `GET /api/pages` unless `per_page` says otherwise, and the most it may say.
pub const DEFAULT_PER_PAGE: i64 = 50;
pub const MAX_PER_PAGE: i64 = 100;

/// The highest `page` of `GET /api/pages`: `(page - 1) * per_page` always fits.
pub const MAX_PAGE: i64 = i64::MAX / MAX_PER_PAGE;

/// A slug from the path; one that breaks the slug pattern names no page.
pub fn path_slug(slug: &str) -> Result<PageSlug, ApiError> {
    PageSlug::parse(slug).map_err(|_| ApiError::no_page(slug))
}

/// Publishes `input` for `caller`: fields, then the publish budget, then the PIN
/// hash and the write. Errors as `POST /api/pages` answers them.
pub async fn publish(
    state: &AppState,
    caller: &Caller,
    input: CreatePage,
) -> Result<(Created, Spent), ApiError> {
    let page = NewPage::parse(input.slug.as_deref(), &input.title, input.body)?;
    let spent = publish_budget::spend(state, &caller.client).await?;
    let pin_hash = match input.pin {
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
    Ok((
        Created {
            url: caller.page_url(&slug),
            version: created.version,
            slug,
        },
        spent,
    ))
}

/// One page of the ledger as `GET /api/pages` answers it; `query` holds `page` and
/// `per_page` as sent (text), checked here.
pub async fn list_pages(
    state: &AppState,
    caller: &Caller,
    query: &ListQuery,
) -> Result<PageList, ApiError> {
    let per_page = whole_number(
        "per_page",
        query.per_page.as_deref(),
        DEFAULT_PER_PAGE,
        MAX_PER_PAGE,
    )?;
    let page = whole_number("page", query.page.as_deref(), 1, MAX_PAGE)?;
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

/// Updates the page `slug` with `input` for `caller`, who shows `pin` (the
/// `X-Page-Pin` header as sent): fields, then the publish budget, then the PIN
/// check ([`pin_check::authorize`]), then the write. Errors as `PUT /api/pages/{slug}`
/// answers them.
pub async fn update_page(
    state: &AppState,
    caller: &Caller,
    slug: PageSlug,
    input: UpdatePage,
    pin: Option<&[u8]>,
) -> Result<(Updated, Spent), ApiError> {
    if input.title.is_none() && input.body.is_none() {
        return Err(ApiError::validation("title", "give title, body or both"));
    }
    let title = input.title.as_deref().map(PageTitle::parse).transpose()?;
    let body = input.body.map(PageBody::parse).transpose()?;
    let spent = publish_budget::spend(state, &caller.client).await?;
    let id = pin_check::authorize(state, &caller.client, &slug, pin).await?;
    let now = state.clock.now();
    let version = state.pages.store.update(id, title, body, now).await?;
    Ok((
        Updated {
            slug: slug.to_string(),
            version,
        },
        spent,
    ))
}

/// Archives the page `slug` for `caller`, who shows `pin`; errors as
/// `POST /api/pages/{slug}/archive` answers them.
pub async fn archive_page(
    state: &AppState,
    caller: &Caller,
    slug: &str,
    pin: Option<&[u8]>,
) -> Result<(StateChanged, Spent), ApiError> {
    change_state(state, caller, slug, pin, StateChange::Archive).await
}

/// Claims the page `slug` for `caller`, who shows `pin`; errors as
/// `POST /api/pages/{slug}/claim` answers them.
pub async fn claim_page(
    state: &AppState,
    caller: &Caller,
    slug: &str,
    pin: Option<&[u8]>,
) -> Result<(StateChanged, Spent), ApiError> {
    change_state(state, caller, slug, pin, StateChange::Claim).await
}

async fn change_state(
    state: &AppState,
    caller: &Caller,
    slug: &str,
    pin: Option<&[u8]>,
    change: StateChange,
) -> Result<(StateChanged, Spent), ApiError> {
    let slug = path_slug(slug)?;
    let spent = publish_budget::spend(state, &caller.client).await?;
    let id = pin_check::authorize(state, &caller.client, &slug, pin).await?;
    let now = state.clock.now();
    let after = state.pages.store.change_state(id, change, now).await?;
    Ok((
        StateChanged {
            slug: after.slug,
            version: after.version,
            lifecycle: after.lifecycle,
            claimed_at: after.claimed_at,
        },
        spent,
    ))
}
