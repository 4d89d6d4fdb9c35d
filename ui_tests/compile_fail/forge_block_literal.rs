// A `Block` cannot be forged in safe code: its fields are private, so a copy of a live
// block's address, size and stream (which would let its memory be freed under its owner)
// does not compile.
use typestate_tensor::storage::{Block, StreamId};

fn main() {
    let _forged = Block {
        addr: 0x7f00_0000,
        size: 4096,
        requested: 4096,
        stream: StreamId(0),
    };
}
