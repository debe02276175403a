//! Building records from SQLite rows by column position.

/// Builds a struct from a [`rusqlite::Row`] whose columns, in order, are the
/// fields as listed: `from_row!(r => Page { id, slug, title })` is
/// `Page { id: r.get(0)?, slug: r.get(1)?, title: r.get(2)? }`.
///
/// Shape: `from_row!(row => Type { field, field: read, … })`, or
/// `from_row!(row, start => Type { … })` when the fields begin at column
/// `start` (a `usize`) rather than 0. `row` is a `&rusqlite::Row<'_>`. A plain
/// `field` is read with `row.get(i)?` as the field's own type; `field: read`
/// calls `read(row, i)?` with `read: fn(&Row<'_>, usize) -> rusqlite::Result<T>`,
/// for a column that needs converting.
///
/// The columns are read by position only, never looked up by name (page
/// rows are read by the million), so the SELECT's column list must
/// be in the order the fields are listed here; it need not be the order the
/// struct declares them in. Expands to an expression using `?`, so it belongs
/// inside a function returning `rusqlite::Result`; a column that is missing or
/// of another type is rusqlite's error from `get` (or `read`'s), the first in
/// listing order.
macro_rules! from_row {
    // One field at a time, each given its column as `start + 1 + …`: no counter
    // is kept at run time.
    (@next $row:ident, $ty:ident, $i:expr, [$($done:tt)*]
        $field:ident : $read:expr $(, $($rest:tt)*)?) => {
        $crate::page_store::sqlite::rows::from_row!(@next $row, $ty, $i + 1,
            [$($done)* $field: $read($row, $i)?,] $($($rest)*)?)
    };
    (@next $row:ident, $ty:ident, $i:expr, [$($done:tt)*]
        $field:ident $(, $($rest:tt)*)?) => {
        $crate::page_store::sqlite::rows::from_row!(@next $row, $ty, $i + 1,
            [$($done)* $field: $row.get($i)?,] $($($rest)*)?)
    };
    (@next $row:ident, $ty:ident, $i:expr, [$($done:tt)*]) => {
        $ty { $($done)* }
    };
    ($row:expr => $ty:ident { $($fields:tt)* }) => {
        $crate::page_store::sqlite::rows::from_row!($row, 0usize => $ty { $($fields)* })
    };
    ($row:expr, $start:expr => $ty:ident { $($fields:tt)* }) => {{
        let row: &::rusqlite::Row<'_> = $row;
        $crate::page_store::sqlite::rows::from_row!(@next row, $ty, $start, [] $($fields)*)
    }};
}

pub(crate) use from_row;
