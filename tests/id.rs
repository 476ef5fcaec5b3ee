//! `Id` and the integers it is stored as: every `u64` in and out, signed columns checked
//! both ways, a zero-copy view of a batch (checked against the safe per-element path, and
//! under Miri).

use flakeid::clock::ManualClock;
use flakeid::decode::{Columns, Decoder};
use flakeid::{Error, Generator, Id, Layout};

#[test]
fn every_u64_is_an_id_and_signed_columns_are_checked() {
    for raw in [0, 1, i64::MAX as u64, 1 << 63, u64::MAX] {
        assert_eq!(Id::new(raw).get(), raw);
        assert_eq!(u64::from(Id::from(raw)), raw);
        assert_eq!(raw.to_string().parse::<Id>(), Ok(Id::new(raw)));
    }
    assert_eq!(i64::try_from(Id::new(i64::MAX as u64)), Ok(i64::MAX));
    let late = Id::new(1 << 63);
    assert_eq!(
        i64::try_from(late),
        Err(Error::WiderThanI64 { id: 1 << 63 })
    );
    let msg = late.to_i64().unwrap_err().to_string();
    assert!(
        msg.contains("signed 64-bit column") && msg.contains("unsigned"),
        "{msg}"
    );
    // The same ID through a signed column comes back negative, and is refused as such.
    let wrapped = (1u64 << 63) as i64;
    assert_eq!(
        Id::try_from(wrapped),
        Err(Error::NegativeId { value: i64::MIN })
    );
    let msg = Id::try_from(-1i64).unwrap_err().to_string();
    assert!(msg.contains("negative") && msg.contains("2^63"), "{msg}");
    assert_eq!(Id::try_from(i64::MAX).map(Id::get), Ok(i64::MAX as u64));
    const ID: Id = Id::new(2_116_500_430_648_709_162);
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
