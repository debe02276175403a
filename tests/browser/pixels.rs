//! What the browser actually drew: regions of WebDriver screenshots as RGB pixels,
//! for what computed styles cannot show (an outline Chromium does not paint, two
//! checkboxes that look alike). The PNG is decoded by the browser itself (an
//! `ImageBitmap` on a canvas), so the test needs no image crate.

use anyhow::{ensure, Context as _};

use super::Visit;

/// A rectangle in CSS pixels of the viewport, as `getBoundingClientRect` gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

impl Rect {
    pub fn from_json(v: &serde_json::Value) -> anyhow::Result<Rect> {
        let n = |k: &str| v[k].as_f64().with_context(|| format!("no {k} in {v}"));
        Ok(Rect {
            x: n("x")?,
            y: n("y")?,
            width: n("width")?,
            height: n("height")?,
        })
    }
}

/// Pixels of one region of a screenshot, row by row.
pub struct Region {
    pub width: usize,
    pub height: usize,
    pub rgb: Vec<[u8; 3]>,
}

impl Region {
    pub fn at(&self, x: usize, y: usize) -> [u8; 3] {
        self.rgb[y * self.width + x]
    }

    /// The mean colour.
    pub fn mean(&self) -> [f64; 3] {
        let mut sum = [0.0; 3];
        for p in &self.rgb {
            for (s, c) in sum.iter_mut().zip(p) {
                *s += f64::from(*c);
            }
        }
        sum.map(|s| s / self.rgb.len().max(1) as f64)
    }
}

/// `rgb(180, 83, 9)` (a computed colour) as its three channels.
pub fn parse_rgb(css: &str) -> anyhow::Result<[u8; 3]> {
    let inner = css
        .trim()
        .strip_prefix("rgb(")
        .and_then(|s| s.strip_suffix(')'))
        .with_context(|| format!("not an rgb() colour: {css}"))?;
    let parts: Vec<u8> = inner
        .split(',')
        .map(|p| p.trim().parse())
        .collect::<Result<_, _>>()
        .with_context(|| format!("not an rgb() colour: {css}"))?;
    ensure!(parts.len() == 3, "not an rgb() colour: {css}");
    Ok([parts[0], parts[1], parts[2]])
}

/// Whether `a` and `b` differ by at most `tolerance` on every channel.
pub fn close_to(a: [u8; 3], b: [u8; 3], tolerance: u8) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= tolerance)
}

/// WCAG relative luminance of an sRGB colour.
pub fn luminance(rgb: [f64; 3]) -> f64 {
    let lin = |c: f64| {
        let c = c / 255.0;
        if c <= 0.040_45 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2])
}

/// WCAG contrast ratio of two colours (1 to 21).
pub fn contrast(a: [f64; 3], b: [f64; 3]) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

impl Visit<'_> {
    /// The region `rect` (CSS pixels, clamped to the image) of the screenshot `png`,
    /// in device pixels.
    pub async fn region(&self, png: &[u8], rect: Rect) -> anyhow::Result<Region> {
        let answer = self
            .browser
            .execute_async(
                r#"const [bytes, r, done] = arguments;
                createImageBitmap(new Blob([Uint8Array.from(bytes)], { type: "image/png" }))
                  .then((bitmap) => {
                    const scale = window.devicePixelRatio || 1;
                    const x = Math.max(0, Math.round(r.x * scale));
                    const y = Math.max(0, Math.round(r.y * scale));
                    const w = Math.min(bitmap.width - x, Math.round(r.width * scale));
                    const h = Math.min(bitmap.height - y, Math.round(r.height * scale));
                    const canvas = document.createElement("canvas");
                    canvas.width = bitmap.width; canvas.height = bitmap.height;
                    const ctx = canvas.getContext("2d");
                    ctx.drawImage(bitmap, 0, 0);
                    const data = ctx.getImageData(x, y, w, h).data;
                    const rgb = [];
                    for (let i = 0; i < data.length; i += 4) rgb.push(data[i], data[i + 1], data[i + 2]);
                    done({ width: w, height: h, rgb });
                  }, (e) => done({ error: String(e) }));"#,
                vec![
                    serde_json::json!(png),
                    serde_json::json!({"x": rect.x, "y": rect.y, "width": rect.width, "height": rect.height}),
                ],
            )
            .await?;
        if let Some(error) = answer.get("error") {
            anyhow::bail!("decoding the screenshot: {error}");
        }
        let width = answer["width"].as_u64().context("width")? as usize;
        let height = answer["height"].as_u64().context("height")? as usize;
        let flat: Vec<u8> = answer["rgb"]
            .as_array()
            .context("rgb")?
            .iter()
            .map(|v| v.as_u64().unwrap_or(0) as u8)
            .collect();
        ensure!(flat.len() == width * height * 3, "a short region");
        let rgb = flat.chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
        Ok(Region { width, height, rgb })
    }

    /// `getBoundingClientRect()` of the first element matching `css`.
    pub async fn rect(&self, css: &str) -> anyhow::Result<Rect> {
        let v = self
            .browser
            .execute(
                "const e = document.querySelector(arguments[0]);
                 if (!e) return null;
                 const r = e.getBoundingClientRect();
                 return { x: r.x, y: r.y, width: r.width, height: r.height };",
                vec![serde_json::json!(css)],
            )
            .await?;
        Rect::from_json(&v).with_context(|| format!("no element matches {css}"))
    }
}
