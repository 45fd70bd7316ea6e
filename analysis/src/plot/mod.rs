//! Plots with plotters, each written as PNG and SVG. Text uses an embedded DejaVu Sans
//! through ab_glyph, so nothing depends on fontconfig or installed fonts.

pub mod bisect;
pub mod cdf;
pub mod strip;
pub mod timeline;
pub mod watch;

use plotters::coord::Shift;
use plotters::prelude::*;

pub const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

pub fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bytes are the crate's own asset; a failure here is a build defect.
        if plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_err() {
            eprintln!("analysis: embedded font rejected; plots will have no text");
        }
    });
}

pub const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

pub fn er<E: std::fmt::Debug>(e: E) -> String {
    format!("plot: {e:?}")
}

/// Something that draws itself on any plotters backend.
pub trait Plot {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// The plot as PNG bytes and SVG text (the caller writes both: `out::Ctx::save`,
/// which never writes through a link, so no backend is given a path).
pub fn render(p: &impl Plot) -> Result<(Vec<u8>, String), String> {
    use image::ImageEncoder;
    register_font();
    let (w, h) = p.size();
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(er)?;
        p.draw(&root)?;
        root.present().map_err(er)?;
    }
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&rgb, w, h, image::ColorType::Rgb8)
        .map_err(|e| format!("plot: cannot encode PNG: {e}"))?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(er)?;
        p.draw(&root)?;
        root.present().map_err(er)?;
    }
    Ok((png, svg))
}

/// Axis-friendly text for a value: 0.8, 12, 1.5k.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e6 {
        format!("{:.0}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        let s = format!("{v:.1}");
        s.trim_end_matches(".0").to_string()
    } else if a >= 0.01 {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.0e}")
    }
}

/// A pleasant log range around [lo, hi] (both > 0): whole decades.
pub fn log_range(lo: f64, hi: f64) -> (f64, f64) {
    let lo = if lo > 0.0 { lo } else { hi.max(1e-3) / 10.0 };
    let hi = if hi > lo { hi } else { lo * 10.0 };
    (
        10f64.powf(lo.log10().floor()),
        10f64.powf(hi.log10().ceil()),
    )
}

pub fn title_style(px: u32) -> TextStyle<'static> {
    (FONT, px as f64).into_font().color(&BLACK)
}
