//! JSON Lines import (`agent-pages import FILE` and `serve --demo`).
//!
//! One page a line: `{"slug"?, "title", "body"?, "pin"?}`. Pages are upserted by slug
//! (a slug absent is derived from the title). A bad line is reported with its line
//! number and skipped; the good lines are written in one transaction, so a crash or
//! an I/O error mid-file leaves the database as it was (nothing half-written).
//!
//! The import never holds SQLite's write lock while it waits or works: it reads and
//! parses the whole input and hashes every PIN (argon2, in parallel) first, and only
//! then opens the write transaction, which does nothing but upserts. A server
//! running beside it waits for that short transaction at most, never for a slow
//! pipe (`import -` with stdin left open) or for argon2.
//!
//! Input may be gzip-compressed (found by its magic bytes `1f 8b`, whatever the file
//! is called, stdin too) and may start with a UTF-8 byte order mark (Windows editors,
//! PowerShell 5's `Out-File`), which is skipped as most JSON readers do; the report
//! says when either was found.

use std::io::{BufRead, BufReader, Cursor, Read};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use rusqlite::{Connection, TransactionBehavior};
use serde::Deserialize;

use crate::domain::{NewPage, PageBody, PageSlug, PageTitle};
#[cfg(test)]
use crate::page_store::sqlite::pages;
use crate::page_store::{ImportCounts, ImportPage, PageStore, PageStoreError};

/// The demo corpus: 63,681 Debian package descriptions, gzip-compressed JSON Lines.
pub static DEMO_CORPUS_GZ: &[u8] = include_bytes!("demo/debian-pages.jsonl.gz");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    slug: Option<String>,
    title: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    pin: Option<String>,
}

/// A line that was not imported: its 1-based number and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedLine {
    pub line: usize,
    pub reason: String,
}

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportReport {
    pub inserted: usize,
    pub updated: usize,
    pub unchanged: usize,
    pub skipped: Vec<SkippedLine>,
    /// What was undone at the start of the input before its lines were read.
    pub format: InputFormat,
}

/// How the input was wrapped, as found from its first bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct InputFormat {
    /// It began with gzip's magic bytes `1f 8b` and was read decompressed (every
    /// member, as `zcat` does).
    pub gzip: bool,
    /// Its text began with a UTF-8 byte order mark (`EF BB BF`), which was skipped.
    pub bom: bool,
}

impl std::fmt::Display for InputFormat {
    /// `gzip`, `UTF-8 BOM skipped`, both joined by `, `, or nothing.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.gzip, self.bom) {
            (false, false) => Ok(()),
            (true, false) => f.write_str("gzip"),
            (false, true) => f.write_str("UTF-8 BOM skipped"),
            (true, true) => f.write_str("gzip, UTF-8 BOM skipped"),
        }
    }
}

/// gzip's magic bytes (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// U+FEFF in UTF-8.
const UTF8_BOM: [u8; 3] = [0xef, 0xbb, 0xbf];

/// Errors that stop an import as a whole (a bad line does not: it is skipped).
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("reading line {line}: {source}")]
    Read { line: usize, source: std::io::Error },
    #[error("database: {0}")]
    Db(#[from] rusqlite::Error),
    #[error("{0}")]
    Store(#[from] PageStoreError),
}

impl ImportReport {
    fn count(&mut self, counts: ImportCounts) {
        self.inserted += counts.inserted;
        self.updated += counts.updated;
        self.unchanged += counts.unchanged;
    }
}

/// Phases 1 and 2 of an import: every line of `input` read and parsed (bad ones
/// reported on stderr as they are found and skipped) and every PIN hashed (argon2,
/// on up to [`crate::pin::CONCURRENT_HASHES`] threads). Returns the pages to write
/// and the report so far (nothing counted as written yet).
///
/// `total_bytes` sizes the progress bar of the first phase (hidden when stderr is
/// not a terminal, or when `None`); the hashing phase has a bar of its own when
/// there is a first one. Errors: an I/O error reading.
pub fn prepare(
    input: impl Read,
    total_bytes: Option<u64>,
) -> Result<(Vec<ImportPage>, ImportReport), ImportError> {
    prepare_reporting(input, total_bytes, Skipped::Printed)
}

/// Where the lines an import skips are told, besides its report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Skipped {
    /// On stderr as they are found (`agent-pages import`).
    Printed,
    /// Only in the report: inside `serve`, whose stderr is its log (one event,
    /// in the log's format, counts them).
    Kept,
}

fn prepare_reporting(
    input: impl Read,
    total_bytes: Option<u64>,
    skipped: Skipped,
) -> Result<(Vec<ImportPage>, ImportReport), ImportError> {
    let mut report = ImportReport::default();
    let parsed = read_all(input, total_bytes, &mut report, skipped)?;
    let pages = hash_pins(parsed, total_bytes.is_some(), &mut report, skipped);
    report.skipped.sort_by_key(|s| s.line);
    Ok((pages, report))
}

/// [`import`] through the page store, whichever it is: [`prepare`], then one
/// [`PageStore::import`] (one transaction: all pages or none).
///
/// Errors: an I/O error reading, or the store failed; either way nothing of this
/// import was committed.
pub async fn import_into(
    store: &PageStore,
    input: impl Read,
    total_bytes: Option<u64>,
    now: i64,
) -> Result<ImportReport, ImportError> {
    import_reporting(store, input, total_bytes, now, Skipped::Printed).await
}

async fn import_reporting(
    store: &PageStore,
    input: impl Read,
    total_bytes: Option<u64>,
    now: i64,
    skipped: Skipped,
) -> Result<ImportReport, ImportError> {
    let (pages, mut report) = prepare_reporting(input, total_bytes, skipped)?;
    report.count(store.import(pages, now).await?);
    Ok(report)
}

/// Imports every line of `input` into `conn` in one transaction; each page it
/// inserts or changes keeps its new version in its history (pruned to the default
/// `PAGE_HISTORY_VERSIONS`).
///
/// In three phases: read and parse all lines (bad ones are reported on stderr as
/// they are found), hash the PINs (argon2, on up to [`crate::pin::CONCURRENT_HASHES`]
/// threads), then one `BEGIN IMMEDIATE` transaction of upserts. The whole input is
/// held in memory until then.
///
/// `total_bytes` sizes the progress bar of the first phase (hidden when stderr is
/// not a terminal, or when `None`); the hashing phase has a bar of its own when
/// there is a first one. Errors: an I/O error reading, or a database error; either
/// way nothing of this import was committed.
pub fn import(
    conn: &mut Connection,
    input: impl Read,
    total_bytes: Option<u64>,
    now: i64,
) -> Result<ImportReport, ImportError> {
    let (pages, mut report) = prepare(input, total_bytes)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    report.count(crate::page_store::sqlite::history::import_all(
        &tx,
        &pages,
        now,
        crate::page_store::history::DEFAULT_HISTORY_VERSIONS,
    )?);
    tx.commit()?;
    Ok(report)
}

/// Phase 1: every line read and parsed; bad lines reported and skipped.
fn read_all(
    input: impl Read,
    total_bytes: Option<u64>,
    report: &mut ImportReport,
    skipped: Skipped,
) -> Result<Vec<ParsedLine>, ImportError> {
    let progress = progress_bar(
        total_bytes,
        "importing {bar:40} {bytes}/{total_bytes} ({eta})",
    );
    // The bar counts bytes of the input as given (compressed, for gzip), which is
    // what `total_bytes` measures.
    let raw = BufReader::new(progress.wrap_read(input));
    let (reader, format) =
        unwrapped(raw).map_err(|source| ImportError::Read { line: 1, source })?;
    report.format = format;
    let mut parsed = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let number = index + 1;
        let line = line.map_err(|source| ImportError::Read {
            line: number,
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(number, &line) {
            Ok(page) => parsed.push(page),
            Err(reason) => skip(report, skipped, &progress, number, reason),
        }
    }
    progress.finish_and_clear();
    Ok(parsed)
}

/// `raw` decompressed when it starts with [`GZIP_MAGIC`], then without a leading
/// [`UTF8_BOM`]. Errors: reading the first bytes failed.
fn unwrapped<'a>(
    mut raw: impl BufRead + 'a,
) -> std::io::Result<(Box<dyn BufRead + 'a>, InputFormat)> {
    let mut format = InputFormat::default();
    let magic = read_up_to(&mut raw, GZIP_MAGIC.len())?;
    format.gzip = magic == GZIP_MAGIC;
    let raw = Cursor::new(magic).chain(raw);
    let mut text: Box<dyn BufRead + 'a> = if format.gzip {
        Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(raw)))
    } else {
        Box::new(raw)
    };
    let start = read_up_to(&mut text, UTF8_BOM.len())?;
    format.bom = start == UTF8_BOM;
    let start = if format.bom { Vec::new() } else { start };
    Ok((Box::new(Cursor::new(start).chain(text)), format))
}

/// The next `n` bytes of `r`, fewer only at its end (a pipe may deliver them one by
/// one).
fn read_up_to(r: &mut impl Read, n: usize) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    r.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

fn skip(
    report: &mut ImportReport,
    skipped: Skipped,
    progress: &ProgressBar,
    line: usize,
    reason: String,
) {
    if skipped == Skipped::Printed {
        progress.suspend(|| eprintln!("line {line}: skipped: {reason}"));
    }
    report.skipped.push(SkippedLine { line, reason });
}

/// Phase 2: the PHC string of every PIN, computed on a few threads. A line whose
/// hashing failed (never seen in practice) is reported and skipped.
fn hash_pins(
    parsed: Vec<ParsedLine>,
    show_progress: bool,
    report: &mut ImportReport,
    skipped: Skipped,
) -> Vec<ImportPage> {
    let pins = parsed.iter().filter(|p| p.pin.is_some()).count();
    let progress = progress_bar(
        show_progress.then_some(pins as u64),
        "hashing PINs {bar:40} {pos}/{len} ({eta})",
    );
    let next = AtomicUsize::new(0);
    let hashes: Vec<Mutex<Option<Result<String, String>>>> =
        parsed.iter().map(|_| Mutex::new(None)).collect();
    let threads = crate::pin::CONCURRENT_HASHES.min(pins).max(1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(line) = parsed.get(i) else { break };
                if let Some(pin) = &line.pin {
                    let hashed = crate::pin::hash(pin).map_err(|e| e.to_string());
                    *hashes[i].lock().expect("unpoisoned") = Some(hashed);
                    progress.inc(1);
                }
            });
        }
    });
    progress.finish_and_clear();
    parsed
        .into_iter()
        .zip(hashes)
        .filter_map(|(line, hash)| {
            let pin_hash = match hash.into_inner().expect("unpoisoned") {
                None => None,
                Some(Ok(phc)) => Some(phc),
                Some(Err(reason)) => {
                    skip(report, skipped, &ProgressBar::hidden(), line.number, reason);
                    return None;
                }
            };
            Some(ImportPage {
                slug: line.slug,
                title: line.title,
                body: line.body,
                pin_hash,
            })
        })
        .collect()
}

/// Imports the bundled demo corpus when the store has no pages at all; returns
/// `None` when it already had some.
pub async fn load_demo_if_empty(
    store: &PageStore,
    now: i64,
) -> Result<Option<ImportReport>, ImportError> {
    if store.count_all().await? > 0 {
        return Ok(None);
    }
    let decoder = flate2::read::GzDecoder::new(DEMO_CORPUS_GZ);
    // The bar counts decompressed bytes; the corpus is about 14 MB uncompressed.
    import_reporting(store, decoder, Some(13_955_212), now, Skipped::Kept)
        .await
        .map(Some)
}

/// A line that parsed; its PIN checked but not yet hashed.
struct ParsedLine {
    number: usize,
    slug: PageSlug,
    title: PageTitle,
    body: PageBody,
    pin: Option<String>,
}

fn parse_line(number: usize, line: &str) -> Result<ParsedLine, String> {
    let raw = parse_json(line)?;
    let NewPage { slug, title, body } =
        NewPage::parse(raw.slug.as_deref(), &raw.title, raw.body).map_err(|e| e.to_string())?;
    // Unlike the API, import derives the slug without a suffix: re-importing a line
    // without a slug updates the page that line created the first time.
    let slug = slug.unwrap_or_else(|| PageSlug::from_title(title.as_str()));
    if let Some(pin) = &raw.pin {
        crate::pin::check(pin).map_err(|e| e.to_string())?;
    }
    Ok(ParsedLine {
        number,
        slug,
        title,
        body,
        pin: raw.pin,
    })
}

/// One line as JSON. serde echoes a wrongly typed value in its message (`invalid
/// type: integer `987654321``): for `pin` that would print the PIN, so an error
/// inside `pin` gets a fixed message instead.
fn parse_json(line: &str) -> Result<Line, String> {
    let mut de = serde_json::Deserializer::from_str(line);
    let raw: Line = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        if e.path().to_string() == "pin" {
            "invalid JSON: pin must be a string of 6 to 64 characters".to_owned()
        } else {
            format!("invalid JSON: {}", e.into_inner())
        }
    })?;
    de.end().map_err(|e| format!("invalid JSON: {e}"))?;
    Ok(raw)
}

fn progress_bar(total: Option<u64>, template: &'static str) -> ProgressBar {
    let Some(total) = total else {
        return ProgressBar::hidden();
    };
    let bar = ProgressBar::new(total);
    bar.set_style(ProgressStyle::with_template(template).expect("static template is valid"));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::page_store::sqlite::temp_db as db;

    #[test]
    fn bad_lines_are_reported_by_number_and_good_lines_still_land() {
        let (_dir, mut conn) = db();
        let input = concat!(
            "{\"slug\":\"a\",\"title\":\"First\"}\n",
            "not json\n",
            "{\"slug\":\"B\",\"title\":\"bad slug\"}\n",
            "\n",
            "{\"title\":\"   \"}\n",
            "{\"title\":\"Derived Slug\",\"body\":\"text\"}\n",
        );
        let report = import(&mut conn, input.as_bytes(), None, 100).unwrap();
        assert_eq!(report.inserted, 2);
        let lines: Vec<usize> = report.skipped.iter().map(|s| s.line).collect();
        assert_eq!(lines, vec![2, 3, 5]);
        assert!(pages::candidate_by_slug(&conn, "derived-slug")
            .unwrap()
            .is_some());
    }

    #[test]
    fn a_rejected_pin_is_never_in_the_report() {
        let (_dir, mut conn) = db();
        let secrets = ["987654321", "13579.25", "true", "\"24680\"", "\" 97531 \""];
        let input: String = secrets
            .iter()
            .map(|pin| format!("{{\"title\":\"x\",\"pin\":{pin}}}\n"))
            .collect();
        let report = import(&mut conn, input.as_bytes(), None, 1).unwrap();
        assert_eq!(report.skipped.len(), secrets.len());
        for skipped in &report.skipped {
            for secret in ["987654321", "13579", "true", "24680", "97531"] {
                assert!(!skipped.reason.contains(secret), "{}", skipped.reason);
            }
        }
    }

    #[test]
    fn reimporting_a_changed_title_bumps_the_version_and_an_unchanged_one_does_not() {
        let (_dir, mut conn) = db();
        // Page `a` titled `title`, imported at `now`.
        let mut import_a = |title: &str, now: i64| {
            let line = format!("{{\"slug\":\"a\",\"title\":\"{title}\"}}\n");
            import(&mut conn, line.as_bytes(), None, now).unwrap()
        };
        import_a("One", 1);
        assert_eq!(import_a("One", 2).unchanged, 1);
        assert_eq!(import_a("Two", 3).updated, 1);
        let page = pages::candidate_by_slug(&conn, "a").unwrap().unwrap();
        assert_eq!(
            (page.title.as_str(), page.version, page.updated_at),
            ("Two", 2, 3)
        );
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    /// A reader that hands out one byte per read, as a slow pipe may.
    struct OneByteAtATime<'a>(&'a [u8]);

    impl Read for OneByteAtATime<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            if buf.is_empty() {
                return Ok(0);
            }
            buf[0] = *first;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn a_leading_byte_order_mark_and_gzip_are_undone_whatever_the_reads() {
        let lines = "{\"slug\":\"a\",\"title\":\"First\"}\n{\"slug\":\"b\",\"title\":\"Second\"}\n";
        let with_bom = [&UTF8_BOM[..], lines.as_bytes()].concat();
        // Two gzip members, as `cat a.gz b.gz` or pigz make.
        let two_members = [gzip(&with_bom[..20]), gzip(&with_bom[20..])].concat();
        for (input, gzip, bom) in [
            (lines.as_bytes().to_vec(), false, false),
            (with_bom.clone(), false, true),
            (gzip_of(lines), true, false),
            (two_members, true, true),
        ] {
            for one_byte in [false, true] {
                let (_dir, mut conn) = db();
                let report = if one_byte {
                    import(&mut conn, OneByteAtATime(&input), None, 1)
                } else {
                    import(&mut conn, &input[..], None, 1)
                }
                .unwrap();
                assert_eq!(report.inserted, 2, "{gzip} {bom}: {:?}", report.skipped);
                assert!(report.skipped.is_empty(), "{:?}", report.skipped);
                assert_eq!(report.format, InputFormat { gzip, bom });
            }
        }
        // A BOM anywhere but the start is the line's own text (invalid JSON).
        let (_dir, mut conn) = db();
        let late = [lines.as_bytes(), &UTF8_BOM[..], lines.as_bytes()].concat();
        let report = import(&mut conn, &late[..], None, 1).unwrap();
        assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
        assert!(!report.format.bom);
        // Shorter than any magic: read as it is.
        let (_dir, mut conn) = db();
        assert_eq!(import(&mut conn, &b"\n"[..], None, 1).unwrap().inserted, 0);
    }

    fn gzip_of(text: &str) -> Vec<u8> {
        gzip(text.as_bytes())
    }
}
