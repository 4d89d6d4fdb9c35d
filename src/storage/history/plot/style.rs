//! What both plots draw with: the palette, the MiB scale and the drawing error.

use plotters::style::{Palette, Palette99, RGBColor};

/// Bytes in a MiB, as the plots' axis unit.
pub(super) const MIB_F: f64 = (1u64 << 20) as f64;

/// The `k`-th colour of the palette (cycles).
pub(super) fn colour(k: usize) -> RGBColor {
    let (r, g, b) = Palette99::COLORS[k % Palette99::COLORS.len()];
    RGBColor(r, g, b)
}

/// A drawing failure as an I/O error (the SVG backend fails only when writing).
pub(super) fn draw_error(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}
