//! Small pieces of a response (one ID's JSON, a request id) cut from a block of memory
//! per thread instead of allocated one by one: a cut costs a reference count on the
//! block, and the block is freed when the last piece cut from it is dropped. A mint
//! route's request made two heap allocations for them.

use std::cell::RefCell;

use bytes::{Bytes, BytesMut};

/// The size of a block: a few hundred pieces.
const BLOCK: usize = 16 << 10;

thread_local! {
    static CURRENT: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// The concatenation of `parts`, cut from this thread's block (a new block when the
/// current one has no room left; a piece larger than a block gets one of its own).
pub(crate) fn cut(parts: &[&[u8]]) -> Bytes {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    CURRENT.with(|current| {
        let mut block = current.borrow_mut();
        if block.capacity() - block.len() < len {
            *block = BytesMut::with_capacity(BLOCK.max(len));
        }
        for part in parts {
            block.extend_from_slice(part);
        }
        block.split().freeze()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces keep their bytes whatever is cut after them, across blocks, and a piece
    /// larger than a block is whole.
    #[test]
    fn pieces_are_their_own_bytes_across_blocks() {
        let mut pieces = Vec::new();
        for i in 0..5_000u32 {
            let text = i.to_string();
            pieces.push((text.clone(), cut(&[b"{\"id\":\"", text.as_bytes(), b"\"}"])));
        }
        for (text, piece) in &pieces {
            assert_eq!(&piece[..], format!("{{\"id\":\"{text}\"}}").as_bytes());
        }
        let big = vec![7u8; BLOCK + 1];
        assert_eq!(&cut(&[&big])[..], &big[..]);
        assert_eq!(&cut(&[b"after"])[..], b"after");
    }
}
