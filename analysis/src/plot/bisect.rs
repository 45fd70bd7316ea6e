//! A bisection at a glance: each tested commit in history's order (commits after the
//! good end) against the share of its trials that passed, coloured by its verdict, the
//! ends and the revert drawn apart, each step numbered in the order it was tested, and
//! the first bad commit a dashed line.

use super::{FONT, Plot, er, tick, title_style};
use crate::load::bisect::BisectData;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use results::bisect::{Outcome, Role, Step, Verdict};

pub struct BisectPlot<'a> {
    pub title: String,
    pub data: &'a BisectData,
}

/// Where a commit with no trials (it did not build, or its run failed) is drawn: below
/// the axis's 0, so it is not read as "none passed".
const NO_TRIALS_Y: f64 = -0.08;

pub fn verdict_color(v: Verdict) -> RGBColor {
    match v {
        Verdict::Good => RGBColor(44, 160, 44),
        Verdict::Bad => RGBColor(214, 39, 40),
        Verdict::Undecided => RGBColor(255, 127, 14),
        Verdict::BuildFailed => RGBColor(148, 103, 189),
        Verdict::RunFailed => RGBColor(140, 86, 75),
        Verdict::Measured => RGBColor(31, 119, 180),
    }
}

/// The legend's width, beside the chart.
const LEGEND_W: u32 = 290;
const FIRST_BAD: RGBColor = RGBColor(200, 30, 30);
const SHAPE: RGBColor = RGBColor(90, 90, 90);

/// What a legend row shows before its words.
enum Swatch {
    Dot(RGBColor),
    Square,
    Circle,
    Triangle,
    Cross,
    Dashed,
}

/// Every verdict, in the legend's order.
const VERDICTS: [Verdict; 6] = [
    Verdict::Measured,
    Verdict::Good,
    Verdict::Bad,
    Verdict::Undecided,
    Verdict::BuildFailed,
    Verdict::RunFailed,
];

/// A tested commit as drawn: x, y (None: no trials), its verdict, role, and the order
/// it was tested in (steps only).
struct Point {
    x: f64,
    y: Option<f64>,
    verdict: Verdict,
    role: Role,
    order: Option<usize>,
}

impl BisectPlot<'_> {
    /// The points, and the x of the first bad commit. In history's order when every
    /// step has its place; else in the order tested, the ends at either side.
    fn points(&self) -> (Vec<Point>, Option<f64>, f64) {
        let d = self.data;
        let doc = &d.doc;
        let known = d.positions_known();
        let x_max = if known {
            f64::from(doc.range.max(1))
        } else {
            doc.steps.len() as f64 + 1.0
        };
        let x_of = |s: &Step, k: Option<usize>| -> f64 {
            match (known, s.role, k) {
                (true, ..) => f64::from(d.position(s).unwrap_or(0)),
                (false, Role::GoodEnd, _) => 0.0,
                (false, Role::BadEnd | Role::Revert, _) => x_max,
                (false, Role::Step, k) => k.map_or(0.0, |k| k as f64 + 1.0),
            }
        };
        let y_of = |s: &Step| s.pass_fraction();
        let mut pts = Vec::new();
        for s in &doc.ends {
            pts.push(Point {
                x: x_of(s, None),
                y: y_of(s),
                verdict: s.verdict,
                role: s.role,
                order: None,
            });
        }
        for (k, s) in doc.steps.iter().enumerate() {
            pts.push(Point {
                x: x_of(s, Some(k)),
                y: y_of(s),
                verdict: s.verdict,
                role: s.role,
                order: Some(k + 1),
            });
        }
        if let Some(s) = &doc.confirmation {
            pts.push(Point {
                x: x_of(s, None),
                y: y_of(s),
                verdict: s.verdict,
                role: s.role,
                order: None,
            });
        }
        let first = match (&doc.outcome, &doc.first_bad) {
            (Outcome::Found { .. }, Some(f)) => d
                .tested()
                .enumerate()
                .find(|(_, s)| s.commit.sha == f.sha && s.role != Role::Revert)
                .map(|(i, s)| x_of(s, i.checked_sub(doc.ends.len()))),
            _ => None,
        };
        (pts, first, x_max)
    }
}

impl BisectPlot<'_> {
    /// A row per verdict drawn, then what the shapes and the line mean.
    fn legend(&self, pts: &[Point], first: bool) -> Vec<(Swatch, String)> {
        let mut rows: Vec<(Swatch, String)> = VERDICTS
            .iter()
            .filter(|v| pts.iter().any(|p| p.verdict == **v))
            .map(|v| {
                let words = match v {
                    Verdict::Measured => "end, measured".to_string(),
                    v => v.word().to_string(),
                };
                (Swatch::Dot(verdict_color(*v)), words)
            })
            .collect();
        rows.push((Swatch::Square, "an end".into()));
        rows.push((Swatch::Circle, "a step, numbered as tested".into()));
        if pts.iter().any(|p| p.role == Role::Revert) {
            rows.push((Swatch::Triangle, "the bad end, first bad reverted".into()));
        }
        if pts.iter().any(|p| p.y.is_none()) {
            rows.push((Swatch::Cross, "no trials: under the axis".into()));
        }
        if first {
            let f = self.data.doc.first_bad.clone().unwrap_or_default();
            rows.push((Swatch::Dashed, format!("first bad commit {}", f.short())));
        }
        rows
    }
}

/// The legend, a row each, from the top of `area`.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rows: &[(Swatch, String)],
) -> Result<(), String> {
    let style = (FONT, 15)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (sw, words)) in rows.iter().enumerate() {
        let (x, y) = (18i32, 30 + 26 * i as i32);
        match sw {
            Swatch::Dot(c) => area.draw(&Circle::new((x, y), 7, c.filled())),
            Swatch::Square => area.draw(&Rectangle::new(
                [(x - 7, y - 7), (x + 7, y + 7)],
                SHAPE.stroke_width(2),
            )),
            Swatch::Circle => area.draw(&Circle::new((x, y), 7, SHAPE.stroke_width(2))),
            Swatch::Triangle => area.draw(&TriangleMarker::new((x, y), 9, SHAPE.filled())),
            Swatch::Cross => area.draw(&Cross::new((x, y), 6, SHAPE.stroke_width(2))),
            Swatch::Dashed => area.draw(&PathElement::new(
                vec![(x - 10, y), (x + 10, y)],
                FIRST_BAD.stroke_width(2),
            )),
        }
        .map_err(er)?;
        area.draw(&Text::new(words.clone(), (x + 18, y), style.clone()))
            .map_err(er)?;
    }
    Ok(())
}

impl Plot for BisectPlot<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 640)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let area = root.titled(&self.title, title_style(24)).map_err(er)?;
        // The legend beside the chart, not over it: steps sit at the top and the
        // bottom of either side.
        let w = area.dim_in_pixel().0;
        let (area, legend_area) = area.split_horizontally(w.saturating_sub(LEGEND_W));
        let d = self.data;
        let (pts, first, x_max) = self.points();
        let pad = (x_max * 0.04).max(0.5);
        let known = d.positions_known();
        let x_desc = if known {
            format!(
                "commits after the good end {} (history's order; the bad end is {})",
                d.doc.inputs.good.short(),
                d.doc.range
            )
        } else {
            "order tested (this bisect.json records no commit's place in history)".to_string()
        };
        let mut chart = ChartBuilder::on(&area)
            .margin(15)
            .x_label_area_size(55)
            .y_label_area_size(80)
            .build_cartesian_2d(-pad..x_max + pad, -0.16f64..1.12)
            .map_err(er)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(format!(
                "share of trials that passed ({})",
                d.doc.rule.criterion
            ))
            .x_label_formatter(&|v: &f64| tick(*v))
            .y_label_formatter(&|v: &f64| if *v < 0.0 { String::new() } else { tick(*v) })
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 17))
            .light_line_style(RGBColor(235, 235, 235))
            .bold_line_style(RGBColor(205, 205, 205))
            .draw()
            .map_err(er)?;
        if let Some(x) = first {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x, -0.16), (x, 1.12)],
                    10,
                    6,
                    FIRST_BAD.stroke_width(2),
                ))
                .map_err(er)?;
        }
        if pts.iter().any(|p| p.y.is_none()) {
            let grey = RGBColor(150, 150, 150);
            chart
                .draw_series(LineSeries::new(
                    vec![
                        (-pad, NO_TRIALS_Y + 0.04),
                        (x_max + pad, NO_TRIALS_Y + 0.04),
                    ],
                    grey.stroke_width(1),
                ))
                .map_err(er)?;
        }
        // Skipped commits without trials as crosses under the axis; the rest as
        // markers by role: ends squares, steps circles, the revert a triangle.
        for p in &pts {
            let c = verdict_color(p.verdict);
            let y = p.y.unwrap_or(NO_TRIALS_Y);
            let at = (p.x, y);
            match (p.y, p.role) {
                (None, _) => {
                    chart
                        .draw_series(std::iter::once(Cross::new(at, 8, c.stroke_width(3))))
                        .map_err(er)?;
                }
                (Some(_), Role::GoodEnd | Role::BadEnd) => {
                    chart
                        .draw_series(std::iter::once(
                            EmptyElement::at(at)
                                + Rectangle::new([(-9, -9), (9, 9)], c.filled())
                                + Rectangle::new([(-9, -9), (9, 9)], BLACK.stroke_width(1)),
                        ))
                        .map_err(er)?;
                }
                (Some(_), Role::Revert) => {
                    chart
                        .draw_series(std::iter::once(TriangleMarker::new(at, 11, c.filled())))
                        .map_err(er)?;
                }
                (Some(_), Role::Step) => {
                    chart
                        .draw_series(std::iter::once(Circle::new(at, 8, c.filled())))
                        .map_err(er)?;
                }
            }
            let label = match (p.role, p.order) {
                (Role::GoodEnd, _) => "good end".to_string(),
                (Role::BadEnd, _) => "bad end".to_string(),
                (Role::Revert, _) => "revert".to_string(),
                (Role::Step, Some(k)) => k.to_string(),
                (Role::Step, None) => String::new(),
            };
            // The revert shares the bad end's x: its label goes under it.
            let (dy, v) = if p.role == Role::Revert {
                (14, VPos::Top)
            } else {
                (-14, VPos::Bottom)
            };
            let style = (FONT, 14)
                .into_font()
                .color(&RGBColor(40, 40, 40))
                .pos(Pos::new(HPos::Center, v));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at(at) + Text::new(label, (0, dy), style),
                ))
                .map_err(er)?;
        }
        draw_legend(&legend_area, &self.legend(&pts, first.is_some()))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_have_their_own_colours() {
        for (i, a) in VERDICTS.iter().enumerate() {
            for b in &VERDICTS[..i] {
                assert_ne!(verdict_color(*a), verdict_color(*b), "{a:?} {b:?}");
            }
        }
    }
}
