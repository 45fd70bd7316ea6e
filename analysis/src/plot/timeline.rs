//! When xruns and deadline misses happened: one lane per setting, variant (and trial),
//! time along x, a tick per time bin that saw events, coloured by kind.

use super::{FONT, Plot, er, title_style};
use crate::load::events::{KINDS, SHADE_BURST, SHADE_CAUGHT, Timeline};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

/// Hog bursts: light, and stronger when the burst caught the lock holder.
pub fn shade_color(level: u8) -> RGBColor {
    if level >= SHADE_CAUGHT {
        RGBColor(140, 180, 224)
    } else {
        RGBColor(208, 224, 242)
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
        let h = (200 + 60 * self.tl.lanes.len() as u32).max(380);
        // Room for the legend below the axis when bursts are shaded.
        let extra = if self.tl.shade.is_empty() { 0 } else { 60 };
        (1200, h + extra)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let area = root.titled(&self.title, title_style(24)).map_err(er)?;
        let tl = self.tl;
        // With bursts, the legend has more entries than fit over the top lane: it goes in
        // rows of its own under the x axis, where it covers nothing.
        let legend = legend_entries(tl);
        let (area, strip) = if tl.shade.is_empty() {
            (area, None)
        } else {
            let rows = legend_rows(&area, &legend)?;
            let h = area.dim_in_pixel().1;
            let (a, b) =
                area.split_vertically(h.saturating_sub(LEGEND_ROW_H * rows.len() as u32 + 12));
            (a, Some((b, rows)))
        };
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
        let mut chart = lane_chart(
            &area,
            &names,
            tl.t_max,
            // Headroom over the top lane for the legend, unless it sits under the axis.
            n as f64 + if strip.is_some() { -0.5 } else { 0.4 },
            420,
            "time since the trial started (s)",
        )?;
        let w = tl.bin_width();
        // Hog bursts first, so the marks are drawn over them: one span per run of bins
        // with the same shade.
        for level in [SHADE_BURST, SHADE_CAUGHT] {
            let c = shade_color(level);
            let mut spans = Vec::new();
            for (li, lane) in tl.shade.iter().enumerate() {
                let y = (n - 1 - li) as f64;
                let mut bi = 0;
                while bi < lane.len() {
                    if lane[bi] != level {
                        bi += 1;
                        continue;
                    }
                    let start = bi;
                    while bi < lane.len() && lane[bi] == level {
                        bi += 1;
                    }
                    spans.push(Rectangle::new(
                        [(start as f64 * w, y - 0.45), (bi as f64 * w, y + 0.45)],
                        c.filled(),
                    ));
                }
            }
            chart.draw_series(spans).map_err(er)?;
        }
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
            if any && strip.is_none() {
                s.label(format!("{} ({total})", kind_label(k)))
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled())
                    });
            }
        }
        let no_events = tl.totals.values().all(|t| t.iter().all(|c| *c == 0));
        if no_events {
            chart
                .draw_series(std::iter::once(Text::new(
                    "no xruns, deadline misses or other events",
                    (tl.t_max * 0.3, (n as f64 - 1.0) / 2.0),
                    (FONT, 20).into_font(),
                )))
                .map_err(er)?;
        }
        if let Some((strip, rows)) = strip {
            draw_legend_rows(&strip, &rows)?;
        } else if !no_events {
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

/// A chart of lanes over time: lane `i` of `names` centred at y = n-1-i (the first on
/// top), y from -0.5 to `y_top`, x from 0 to `x_max` along `x_desc`; the lane names
/// (in at most `max_label_w` px) on the y axis, the mesh drawn.
pub(crate) fn lane_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    names: &[String],
    x_max: f64,
    y_top: f64,
    max_label_w: u32,
    x_desc: &str,
) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>, String> {
    let n = names.len().max(1);
    let label_w = names.iter().map(|s| s.chars().count()).max().unwrap_or(8) as u32 * 9 + 30;
    let mut chart = ChartBuilder::on(area)
        .margin(15)
        .x_label_area_size(55)
        .y_label_area_size(label_w.clamp(120, max_label_w))
        .build_cartesian_2d(0f64..x_max, -0.5f64..y_top)
        .map_err(er)?;
    let lab = names.to_vec();
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
        .x_desc(x_desc)
        .x_label_formatter(&|v: &f64| super::tick(*v))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(er)?;
    Ok(chart)
}

pub(crate) const LEGEND_ROW_H: u32 = 26;
const LEGEND_FONT: f64 = 15.0;
/// Swatch, gap to its text, gap to the next entry (px).
const SWATCH: i32 = 16;
const SWATCH_GAP: i32 = 8;
const ENTRY_GAP: i32 = 30;

/// Bursts (when shaded) and event kinds that happened, with their counts.
fn legend_entries(tl: &Timeline) -> Vec<(RGBColor, String)> {
    let mut out = Vec::new();
    let (all, caught) = tl.burst_total();
    let has = |level: u8| tl.shade.iter().any(|l| l.contains(&level));
    if has(SHADE_BURST) {
        out.push((
            shade_color(SHADE_BURST),
            format!("hog burst ({})", all - caught),
        ));
    }
    if has(SHADE_CAUGHT) {
        out.push((
            shade_color(SHADE_CAUGHT),
            format!("hog burst that caught the lock holder ({caught})"),
        ));
    }
    for k in 0..KINDS.len() {
        let total: u64 = tl.totals.values().map(|t| t[k]).sum();
        if total > 0 {
            out.push((kind_color(k), format!("{} ({total})", kind_label(k))));
        }
    }
    out
}

/// The entries in rows that fit the width, each with its text width in px.
pub(crate) type LegendRow = Vec<(RGBColor, String, i32)>;

pub(crate) fn legend_rows<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(RGBColor, String)],
) -> Result<Vec<LegendRow>, String> {
    let font = TextStyle::from((FONT, LEGEND_FONT).into_font());
    let room = area.dim_in_pixel().0 as i32 - 60;
    let mut rows: Vec<LegendRow> = vec![vec![]];
    let mut used = 0;
    for (c, label) in entries {
        let tw = area.estimate_text_size(label, &font).map_err(er)?.0 as i32;
        let need = SWATCH + SWATCH_GAP + tw;
        let last = rows.len() - 1;
        if !rows[last].is_empty() && used + ENTRY_GAP + need > room {
            rows.push(vec![]);
            used = 0;
        }
        let last = rows.len() - 1;
        if !rows[last].is_empty() {
            used += ENTRY_GAP;
        }
        used += need;
        rows[last].push((*c, label.clone(), tw));
    }
    Ok(rows)
}

/// Each row centred: a swatch, then its label.
pub(crate) fn draw_legend_rows<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rows: &[LegendRow],
) -> Result<(), String> {
    let style = TextStyle::from((FONT, LEGEND_FONT).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let width = area.dim_in_pixel().0 as i32;
    for (ri, row) in rows.iter().enumerate() {
        let y = 6 + LEGEND_ROW_H as i32 * ri as i32 + LEGEND_ROW_H as i32 / 2;
        let total: i32 = row
            .iter()
            .map(|(_, _, tw)| SWATCH + SWATCH_GAP + tw)
            .sum::<i32>()
            + ENTRY_GAP * (row.len() as i32 - 1).max(0);
        let mut x = ((width - total) / 2).max(0);
        for (c, label, tw) in row {
            area.draw(&Rectangle::new(
                [(x, y - 7), (x + SWATCH, y + 7)],
                ShapeStyle::from(c).filled(),
            ))
            .map_err(er)?;
            area.draw(&Rectangle::new(
                [(x, y - 7), (x + SWATCH, y + 7)],
                RGBColor(120, 120, 120).stroke_width(1),
            ))
            .map_err(er)?;
            area.draw(&Text::new(
                label.as_str(),
                (x + SWATCH + SWATCH_GAP, y),
                &style,
            ))
            .map_err(er)?;
            x += SWATCH + SWATCH_GAP + tw + ENTRY_GAP;
        }
    }
    Ok(())
}
