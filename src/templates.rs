//! The tera templates, compiled into the binary so a deployed server needs no files
//! beside it. Autoescaping is on for every template (their names end in `.html`).

use tera::Tera;

const TEMPLATES: &[(&str, &str)] = &[
    ("layout.html", include_str!("../templates/layout.html")),
    ("ledger.html", include_str!("../templates/ledger.html")),
    ("page.html", include_str!("../templates/page.html")),
    ("search.html", include_str!("../templates/search.html")),
    (
        "search_rows.html",
        include_str!("../templates/search_rows.html"),
    ),
    ("error.html", include_str!("../templates/error.html")),
];

/// Parses every template. Errors: a template does not parse (a build defect).
pub fn load() -> Result<Tera, tera::Error> {
    let mut tera = Tera::default();
    tera.add_raw_templates(TEMPLATES.iter().copied())?;
    Ok(tera)
}

/// `unix` seconds as `2026-11-29 19:48 UTC`.
pub fn format_time(unix: i64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    time::OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| unix.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses() {
        load().unwrap();
    }

    #[test]
    fn times_render_in_utc_to_the_minute() {
        assert_eq!(format_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_time(1_800_000_059), "2027-01-15 08:00 UTC");
    }
}
