//! The real-world presets (Discord, Instagram, Mastodon) and the tick grids: agreement
//! with ferroid's layouts on 10,000 IDs each, minted by ferroid and decoded here and minted
//! here and decoded by ferroid; and ferroid's grid (`grid=epoch`) against Sonyflake's
//! (`grid=unix`) at a 10 ms unit and an epoch off the unit's grid. The platforms' worked
//! examples, through the library and the tool, are in `cli/tests/presets.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ferroid::define_snowflake_id;
use ferroid::generator::BasicSnowflakeGenerator;
use ferroid::id::{SnowflakeDiscordId, SnowflakeId, SnowflakeInstagramId, SnowflakeMastodonId};
use ferroid::time::TimeSource;
use flakeid::clock::ManualClock;
use flakeid::layout::{DISCORD_EPOCH_MS, Grid, INSTAGRAM_EPOCH_MS};
use flakeid::{Error, Generator, Layout, MintError};

mod common;
use common::Rng;

/// A ferroid time source we set by hand: milliseconds since `epoch_ms`, in `N`-ms units.
#[derive(Clone)]
struct SetClock<const N: u64> {
    unix_ms: Arc<AtomicU64>,
    epoch_ms: u64,
}

impl<const N: u64> SetClock<N> {
    fn new(epoch_ms: u64) -> Self {
        SetClock {
            unix_ms: Arc::new(AtomicU64::new(epoch_ms)),
            epoch_ms,
        }
    }
    fn set(&self, unix_ms: u64) {
        self.unix_ms.store(unix_ms, Ordering::Relaxed);
    }
}

impl<const N: u64> TimeSource<u64> for SetClock<N> {
    const GRANULARITY_MILLIS: u64 = N;
    fn current_millis(&self) -> u64 {
        (self.unix_ms.load(Ordering::Relaxed) - self.epoch_ms) / N
    }
}

/// The instants to mint at: `n` of them, non-decreasing, from `start_ms`, often several
/// in one millisecond (so sequences run), sometimes jumping seconds.
fn instants(rng: &mut Rng, start_ms: u64, n: usize) -> Vec<u64> {
    let mut t = start_ms;
    (0..n)
        .map(|_| {
            t += match rng.next() % 8 {
                0..=3 => 0,
                4..=6 => 1,
                _ => rng.next() % 5_000,
            };
            t
        })
        .collect()
}

const N: usize = 10_000;

/// ferroid mints, flakeid decodes; flakeid mints, ferroid decodes: the same three fields
/// and, against the clock that minted, the same time. Half of each run lies past 2^63
/// where the layout reaches it within a clock's range (Discord after 2084, Instagram after
/// 2046; Mastodon gets there in 6429: ferroid's IDs there, flakeid's clock stops in 2554).
fn agree<I>(layout: Layout, epoch_ms: u64, machine: u64, starts: [u64; 2], far_ms: Option<u64>)
where
    I: SnowflakeId<Ty = u64> + Copy,
{
    let mut rng = Rng(0x5EED ^ u64::from(layout.time_bits()));
    let mut past_2_63 = 0;
    // ferroid -> flakeid.
    for start in starts.into_iter().chain(far_ms) {
        let clock = SetClock::<1>::new(epoch_ms);
        let g: BasicSnowflakeGenerator<I, _> = BasicSnowflakeGenerator::new(machine, clock.clone());
        for t in instants(&mut rng, start, N / 2) {
            clock.set(t);
            let id: I = g.next_id(|_| panic!("a millisecond's sequence ran out"));
            let raw = id.to_raw();
            let p = layout.decompose(raw).unwrap();
            assert_eq!(
                (p.ticks, p.node, p.sequence),
                (id.timestamp(), id.machine_id(), id.sequence())
            );
            assert_eq!(layout.unix_ms_of(p.ticks), Ok(t));
            past_2_63 += usize::from(raw >= 1 << 63);
        }
    }
    // flakeid -> ferroid.
    for start in starts {
        let clock = ManualClock::from_unix_ms(start);
        let g = Generator::builder(layout)
            .node(machine)
            .clock(clock.clone())
            .build()
            .unwrap();
        let mut last = None;
        for t in instants(&mut rng, start, N / 2) {
            clock.set(t * 1_000_000);
            let id = g.next_id().unwrap();
            assert!(last < Some(id));
            last = Some(id);
            let f = I::from_raw(id.get());
            let p = layout.decompose(id.get()).unwrap();
            assert_eq!(
                (f.timestamp(), f.machine_id(), f.sequence()),
                (p.ticks, p.node, p.sequence)
            );
            assert_eq!(epoch_ms + f.timestamp(), t);
            past_2_63 += usize::from(id.get() >= 1 << 63);
        }
    }
    if layout.time_bits() < 48 {
        assert!(past_2_63 >= N, "{layout}: only {past_2_63} IDs past 2^63");
    } else {
        assert!(
            past_2_63 >= N / 2,
            "{layout}: only {past_2_63} IDs past 2^63"
        );
    }
}

/// 2026-12-01, and a date in each layout past 2^63.
const NOW_MS: u64 = 1_796_083_200_000;

#[test]
fn ferroid_discord_agrees_both_ways() {
    let discord = Layout::discord();
    assert_eq!(
        ferroid::time::DISCORD_EPOCH.as_millis() as u64,
        DISCORD_EPOCH_MS
    );
    // 2^63 is tick 2^41: 2084-09-06.
    let past = DISCORD_EPOCH_MS + (1 << 41) + 86_400_000;
    agree::<SnowflakeDiscordId>(
        discord,
        DISCORD_EPOCH_MS,
        0b10110_00111,
        [NOW_MS, past],
        None,
    );
}

#[test]
fn ferroid_instagram_agrees_both_ways() {
    // ferroid's layout (41 | 13 | 10) with Instagram's own epoch; see the example above for
    // why not ferroid's `INSTAGRAM_EPOCH`.
    let past = INSTAGRAM_EPOCH_MS + (1 << 40) + 86_400_000;
    agree::<SnowflakeInstagramId>(
        Layout::instagram(),
        INSTAGRAM_EPOCH_MS,
        1341,
        [NOW_MS, past],
        None,
    );
}

#[test]
fn ferroid_mastodon_agrees_both_ways() {
    // Year 6500: past 2^63 for ferroid to mint; flakeid's clocks stop in 2554.
    let far = (1 << 47) + 86_400_000 * 365;
    agree::<SnowflakeMastodonId>(
        Layout::mastodon(),
        0,
        0,
        [NOW_MS, NOW_MS + 3_600_000],
        Some(far),
    );
}

/// A 64-bit layout whose time and sequence take all 64 bits (Mastodon: no node field)
/// still mints, leased too, since no clock reaches a tick that would touch the lease bit;
/// one whose sequence leaves too few bits for the clock's reach is refused with a clear
/// error while it still decodes.
#[test]
fn sixty_four_bit_layouts_mint_or_refuse_clearly() {
    let m = Layout::mastodon();
    let clock = ManualClock::from_unix_ms(NOW_MS);
    let g = Generator::builder(m).clock(clock.clone()).build().unwrap();
    let a = g.next_id().unwrap();
    let lease_ids: Vec<_> = {
        let mut lease = g.lease().unwrap();
        (0..5).map(|_| lease.next_id().unwrap()).collect()
    };
    assert_eq!(m.decompose(a.get()).unwrap().ticks, NOW_MS);
    for (i, id) in lease_ids.iter().enumerate() {
        assert_eq!(m.decompose(id.get()).unwrap().sequence, i as u64 + 1);
    }
    assert!(g.next_id().unwrap() > lease_ids[4]);
    // Near the end of the clock's range: the last tick's sequence runs out, then the
    // clock's end is reported (not the layout's, which is thousands of years on).
    let end_clock = ManualClock::new(u64::MAX);
    let g = Generator::builder(m)
        .clock(end_clock)
        .max_wait(Duration::ZERO)
        .build()
        .unwrap();
    let mut minted = 0u64;
    let err = loop {
        match g.next_id() {
            Ok(_) => minted += 1,
            Err(e) => break e,
        }
    };
    assert_eq!((minted, err), (1 << 16, MintError::ClockRangeEnd));

    let wide: Layout = "time=45,seq=19,node=0".parse().unwrap();
    let err = Generator::builder(wide).build().unwrap_err();
    assert!(
        matches!(err, Error::CannotMint { bits: 64, max: 63 }),
        "{err:?}"
    );
    assert!(err.to_string().contains("decodes and composes"), "{err}");
    assert_eq!(
        wide.decompose(u64::MAX).map(|p| p.sequence),
        Ok((1 << 19) - 1)
    );
}

// ferroid's layout of Sonyflake's widths in Snowflake's order, for the grid tests.
define_snowflake_id!(Grid10Id, u64, reserved: 1, timestamp: 39, machine_id: 16, sequence: 8);

/// ferroid's ticks count from the epoch instant (`floor((t - epoch) / unit)`); flakeid's
/// default counts whole units since 1970 (`floor(t / unit) - floor(epoch / unit)`). With a
/// 10 ms unit and an epoch 3 ms past a unit boundary, `grid=epoch` agrees with ferroid at
/// every instant and `grid=unix` with Sonyflake's rule, which differs from ferroid's for
/// 3 ms of every 10.
#[test]
fn grids_against_ferroid_at_10ms_and_an_unaligned_epoch() {
    let epoch_ms = 1_735_689_600_003; // 2025-01-01T00:00:00.003Z
    let text = format!("time=39,seq=8,node=16,unit=10ms,epoch={epoch_ms}");
    let unix: Layout = text.parse().unwrap();
    let by_epoch: Layout = format!("{text},grid=epoch").parse().unwrap();
    assert_eq!((unix.grid(), by_epoch.grid()), (Grid::Unix, Grid::Epoch));
    let clock = SetClock::<10>::new(epoch_ms);
    let ferroid: BasicSnowflakeGenerator<Grid10Id, _> =
        BasicSnowflakeGenerator::new(77, clock.clone());
    let flake_clock = ManualClock::from_unix_ms(epoch_ms);
    let flake = Generator::builder(by_epoch)
        .node(77)
        .clock(flake_clock.clone())
        .build()
        .unwrap();
    let (mut unix_differs, mut checked) = (0, 0);
    // From tick 1: a flakeid generator never mints at tick 0 (Sonyflake's rule).
    for t in epoch_ms + 10..epoch_ms + 5_010 {
        clock.set(t);
        flake_clock.set(t * 1_000_000);
        let f = ferroid.next_id(|_| panic!("sequence ran out"));
        let ns = i128::from(t) * 1_000_000;
        // Minted here on the epoch's grid: the very ID ferroid minted.
        assert_eq!(flake.next_id().unwrap().get(), f.to_raw(), "t = {t}");
        // Decoded on the epoch's grid: the start of ferroid's tick.
        let p = by_epoch.decompose(f.to_raw()).unwrap();
        assert_eq!(
            by_epoch.unix_ns_of(p.ticks),
            Ok(i128::from(epoch_ms + 10 * f.timestamp()) * 1_000_000)
        );
        assert_eq!(by_epoch.ticks_at(ns), Ok(f.timestamp()));
        // Unix's grid: Sonyflake's rule, exactly.
        let sonyflake_rule = t / 10 - epoch_ms / 10;
        assert_eq!(unix.ticks_at(ns), Ok(sonyflake_rule));
        unix_differs += usize::from(sonyflake_rule != f.timestamp());
        checked += 1;
        // The same ID read on Unix's grid is 3 ms off.
        assert_eq!(
            by_epoch.unix_ns_of(p.ticks).unwrap() - unix.unix_ns_of(p.ticks).unwrap(),
            3_000_000
        );
    }
    assert_eq!(checked, 5_000);
    assert_eq!(unix_differs, 5_000 * 3 / 10, "3 ms of every 10");
    // Both grids decode through the batch decoder as through decompose.
    let ids: Vec<u64> = (0..64)
        .map(|k| by_epoch.compose(k * 7, 3, 77).unwrap())
        .collect();
    for l in [unix, by_epoch] {
        let mut ms = vec![0; ids.len()];
        flakeid::decode::Decoder::new(&l)
            .decode(
                &ids,
                flakeid::decode::Columns {
                    unix_ms: Some(&mut ms),
                    ..Default::default()
                },
            )
            .unwrap();
        for (k, &m) in ms.iter().enumerate() {
            assert_eq!(Ok(m), l.unix_ms_of(k as u64 * 7));
        }
    }
}

/// The message for an unknown layout names every preset and every alias
/// [`Layout::presets`] has (it is made from that list, not kept beside it).
#[test]
fn an_unknown_layout_names_every_preset() {
    let message = "no-such-layout".parse::<Layout>().unwrap_err().to_string();
    for p in Layout::presets() {
        assert!(message.contains(p.name), "{}: {message}", p.name);
        for alias in p.aliases {
            assert!(message.contains(alias), "{alias}: {message}");
        }
    }
}

/// An unknown key of a layout string is named in the message, with the keys there are; a
/// key longer than the error holds is cut at a character boundary, never split.
#[test]
fn an_unknown_layout_key_is_named() {
    let message = "seq=12,node=10,bogus=1"
        .parse::<Layout>()
        .unwrap_err()
        .to_string();
    assert!(message.contains("\"bogus\""), "{message}");
    assert!(message.contains("time, seq, node"), "{message}");
    let long = format!("{}é=1", "k".repeat(23));
    let message = long.parse::<Layout>().unwrap_err().to_string();
    assert!(
        message.contains(&format!("\"{}\" (cut)", "k".repeat(23))),
        "{message}"
    );
}
