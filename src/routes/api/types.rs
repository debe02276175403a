//! Request and response bodies of the agent API. Their doc comments and schema
//! attributes are what the OpenAPI document tells agents.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// `POST /api/pages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
pub struct CreatePage {
    /// The page's URL name. Left out (or null), it is derived from the title
    /// (`Café Guide` → `cafe-guide`), with `-2`, `-3`, … added when taken.
    #[schema(pattern = "^[a-z0-9][a-z0-9.+-]{0,79}$", example = "kubernetes-guide")]
    pub slug: Option<String>,
    /// 1–200 characters after trimming, at least one visible; bidi controls are
    /// removed.
    #[schema(min_length = 1, max_length = 200, example = "Kubernetes guide")]
    pub title: String,
    /// Plain text, at most 262144 bytes; empty when left out.
    #[schema(example = "How to deploy.")]
    pub body: Option<String>,
    /// 6–64 characters. Needed later to update, archive or claim the page: a page
    /// published without one can never be changed through the API. Stored only as
    /// an argon2id hash.
    #[schema(min_length = 6, max_length = 64, example = "correct horse")]
    pub pin: Option<String>,
}

/// `PUT /api/pages/{slug}`: the fields to replace; give at least one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
pub struct UpdatePage {
    /// 1–200 characters after trimming, at least one visible; bidi controls are
    /// removed.
    #[schema(min_length = 1, max_length = 200)]
    pub title: Option<String>,
    /// Plain text, at most 262144 bytes.
    pub body: Option<String>,
}

/// A page just published.
#[derive(Debug, Serialize, ToSchema)]
pub struct Created {
    pub slug: String,
    /// Always 1.
    pub version: i64,
    /// Where people read it (the HTML page).
    pub url: String,
}

/// A page just changed.
#[derive(Debug, Serialize, ToSchema)]
pub struct Updated {
    pub slug: String,
    /// The new `current_version`: one more than before this update.
    pub version: i64,
}

/// A page after archive or claim.
#[derive(Debug, Serialize, ToSchema)]
pub struct StateChanged {
    pub slug: String,
    /// The version after this call (unchanged when the call changed nothing).
    pub version: i64,
    /// `active` or `archived`.
    pub lifecycle: String,
    /// When the page was claimed (unix seconds), or null.
    pub claimed_at: Option<i64>,
}

/// A published page. Times are unix seconds.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageView {
    pub slug: String,
    pub title: String,
    pub body: String,
    /// Starts at 1, +1 on every change.
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
    /// Where people read it (the HTML page).
    pub url: String,
}

/// One row of the page list (no body). Times are unix seconds.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageListItem {
    pub slug: String,
    pub title: String,
    pub version: i64,
    pub updated_at: i64,
    pub url: String,
}

/// One page of the list of published pages, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageList {
    pub pages: Vec<PageListItem>,
    /// This page number, from 1.
    pub page: i64,
    pub per_page: i64,
    /// Published pages in all.
    pub total: i64,
    /// The next page number, or null on the last page.
    pub next_page: Option<i64>,
}

/// Query of `GET /api/pages`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Page number, from 1 (default 1).
    #[param(value_type = Option<i64>, minimum = 1)]
    pub page: Option<String>,
    /// Rows per page, 1–100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub per_page: Option<String>,
}
