//! Line panels: latency CDFs and OSADL-style histograms (count on a log axis), side by
//! side in one figure.

use super::{FONT, Plot, color, er, log_range, tick, title_style};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub color: usize,
    pub pts: Vec<(f64, f64)>,
    /// Draw the points as dots too (few points, e.g. 8 trials).
    pub dots: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PanelKind {
    /// y: fraction 0..1, x log.
    Cdf,
    /// y: count on a log axis; x log when `log_x`.
    Hist { log_x: bool },
    /// y: share of samples above x on a log axis (tails visible), x log.
    Ccdf,
}

#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub kind: PanelKind,
    pub series: Vec<Series>,
    /// Vertical markers (x, label), e.g. the period or a bound.
    pub vlines: Vec<(f64, String)>,
}

#[derive(Debug, Clone)]
pub struct Figure {
    pub title: String,
    pub panels: Vec<Panel>,
    pub panel_size: (u32, u32),
}

impl Plot for Figure {
    fn size(&self) -> (u32, u32) {
        let n = self.panels.len().max(1) as u32;
        (self.panel_size.0 * n, self.panel_size.1 + 50)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let area = root.titled(&self.title, title_style(26)).map_err(er)?;
        let parts = area.split_evenly((1, self.panels.len().max(1)));
        for (p, a) in self.panels.iter().zip(parts.iter()) {
            draw_panel(p, a)?;
        }
        Ok(())
    }
}

fn extent(p: &Panel) -> (f64, f64, f64) {
    let mut xmin = f64::INFINITY;
    let mut xmax = 0f64;
    let mut ymax = 0f64;
    for s in &p.series {
        for &(x, y) in &s.pts {
            if x > 0.0 {
                xmin = xmin.min(x);
            }
            xmax = xmax.max(x);
            ymax = ymax.max(y);
        }
    }
    for (x, _) in &p.vlines {
        if *x > 0.0 {
            xmin = xmin.min(*x);
            xmax = xmax.max(*x);
        }
    }
    if !xmin.is_finite() {
        xmin = 1.0;
    }
    (xmin, xmax.max(xmin), ymax)
}

fn draw_panel<DB: DrawingBackend>(p: &Panel, a: &DrawingArea<DB, Shift>) -> Result<(), String> {
    let (xmin, xmax, ymax) = extent(p);
    match p.kind {
        PanelKind::Cdf => {
            let (lo, hi) = log_range(xmin, xmax);
            lines(
                p,
                a,
                (lo..hi).log_scale(),
                0f64..1.02,
                "fraction of samples ≤ x",
                lo,
                0.0,
            )
        }
        PanelKind::Ccdf => {
            let (lo, hi) = log_range(xmin, xmax);
            let ymin = p
                .series
                .iter()
                .flat_map(|s| s.pts.iter().map(|pt| pt.1))
                .filter(|y| *y > 0.0)
                .fold(1.0f64, f64::min);
            let floor = 10f64.powf(ymin.log10().floor() - 1.0);
            lines(
                p,
                a,
                (lo..hi).log_scale(),
                (floor..1.5).log_scale(),
                "share of samples above x (log)",
                lo,
                floor,
            )
        }
        PanelKind::Hist { log_x } => {
            let ytop = 10f64.powf((ymax * 1.5).max(10.0).log10().ceil());
            let ylab = "samples (log scale)";
            if log_x {
                let (lo, hi) = log_range(xmin, xmax);
                lines(
                    p,
                    a,
                    (lo..hi).log_scale(),
                    (0.8f64..ytop).log_scale(),
                    ylab,
                    lo,
                    0.8,
                )
            } else {
                let hi = (xmax * 1.05).max(1e-9);
                lines(p, a, 0f64..hi, (0.8f64..ytop).log_scale(), ylab, 0.0, 0.8)
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn lines<DB, X, Y>(
    p: &Panel,
    a: &DrawingArea<DB, Shift>,
    x: X,
    y: Y,
    y_label: &str,
    x_floor: f64,
    y_floor: f64,
) -> Result<(), String>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(a)
        .caption(&p.title, (FONT, 20))
        .margin(12)
        .margin_right(40)
        .x_label_area_size(55)
        .y_label_area_size(75)
        .build_cartesian_2d(x, y)
        .map_err(er)?;
    let ylabels = |v: &f64| tick(*v);
    chart
        .configure_mesh()
        .x_desc(&p.x_label)
        .y_desc(y_label)
        .x_label_formatter(&|v: &f64| tick(*v))
        .y_label_formatter(&ylabels)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(246, 246, 246))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()
        .map_err(er)?;
    let y_top = chart.y_range().end;
    for (vx, label) in &p.vlines {
        let c = RGBColor(90, 90, 90);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(*vx, y_floor.max(1e-12)), (*vx, y_top)],
                8,
                5,
                c.stroke_width(2),
            ))
            .map_err(er)?
            .label(label.clone())
            .legend(move |(x, y)| {
                PathElement::new(
                    vec![(x, y), (x + 8, y), (x + 12, y), (x + 20, y)],
                    c.stroke_width(2),
                )
            });
    }
    for s in &p.series {
        let c = color(s.color);
        let pts: Vec<(f64, f64)> = s
            .pts
            .iter()
            .map(|&(x, y)| (x.max(x_floor), y.max(y_floor)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(er)?
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3)));
        if s.dots {
            chart
                .draw_series(pts.iter().map(|&pt| Circle::new(pt, 4, c.filled())))
                .map_err(er)?;
        }
    }
    chart
        .configure_series_labels()
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .position(match p.kind {
            PanelKind::Cdf => SeriesLabelPosition::LowerRight,
            PanelKind::Hist { .. } | PanelKind::Ccdf => SeriesLabelPosition::UpperRight,
        })
        .draw()
        .map_err(er)?;
    Ok(())
}

/// Empirical CDF of values as a step line.
pub fn ecdf(values: &[f64]) -> Vec<(f64, f64)> {
    ecdf_with_missing(values, 0)
}

/// ECDF where `missing` trials never produced a value (timed out): the curve stops
/// short of 1 by their share, which is what happened.
pub fn ecdf_with_missing(values: &[f64], missing: usize) -> Vec<(f64, f64)> {
    let s = crate::stats::sorted(values);
    let n = (s.len() + missing) as f64;
    let mut pts = Vec::with_capacity(s.len() * 2);
    for (i, &v) in s.iter().enumerate() {
        pts.push((v, i as f64 / n));
        pts.push((v, (i + 1) as f64 / n));
    }
    pts
}

/// CDF from a Dist in ns, x in µs.
pub fn hist_cdf(h: &crate::dist::Dist) -> Vec<(f64, f64)> {
    let n = h.len().max(1) as f64;
    let mut seen = 0u64;
    let mut pts = Vec::new();
    for (lo, hi, c) in h.buckets() {
        pts.push((lo as f64 / 1e3, seen as f64 / n));
        seen += c;
        pts.push((hi as f64 / 1e3, seen as f64 / n));
    }
    pts
}

/// Complementary CDF (share above x) from a Dist in ns, x in µs.
pub fn hist_ccdf(h: &crate::dist::Dist) -> Vec<(f64, f64)> {
    hist_cdf(h).into_iter().map(|(x, f)| (x, 1.0 - f)).collect()
}

/// Histogram lines: the Dist rebinned to `bins` bins (log or linear in x), x in µs,
/// as a step outline whose empty bins drop to the floor.
pub fn hist_steps(h: &crate::dist::Dist, bins: usize, log_x: bool) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return vec![];
    }
    let lo = (h.min() as f64 / 1e3).max(if log_x { 1e-3 } else { 0.0 });
    let hi = (h.max() as f64 / 1e3).max(lo * 1.0001 + 1e-6);
    let ax = Bins {
        lo,
        hi,
        n: bins,
        log_x,
    };
    let mut counts = vec![0u64; bins];
    for (blo, bhi, c) in h.buckets() {
        counts[ax.index((blo as f64 + bhi as f64) / 2e3)] += c;
    }
    steps(&counts, |i| ax.edge(i))
}

/// Histogram of a handful of values (trial rigs).
pub fn value_steps(values: &[f64], bins: usize, log_x: bool) -> Vec<(f64, f64)> {
    let s = crate::stats::sorted(values);
    if s.is_empty() {
        return vec![];
    }
    let lo = if log_x { s[0].max(1e-6) / 1.2 } else { 0.0 };
    let hi = s[s.len() - 1] * 1.2 + 1e-9;
    let ax = Bins {
        lo,
        hi,
        n: bins,
        log_x,
    };
    let mut counts = vec![0u64; bins];
    for v in s {
        counts[ax.index(v)] += 1;
    }
    steps(&counts, |i| ax.edge(i))
}

/// `n` bins from `lo` to `hi`, equal in x or in log x.
struct Bins {
    lo: f64,
    hi: f64,
    n: usize,
    log_x: bool,
}

impl Bins {
    fn edge(&self, i: usize) -> f64 {
        let f = i as f64 / self.n as f64;
        if self.log_x {
            (self.lo.ln() + f * (self.hi.ln() - self.lo.ln())).exp()
        } else {
            self.lo + f * (self.hi - self.lo)
        }
    }

    /// The bin holding `v`; values outside go to the end bins.
    fn index(&self, v: f64) -> usize {
        let f = if self.log_x {
            (v.max(self.lo).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        ((f * self.n as f64) as usize).min(self.n - 1)
    }
}

fn steps(counts: &[u64], edge: impl Fn(usize) -> f64) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(counts.len() * 2 + 2);
    pts.push((edge(0), 0.0));
    for (i, &c) in counts.iter().enumerate() {
        pts.push((edge(i), c as f64));
        pts.push((edge(i + 1), c as f64));
    }
    pts.push((edge(counts.len()), 0.0));
    pts
}
