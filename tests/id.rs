//! `Id` and the integers it is stored as: checked conversions in, free conversions out, a
//! zero-copy view of a batch (checked against the safe per-element path, and under Miri).

use flakeid::decode::{Columns, Decoder};
use flakeid::{Error, Generator, Id, Layout, ManualClock};

#[test]
fn conversions_are_checked_in_and_free_out() {
    assert_eq!(Id::try_from(0u64).map(Id::get), Ok(0));
    assert_eq!(
        Id::try_from(i64::MAX as u64).map(u64::from),
        Ok(i64::MAX as u64)
    );
    assert_eq!(
        Id::try_from(1u64 << 63),
        Err(Error::IdOutOfLayout {
            id: 1 << 63,
            bits: 63
        })
    );
    assert!(Id::try_from(-1i64).is_err());
    assert_eq!(Id::try_from(i64::MAX).map(i64::from), Ok(i64::MAX));
    const ID: Id = match Id::new(2_116_500_430_648_709_162) {
        Ok(id) => id,
        Err(_) => panic!(),
    };
    assert_eq!(
        format!("{ID:x} {ID:X} {ID:#x}"),
        "1d5f51ed8fc7102a 1D5F51ED8FC7102A 0x1d5f51ed8fc7102a"
    );
}

#[test]
fn a_batch_is_viewed_as_u64s_without_a_copy() {
    let layout = Layout::snowflake();
    let g = Generator::builder(layout)
        .node(9)
        .clock(ManualClock::from_unix_ms(1_793_448_000_000))
        .build()
        .unwrap();
    let mut batch = [Id::default(); 1000];
    let n = g.next_ids(&mut batch).unwrap();
    let raw = Id::as_u64s(&batch[..n]);
    assert_eq!(raw.as_ptr().cast::<Id>(), batch.as_ptr(), "the same memory");
    let safe: Vec<u64> = batch[..n].iter().map(|id| id.get()).collect();
    assert_eq!(raw, &safe[..]);
    assert!(Id::as_u64s(&[]).is_empty());
    // Straight into the decoder.
    let mut node = vec![0; n];
    Decoder::new(&layout)
        .decode(
            raw,
            Columns {
                node: Some(&mut node),
                ..Columns::default()
            },
        )
        .unwrap();
    assert!(node.iter().all(|&x| x == 9));
}

/// The hot path's result is two words: an `Id`, or a `MintError` in the same space.
#[test]
fn a_mint_result_is_sixteen_bytes() {
    assert_eq!(size_of::<Result<Id, flakeid::MintError>>(), 16);
    assert_eq!(size_of::<flakeid::MintError>(), 16);
}
