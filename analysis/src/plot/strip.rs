//! Every trial as a point, one column per setting and variant (or per results
//! directory in a compare), the median as a bar and the bound as a dashed line: the
//! seed's table as a picture.

use super::{FONT, Plot, color, er, log_range, tick, title_style};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

#[derive(Debug, Clone)]
pub struct Column {
    /// Up to two lines under the axis.
    pub label: Vec<String>,
    pub color: usize,
    pub values: Vec<f64>,
    /// Trials without a value (timed out): drawn as hollow markers at the top.
    pub missing: usize,
    /// Trials that ended early (end_early): each drawn as a triangle at the value it
    /// was censored at (its value is at least that).
    pub censored: Vec<f64>,
}

#[derive(Debug, Clone)]
pub struct Strip {
    pub title: String,
    pub y_label: String,
    pub columns: Vec<Column>,
    pub bound: Option<(f64, String)>,
    pub legend: Vec<(String, usize)>,
}

impl Strip {
    fn log_y(&self) -> bool {
        let all: Vec<f64> = self
            .columns
            .iter()
            .flat_map(|c| c.values.iter().chain(&c.censored).copied())
            .collect();
        let lo = all
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let hi = all.iter().copied().fold(0.0, f64::max);
        lo.is_finite() && hi / lo > 30.0 && all.iter().all(|v| *v > 0.0)
    }
}

impl Plot for Strip {
    fn size(&self) -> (u32, u32) {
        ((260 + 170 * self.columns.len() as u32).max(700), 620)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let area = root.titled(&self.title, title_style(24)).map_err(er)?;
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for c in &self.columns {
            for v in c.values.iter().chain(&c.censored) {
                lo = lo.min(*v);
                hi = hi.max(*v);
            }
        }
        if let Some((b, _)) = &self.bound {
            lo = lo.min(*b);
            hi = hi.max(*b);
        }
        if !lo.is_finite() {
            lo = 0.0;
            hi = 1.0;
        }
        let n = self.columns.len().max(1) as f64;
        if self.log_y() {
            let (a, b) = log_range(lo, hi);
            draw(self, &area, (a..b).log_scale(), n)
        } else {
            let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.05).max(1e-9);
            let a = if lo >= 0.0 { 0.0 } else { lo - pad };
            draw(self, &area, a..hi + pad, n)
        }
    }
}

/// Deterministic horizontal spread so equal values do not hide each other.
fn jitter(i: usize, n: usize) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let w = 0.28;
    -w + 2.0 * w * (i as f64) / ((n - 1) as f64)
}

fn draw<DB, Y>(s: &Strip, area: &DrawingArea<DB, Shift>, y: Y, n: f64) -> Result<(), String>
where
    DB: DrawingBackend,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .margin(15)
        .x_label_area_size(70)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5f64..n - 0.5, y)
        .map_err(er)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .x_label_formatter(&|_| String::new())
        .y_desc(&s.y_label)
        .y_label_formatter(&|v: &f64| tick(*v))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(205, 205, 205))
        .draw()
        .map_err(er)?;
    let yr = chart.y_range();
    let (y0, y1) = (yr.start, yr.end);
    if let Some((b, label)) = &s.bound {
        let red = RGBColor(200, 30, 30);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(-0.5, *b), (n - 0.5, *b)],
                10,
                6,
                red.stroke_width(2),
            ))
            .map_err(er)?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(2)));
    }
    for (ci, c) in s.columns.iter().enumerate() {
        let col = color(c.color);
        let x = ci as f64;
        chart
            .draw_series(c.values.iter().enumerate().map(|(i, v)| {
                Circle::new(
                    (x + jitter(i, c.values.len()), *v),
                    6,
                    col.mix(0.75).filled(),
                )
            }))
            .map_err(er)?;
        if c.missing > 0 {
            chart
                .draw_series(
                    (0..c.missing).map(|i| {
                        Cross::new((x + jitter(i, c.missing), y1), 7, col.stroke_width(2))
                    }),
                )
                .map_err(er)?;
        }
        if !c.censored.is_empty() {
            chart
                .draw_series(c.censored.iter().enumerate().map(|(i, v)| {
                    TriangleMarker::new(
                        (x + jitter(i, c.censored.len()), *v),
                        8,
                        col.stroke_width(2),
                    )
                }))
                .map_err(er)?;
        }
        // Censored values at their censoring points: a median on one is a lower bound.
        if let Some(m) = results::trials::OrderStats::of(&c.values, &c.censored).median {
            chart
                .draw_series(LineSeries::new(
                    vec![(x - 0.38, m), (x + 0.38, m)],
                    BLACK.stroke_width(3),
                ))
                .map_err(er)?;
        }
        // Column labels under the axis, drawn on the root so they are not clipped.
        let (px, py) = chart.backend_coord(&(x, y0));
        let base = area.get_base_pixel();
        let (px, py) = (px - base.0, py - base.1);
        for (li, l) in c.label.iter().enumerate() {
            let style = (FONT, if li == 0 { 16 } else { 14 })
                .into_font()
                .color(&if li == 0 { BLACK } else { RGBColor(80, 80, 80) })
                .pos(Pos::new(HPos::Center, VPos::Top));
            area.draw(&Text::new(l.clone(), (px, py + 10 + 20 * li as i32), style))
                .map_err(er)?;
        }
    }
    for (label, ci) in &s.legend {
        let col = color(*ci);
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(er)?
            .label(label.clone())
            .legend(move |(x, y)| Circle::new((x + 10, y), 6, col.filled()));
    }
    if s.columns.iter().any(|c| c.missing > 0) {
        let grey = RGBColor(60, 60, 60);
        chart
            .draw_series(std::iter::empty::<Cross<(f64, f64), i32>>())
            .map_err(er)?
            .label("no value (timed out), drawn at the top")
            .legend(move |(x, y)| Cross::new((x + 10, y), 6, grey.stroke_width(2)));
    }
    if s.columns.iter().any(|c| !c.censored.is_empty()) {
        let grey = RGBColor(60, 60, 60);
        chart
            .draw_series(std::iter::empty::<TriangleMarker<(f64, f64), i32>>())
            .map_err(er)?
            .label("ended early (censored): at least this")
            .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 7, grey.stroke_width(2)));
    }
    let black = BLACK;
    chart
        .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
        .map_err(er)?
        .label("median")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], black.stroke_width(3)));
    chart
        .configure_series_labels()
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(er)?;
    Ok(())
}
