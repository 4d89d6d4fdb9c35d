//! Memory over time: allocated bytes stacked by the largest allocations, reserved bytes as a
//! line above them.

use std::path::Path;

use plotters::prelude::*;

use super::series::{timeline, Timeline};
use super::style::{colour, draw_error, MIB_F};
use crate::oom::Bytes;
use crate::storage::history::MemoryHistory;

/// How many of the largest allocations get their own layer.
const TOP: usize = 8;

/// Writes the memory-over-time plot of `history` to `path` (SVG).
pub fn memory_timeline(history: &MemoryHistory, path: &Path) -> std::io::Result<()> {
    let t = timeline(history, TOP);
    let root = SVGBackend::new(path, (1200, 640)).into_drawing_area();
    draw(&root, &t, history).map_err(draw_error)?;
    root.present().map_err(draw_error)
}

/// The x/y points of a step function over event numbers: step `t` (the value after `t`
/// events) holds from x = t to x = t + 1.
fn steps(t: &Timeline, value: impl Fn(usize) -> usize) -> Vec<(f64, f64)> {
    let n = t.times_ms.len();
    let mut points = Vec::with_capacity(2 * n);
    for step in 0..n {
        let y = value(step) as f64 / MIB_F;
        points.push((step as f64, y));
        points.push(((step + 1) as f64, y));
    }
    points
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    t: &Timeline,
    h: &MemoryHistory,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    // Event numbers on the x axis, as PyTorch's viewer does: a slow driver call or a
    // backtrace would otherwise stretch one event over the whole plot.
    let x_max = t.times_ms.len() as f64;
    let span_ms = t.times_ms.last().copied().unwrap_or(0.0);
    let y_max = t
        .reserved
        .iter()
        .chain(&t.allocated)
        .copied()
        .max()
        .unwrap_or(0) as f64
        / MIB_F
        * 1.08;
    let y_max = y_max.max(1.0);
    let title = format!(
        "{} allocator on {}: memory over {} events ({:.1} ms{})",
        h.allocator,
        h.location,
        h.events.len(),
        span_ms,
        if h.dropped_events > 0 {
            format!(", {} older dropped", h.dropped_events)
        } else {
            String::new()
        }
    );
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc("event number (in time order)")
        .y_desc("MiB")
        .light_line_style(WHITE.mix(0.0))
        .draw()?;

    // Cumulative layers, drawn from the top down so each lower one covers the one above.
    let n = t.largest.len();
    let below = |k: usize, step: usize| -> usize {
        t.largest[..k].iter().map(|l| l.at(step)).sum::<usize>()
    };
    let others = t.allocated.clone();
    chart
        .draw_series(AreaSeries::new(
            steps(t, |s| others[s].max(below(n, s))),
            0.0,
            RGBColor(200, 200, 200).mix(0.9),
        ))?
        .label("other allocations")
        .legend(|(x, y)| {
            Rectangle::new(
                [(x, y - 5), (x + 14, y + 5)],
                RGBColor(200, 200, 200).filled(),
            )
        });
    for k in (0..n).rev() {
        let life = &t.largest[k];
        let c = colour(k);
        chart
            .draw_series(AreaSeries::new(
                steps(t, |s| below(k + 1, s)),
                0.0,
                c.mix(0.85),
            ))?
            .label(format!("{} ({})", life.label, Bytes(life.size)))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
    }
    chart
        .draw_series(LineSeries::new(
            steps(t, |s| t.reserved[s]),
            BLACK.stroke_width(2),
        ))?
        .label("reserved (segments)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], BLACK.stroke_width(2)));
    chart
        .draw_series(LineSeries::new(
            steps(t, |s| t.allocated[s]),
            RGBColor(40, 40, 40).stroke_width(1),
        ))?
        .label("allocated (requested bytes)")
        .legend(|(x, y)| {
            PathElement::new(
                vec![(x, y), (x + 14, y)],
                RGBColor(40, 40, 40).stroke_width(1),
            )
        });
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
