//! serde (feature `serde`): numbers by default, strings on request, clear errors.
#![cfg(feature = "serde")]

use flakeid::Id;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Row {
    plain: Id,
    #[serde(with = "flakeid::serde::as_string")]
    text: Id,
    #[serde(with = "flakeid::serde::as_number")]
    number: Id,
}

fn id(raw: u64) -> Id {
    Id::new(raw)
}

#[test]
fn round_trips_in_each_form() {
    let row = Row {
        plain: id(2116500430648709162),
        text: id((1 << 63) - 1),
        number: id(0),
    };
    let json = serde_json::to_string(&row).unwrap();
    assert_eq!(
        json,
        r#"{"plain":2116500430648709162,"text":"9223372036854775807","number":0}"#
    );
    assert_eq!(serde_json::from_str::<Row>(&json).unwrap(), row);
}

#[test]
fn plain_and_string_forms_read_numbers_and_every_encoding() {
    for text in [
        r#""2116500430648709162""#,
        r#""0x1d5f51ed8fc7102a""#,
        "2116500430648709162",
    ] {
        assert_eq!(
            serde_json::from_str::<Id>(text).unwrap(),
            id(2116500430648709162),
            "{text}"
        );
    }
    let b32 = {
        let mut buf = [0u8; flakeid::Encoding::MAX_LEN];
        format!(
            "\"{}\"",
            id(2116500430648709162).encode(flakeid::Encoding::Base32, &mut buf)
        )
    };
    assert_eq!(
        serde_json::from_str::<Id>(&b32).unwrap(),
        id(2116500430648709162)
    );
}

#[test]
fn out_of_every_layout_is_a_clear_error() {
    let err = |json: &str| serde_json::from_str::<Id>(json).unwrap_err().to_string();
    // serde_json reads a number past u64::MAX as a float.
    assert!(
        err("18446744073709551616").contains("expected a 64-bit ID"),
        "{}",
        err("18446744073709551616")
    );
    assert!(err("-1").contains("negative"));
    assert!(err("1.5").contains("floating point"), "{}", err("1.5"));
    assert!(err(r#""18446744073709551616""#).contains("does not fit in 64 bits"));
    assert!(
        err(r#""banana""#).contains("banana"),
        "{}",
        err(r#""banana""#)
    );
    assert!(err("null").contains("64-bit ID"));
    // as_number takes numbers only.
    let e = serde_json::from_str::<Row>(r#"{"plain":1,"text":"2","number":"3"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("as a number"), "{e}");
}

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Signed {
    #[serde(with = "flakeid::serde::as_i64")]
    id: Id,
}

/// IDs of 64-bit layouts (a Discord ID of 2084 and later) through every form: as a number,
/// as a string in each encoding, checked against the layout; an `i64` column refuses them
/// with a message, never a negative number.
#[test]
fn ids_past_2_63_round_trip_and_an_i64_column_says_why_not() {
    let discord = flakeid::Layout::discord();
    for raw in [1u64 << 63, (1 << 63) + 4095, u64::MAX] {
        let plain = Row {
            plain: id(raw),
            text: id(raw),
            number: id(raw),
        };
        let json = serde_json::to_string(&plain).unwrap();
        assert_eq!(
            json,
            format!(r#"{{"plain":{raw},"text":"{raw}","number":{raw}}}"#)
        );
        assert_eq!(serde_json::from_str::<Row>(&json).unwrap(), plain);
        let mut buf = [0u8; flakeid::Encoding::MAX_LEN];
        for e in [flakeid::Encoding::Hex, flakeid::Encoding::Base32] {
            let text = format!("\"{}\"", id(raw).encode(e, &mut buf));
            if !text.bytes().any(|b| b.is_ascii_alphabetic()) {
                continue; // base32 made of digits reads as decimal (documented)
            }
            assert_eq!(
                serde_json::from_str::<Id>(&text).unwrap(),
                id(raw),
                "{text}"
            );
        }
        let mut de = serde_json::Deserializer::from_str(&json[9..json.find(',').unwrap()]);
        let seeded =
            serde::de::DeserializeSeed::deserialize(flakeid::serde::InLayout(&discord), &mut de);
        assert_eq!(seeded.unwrap(), id(raw));

        let e = serde_json::to_string(&Signed { id: id(raw) })
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not fit a signed 64-bit column"), "{e}");
        let e = serde_json::from_str::<Signed>(&format!(r#"{{"id":{raw}}}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not fit a signed 64-bit column"), "{e}");
        // The same bits read back from a signed column come out negative: refused, saying why.
        let wrapped = raw as i64;
        let e = serde_json::from_str::<Signed>(&format!(r#"{{"id":{wrapped}}}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("negative") && e.contains("2^63"), "{e}");
    }
    let below = Signed {
        id: id(i64::MAX as u64),
    };
    let json = serde_json::to_string(&below).unwrap();
    assert_eq!(serde_json::from_str::<Signed>(&json).unwrap(), below);
    // A 63-bit layout still refuses what only a 64-bit one holds.
    let mut de = serde_json::Deserializer::from_str("9223372036854775808");
    let e = serde::de::DeserializeSeed::deserialize(
        flakeid::serde::InLayout(&flakeid::Layout::snowflake()),
        &mut de,
    )
    .unwrap_err();
    assert!(e.to_string().contains("63-bit layout"), "{e}");
}

#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Browser {
    #[serde(with = "flakeid::serde::javascript_safe")]
    id: Id,
}

#[test]
fn javascript_safe_rejects_what_javascript_would_misread() {
    const TOP: u64 = (1 << 53) - 1;
    let row = Browser { id: id(TOP) };
    let json = serde_json::to_string(&row).unwrap();
    assert_eq!(json, format!(r#"{{"id":{TOP}}}"#));
    assert_eq!(serde_json::from_str::<Browser>(&json).unwrap(), row);
    // Strings in any encoding are read too, and checked the same way.
    let hex = format!(r#"{{"id":"0x{TOP:x}"}}"#);
    assert_eq!(serde_json::from_str::<Browser>(&hex).unwrap(), row);

    for too_big in [TOP + 1, (1 << 63) - 1] {
        let e = serde_json::from_str::<Browser>(&format!(r#"{{"id":{too_big}}}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("53-bit layout"), "{e}");
        let e = serde_json::from_str::<Browser>(&format!(r#"{{"id":"{too_big}"}}"#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("53-bit layout"), "{e}");
        let e = serde_json::to_string(&Browser { id: id(too_big) })
            .unwrap_err()
            .to_string();
        assert!(e.contains("above 2^53 - 1"), "{e}");
    }
}

#[test]
fn in_layout_checks_against_a_layout_chosen_at_run_time() {
    use flakeid::Layout;
    use flakeid::serde::InLayout;
    use serde::de::DeserializeSeed;

    let read = |layout: &Layout, json: &str| {
        let mut de = serde_json::Deserializer::from_str(json);
        InLayout(layout)
            .deserialize(&mut de)
            .map_err(|e| e.to_string())
    };
    // Sonyflake v1 and Snowflake use all 63 bits: every 63-bit value fits.
    for layout in [Layout::snowflake(), Layout::sonyflake_v1()] {
        assert_eq!(
            read(&layout, "9223372036854775807").unwrap().get(),
            (1 << 63) - 1
        );
    }
    let narrow = Layout::builder()
        .time_bits(30)
        .node_bits(4)
        .sequence_bits(6)
        .build()
        .unwrap();
    assert_eq!(narrow.bits(), 40);
    let max = narrow.max_id();
    assert_eq!(read(&narrow, &max.to_string()).unwrap().get(), max);
    let e = read(&narrow, &(max + 1).to_string()).unwrap_err();
    assert!(
        e.contains("40-bit layout") && e.contains(&max.to_string()),
        "{e}"
    );
    // The layout check comes after the checks every layout makes.
    assert!(read(&narrow, "-3").unwrap_err().contains("negative"));
    assert!(read(&narrow, r#""banana""#).unwrap_err().contains("banana"));
}
