//! When a watch's xruns happened: one lane per cause, time since the watch started
//! along x, a mark per time bin that saw an xrun of that cause, coloured by cause, and
//! a legend under the axis that says what each cause means and how many there were.

use super::timeline::{LEGEND_ROW_H, draw_legend_rows, lane_chart, legend_rows};
use super::{FONT, Plot, er, title_style};
use crate::load::watch::{CAUSES, Origin, WatchData};
use plotters::coord::Shift;
use plotters::prelude::*;
use results::watch::Cause;

/// Time bins across the axis: marks closer than a bin merge.
pub const BINS: usize = 600;

pub struct XrunTimeline<'a> {
    pub title: String,
    pub data: &'a WatchData,
}

pub fn cause_color(c: Cause) -> RGBColor {
    match c {
        Cause::SelfWork => RGBColor(255, 127, 14),
        Cause::Preempted => RGBColor(214, 39, 40),
        Cause::PiChain => RGBColor(148, 103, 189),
        Cause::Blocked => RGBColor(140, 86, 75),
        Cause::Interrupt => RGBColor(44, 160, 44),
        Cause::LateWakeup => RGBColor(23, 190, 207),
        Cause::Unexplained => RGBColor(90, 90, 90),
        Cause::NoTrace => RGBColor(175, 175, 175),
    }
}

/// The legend's words for a cause: short, for under a plot.
fn short_meaning(c: Cause) -> &'static str {
    match c {
        Cause::SelfWork => "its own work",
        Cause::Preempted => "another task had its CPU",
        Cause::PiChain => "a PI lock's holder could not run",
        Cause::Blocked => "waited on another task",
        Cause::Interrupt => "interrupt handlers took its CPU",
        Cause::LateWakeup => "woken late: its CPU stayed idle",
        Cause::Unexplained => "no audio thread was behind",
        Cause::NoTrace => "recorder off or blind",
    }
}

/// The axis unit for a span: seconds up to 3 minutes, minutes up to 3 hours, then hours.
pub fn unit_for(t_max: f64) -> (f64, &'static str) {
    if t_max <= 180.0 {
        (1.0, "s")
    } else if t_max <= 3.0 * 3600.0 {
        (60.0, "min")
    } else {
        (3600.0, "h")
    }
}

impl XrunTimeline<'_> {
    /// The causes that have xruns, in the report's order (lanes top to bottom).
    fn lanes(&self) -> Vec<Cause> {
        CAUSES
            .iter()
            .copied()
            .filter(|c| self.data.by_cause.get(c).is_some_and(|n| *n > 0))
            .collect()
    }

    fn legend(&self) -> Vec<(RGBColor, String)> {
        self.lanes()
            .into_iter()
            .map(|c| {
                (
                    cause_color(c),
                    format!(
                        "{}: {} ({})",
                        c.label(),
                        short_meaning(c),
                        self.data.by_cause[&c]
                    ),
                )
            })
            .collect()
    }
}

impl Plot for XrunTimeline<'_> {
    fn size(&self) -> (u32, u32) {
        let lanes = self.lanes().len().max(1) as u32;
        // Room for up to three legend rows under the axis.
        (1200, (230 + 60 * lanes + 3 * LEGEND_ROW_H).max(420))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let area = root.titled(&self.title, title_style(24)).map_err(er)?;
        let w = self.data;
        let lanes = self.lanes();
        let legend = self.legend();
        let rows = legend_rows(&area, &legend)?;
        let h = area.dim_in_pixel().1;
        let (area, strip) = if rows.iter().all(|r| r.is_empty()) {
            (area, None)
        } else {
            let (a, b) =
                area.split_vertically(h.saturating_sub(LEGEND_ROW_H * rows.len() as u32 + 12));
            (a, Some(b))
        };
        let (div, unit) = unit_for(w.t_max);
        let x_max = w.t_max * 1.0001 / div;
        let n = lanes.len().max(1);
        let names: Vec<String> = lanes
            .iter()
            .map(|c| format!("{} ({})", c.label(), w.by_cause[c]))
            .collect();
        let x_desc = match &w.origin {
            // "2026-12-01T17:09:35Z" -> 17:09:35
            Origin::Started(s) => format!(
                "time since the watch started at {} UTC ({unit})",
                s.get(11..19).unwrap_or(s)
            ),
            Origin::FirstXrun => format!("time since the first xrun ({unit})"),
        };
        let mut chart = lane_chart(&area, &names, x_max, n as f64 - 0.5, 300, &x_desc)?;
        let bin_w = x_max / BINS as f64;
        let mark_w = bin_w.max(x_max / 400.0);
        for (li, c) in lanes.iter().enumerate() {
            let y = (n - 1 - li) as f64;
            let mut hit = vec![false; BINS];
            for (t, cause) in &w.times {
                if cause == c {
                    hit[((t / div / bin_w) as usize).min(BINS - 1)] = true;
                }
            }
            let color = cause_color(*c);
            let marks = hit.iter().enumerate().filter(|(_, h)| **h).map(|(b, _)| {
                let x0 = b as f64 * bin_w;
                Rectangle::new([(x0, y - 0.35), (x0 + mark_w, y + 0.35)], color.filled())
            });
            chart.draw_series(marks).map_err(er)?;
        }
        if lanes.is_empty() {
            chart
                .draw_series(std::iter::once(Text::new(
                    format!(
                        "no xruns in {} of watching",
                        crate::report::common::fmt_dur(w.summary.duration_s)
                    ),
                    (x_max * 0.35, 0.0),
                    (FONT, 20).into_font(),
                )))
                .map_err(er)?;
        }
        if let Some(strip) = strip {
            draw_legend_rows(&strip, &rows)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_suit_the_span() {
        assert_eq!(unit_for(23.1), (1.0, "s"));
        assert_eq!(unit_for(600.0), (60.0, "min"));
        assert_eq!(unit_for(8.0 * 3600.0), (3600.0, "h"));
    }
}
