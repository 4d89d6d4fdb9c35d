//! SVG plots of a [`MemoryHistory`], drawn with `plotters` (SVG backend only):
//! [`memory_timeline`] (allocated vs reserved bytes over time, the largest allocations
//! stacked) and [`segment_map`] (each segment's blocks, used or free, by stream).

mod segments;
mod series;
mod style;
mod timeline;

use std::path::{Path, PathBuf};

pub use segments::segment_map;
pub use timeline::memory_timeline;

use super::MemoryHistory;

impl MemoryHistory {
    /// Writes `memory_timeline.svg` and `segment_map.svg` into `dir` (created if missing)
    /// and returns their paths.
    pub fn write_svgs(&self, dir: impl AsRef<Path>) -> std::io::Result<[PathBuf; 2]> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir)?;
        let timeline = dir.join("memory_timeline.svg");
        let segments = dir.join("segment_map.svg");
        memory_timeline(self, &timeline)?;
        segment_map(self, &segments)?;
        Ok([timeline, segments])
    }
}

#[cfg(test)]
mod tests {
    use super::series::timeline;
    use crate::storage::history::HistorySettings;
    use crate::storage::{CachingAllocator, DeviceAllocator, HostMemorySource, StreamId};

    const MIB: usize = 1 << 20;

    #[test]
    fn the_timeline_recounts_the_events() {
        let a = CachingAllocator::new(HostMemorySource::new(256 * MIB));
        let early = a.allocate(MIB, StreamId(0)).unwrap();
        // Recording starts with 1 MiB already allocated: the baseline comes from the stats.
        a.record_history(Some(HistorySettings::new(100)));
        let x = a.allocate(30 * MIB, StreamId(0)).unwrap();
        let y = a.allocate(5 * MIB, StreamId(1)).unwrap();
        a.free(x).unwrap();
        let h = a.history();
        let t = timeline(&h, 1);
        // Events: segment 30, alloc 30, segment 20, alloc 5, free requested, free completed.
        assert_eq!(
            t.allocated,
            [MIB, MIB, 31 * MIB, 31 * MIB, 36 * MIB, 36 * MIB, 6 * MIB]
        );
        assert_eq!(
            t.reserved,
            [
                2 * MIB,
                32 * MIB,
                32 * MIB,
                52 * MIB,
                52 * MIB,
                52 * MIB,
                52 * MIB
            ]
        );
        assert_eq!(t.times_ms.len(), 7);
        assert_eq!(t.largest.len(), 1);
        let big = &t.largest[0];
        assert_eq!((big.size, big.start, big.end), (30 * MIB, 2, 6));
        assert_eq!(
            (big.at(1), big.at(2), big.at(5), big.at(6)),
            (0, 30 * MIB, 30 * MIB, 0)
        );
        a.free(y).unwrap();
        a.free(early).unwrap();
    }
}
