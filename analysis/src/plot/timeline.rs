//! When xruns and deadline misses happened: one lane per setting, variant (and trial),
//! time along x, a tick per time bin that saw events, coloured by kind.

use super::{FONT, Plot, er, title_style};
use crate::load::events::{KINDS, Timeline};
use plotters::coord::Shift;
use plotters::prelude::*;

pub struct TimelinePlot<'a> {
    pub title: String,
    pub tl: &'a Timeline,
    /// Lane names are drawn into the PNG too, so they pass through the redactor here.
    pub red: crate::redact::Redactor,
}

pub fn kind_color(k: usize) -> RGBColor {
    match KINDS[k] {
        "xrun" => RGBColor(214, 39, 40),
        "deadline_miss" => RGBColor(255, 127, 14),
        "injected" => RGBColor(150, 150, 150),
        "discontinuity" => RGBColor(148, 103, 189),
        _ => RGBColor(0, 0, 0),
    }
}

fn kind_label(k: usize) -> &'static str {
    match KINDS[k] {
        "xrun" => "xrun",
        "deadline_miss" => "deadline miss",
        "injected" => "injected overrun",
        "discontinuity" => "loopback discontinuity",
        _ => "server gone",
    }
}

/// Vertical slot of a kind inside a lane (lane spans [i-0.45, i+0.45]).
fn slot(k: usize) -> (f64, f64) {
    match KINDS[k] {
        "xrun" => (0.1, 0.4),
        "deadline_miss" => (-0.15, 0.1),
        "injected" => (-0.4, -0.15),
        _ => (-0.4, 0.4),
    }
}

impl Plot for TimelinePlot<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, (200 + 60 * self.tl.lanes.len() as u32).max(380))
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let area = root.titled(&self.title, title_style(24)).map_err(er)?;
        let tl = self.tl;
        let n = tl.lanes.len().max(1);
        let names: Vec<String> = tl
            .lanes
            .iter()
            .map(|(s, v, t)| {
                self.red.apply(&match t {
                    Some(t) => format!("{s} / {v} #{t}"),
                    None => format!("{s} / {v}"),
                })
            })
            .collect();
        let label_w = names.iter().map(|s| s.chars().count()).max().unwrap_or(8) as u32 * 9 + 30;
        let mut chart = ChartBuilder::on(&area)
            .margin(15)
            .x_label_area_size(55)
            .y_label_area_size(label_w.clamp(120, 420))
            .build_cartesian_2d(0f64..tl.t_max, -0.5f64..n as f64 + 0.4)
            .map_err(er)?;
        let lab = names.clone();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&move |v: &f64| {
                let i = v.round();
                if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < lab.len() {
                    lab[n - 1 - i as usize].clone()
                } else {
                    String::new()
                }
            })
            .x_desc("time since the trial started (s)")
            .x_label_formatter(&|v: &f64| super::tick(*v))
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 17))
            .light_line_style(RGBColor(240, 240, 240))
            .bold_line_style(RGBColor(215, 215, 215))
            .draw()
            .map_err(er)?;
        let w = tl.bin_width();
        for k in 0..KINDS.len() {
            let c = kind_color(k);
            let (a, b) = slot(k);
            let total: u64 = tl.totals.values().map(|t| t[k]).sum();
            let mut marks = Vec::new();
            for (li, lane) in tl.counts.iter().enumerate() {
                let y = (n - 1 - li) as f64;
                for (bi, &cnt) in lane[k].iter().enumerate() {
                    if cnt > 0 {
                        let x0 = bi as f64 * w;
                        marks.push(Rectangle::new(
                            [(x0, y + a), (x0 + w.max(tl.t_max / 400.0), y + b)],
                            c.filled(),
                        ));
                    }
                }
            }
            let any = !marks.is_empty();
            let s = chart.draw_series(marks).map_err(er)?;
            if any {
                s.label(format!("{} ({total})", kind_label(k)))
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled())
                    });
            }
        }
        if tl.totals.values().all(|t| t.iter().all(|c| *c == 0)) {
            chart
                .draw_series(std::iter::once(Text::new(
                    "no xruns, deadline misses or other events",
                    (tl.t_max * 0.3, (n as f64 - 1.0) / 2.0),
                    (FONT, 20).into_font(),
                )))
                .map_err(er)?;
        } else {
            chart
                .configure_series_labels()
                .label_font((FONT, 15))
                .background_style(WHITE.mix(0.9))
                .border_style(RGBColor(160, 160, 160))
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(er)?;
        }
        Ok(())
    }
}
