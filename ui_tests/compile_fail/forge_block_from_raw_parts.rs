// Building a `Block` from its parts is `unsafe`: the caller vouches that it owns the memory.
use typestate_tensor::storage::{Block, StreamId};

fn main() {
    let _forged = Block::from_raw_parts(0x7f00_0000, 4096, 4096, StreamId(0));
}
