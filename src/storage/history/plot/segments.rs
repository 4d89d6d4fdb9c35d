//! The segment map: one row per segment, its blocks left to right (each row spans its
//! segment's size), allocated blocks in their stream's colour, blocks awaiting stream
//! events hatched lighter, free blocks grey.

use std::path::Path;

use plotters::prelude::*;

use super::style::{colour, draw_error};
use crate::oom::Bytes;
use crate::storage::history::MemoryHistory;
use crate::storage::snapshot::{BlockState, SegmentPool};
use crate::storage::StreamId;

/// Writes the segment map of `history` to `path` (SVG).
pub fn segment_map(history: &MemoryHistory, path: &Path) -> std::io::Result<()> {
    let rows = history.segments.len().max(1);
    let height = 110 + 28 * u32::try_from(rows).unwrap_or(u32::MAX / 64).min(400);
    let root = SVGBackend::new(path, (1200, height)).into_drawing_area();
    draw(&root, history).map_err(draw_error)?;
    root.present().map_err(draw_error)
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    h: &MemoryHistory,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let mut streams: Vec<StreamId> = h.segments.iter().map(|s| s.stream).collect();
    streams.sort_unstable();
    streams.dedup();
    let stream_colour = |s: StreamId| colour(streams.binary_search(&s).unwrap_or(0));
    let rows = h.segments.len();
    let labels: Vec<String> = h
        .segments
        .iter()
        .map(|s| {
            format!(
                "{:#x} {} {}",
                s.addr,
                Bytes(s.size),
                match s.pool {
                    SegmentPool::Small => "small",
                    SegmentPool::Large => "large",
                    SegmentPool::Single => "single",
                }
            )
        })
        .collect();
    let title = format!(
        "{} allocator on {}: {} segments, {} reserved, {} allocated",
        h.allocator,
        h.location,
        rows,
        Bytes(h.stats.reserved_bytes.current),
        Bytes(h.stats.allocated_bytes.current)
    );
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .margin_bottom(34)
        .x_label_area_size(36)
        .y_label_area_size(230)
        .build_cartesian_2d(0.0..1.0, 0.0..rows.max(1) as f64)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .disable_y_axis()
        .x_desc("offset in the segment (fraction of its size)")
        .draw()?;
    // Row k (in address order) is drawn top down, its label left of it.
    let top = |row: usize| (rows - row) as f64;
    for (row, label) in labels.iter().enumerate() {
        let (_, py) = chart.backend_coord(&(0.0, top(row) - 0.5));
        let (px, _) = chart.backend_coord(&(0.0, 0.0));
        root.draw(&Text::new(
            label.clone(),
            (px - 222, py - 6),
            ("sans-serif", 13),
        ))?;
    }
    for (row, seg) in h.segments.iter().enumerate() {
        let y0 = top(row) - 0.9;
        let y1 = top(row) - 0.1;
        let total = seg.size.max(1) as f64;
        let mut offset = 0usize;
        for b in &seg.blocks {
            let x0 = offset as f64 / total;
            offset += b.size;
            let x1 = offset as f64 / total;
            let fill = match b.state {
                BlockState::Allocated => stream_colour(b.stream).filled(),
                BlockState::AwaitingEvents => stream_colour(b.stream).mix(0.4).filled(),
                BlockState::Free => RGBColor(235, 235, 235).filled(),
            };
            chart.draw_series(std::iter::once(Rectangle::new([(x0, y0), (x1, y1)], fill)))?;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, y0), (x1, y1)],
                RGBColor(90, 90, 90).stroke_width(1),
            )))?;
            if b.state != BlockState::Free && x1 - x0 > 0.06 {
                chart.draw_series(std::iter::once(Text::new(
                    Bytes(b.requested).to_string(),
                    (x0 + 0.005, top(row) - 0.38),
                    ("sans-serif", 13).into_font().color(&WHITE),
                )))?;
            }
        }
    }
    // Legend: one swatch per stream, then pending and free.
    let mut entries: Vec<(String, RGBAColor)> = streams
        .iter()
        .map(|&s| {
            (
                format!("allocated, stream {:#x}", s.0),
                stream_colour(s).to_rgba(),
            )
        })
        .collect();
    entries.push((
        "awaiting stream events (lighter)".to_owned(),
        BLACK.mix(0.3),
    ));
    entries.push((
        "free (cached)".to_owned(),
        RGBColor(235, 235, 235).to_rgba(),
    ));
    let (_, height) = root.dim_in_pixel();
    let y = i32::try_from(height).unwrap_or(i32::MAX) - 26;
    for (i, (text, c)) in entries.iter().enumerate() {
        let x = 250 + 260 * i32::try_from(i).unwrap_or(0);
        root.draw(&Rectangle::new([(x, y), (x + 14, y + 12)], c.filled()))?;
        root.draw(&Rectangle::new(
            [(x, y), (x + 14, y + 12)],
            BLACK.stroke_width(1),
        ))?;
        root.draw(&Text::new(text.clone(), (x + 20, y), ("sans-serif", 14)))?;
    }
    Ok(())
}
