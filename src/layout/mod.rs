//! (being written)
/// placeholder
#[derive(Clone, Debug)]
pub struct Layout;
