//! The preset layouts, their epochs and [`Preset`], the list `flakeid layout --list` prints
//! and the layout string's names resolve through.

use super::names;
use super::{Cuts, Grid, Layout, NS_PER_MS, NodeParts, Order};

/// Twitter's epoch, 2010-11-04T01:42:54.657Z, in Unix milliseconds.
pub const TWEPOCH_MS: u64 = 1_288_834_974_657;
/// Sonyflake v2's default start time, 2025-01-01T00:00:00Z, in Unix milliseconds.
pub const SONYFLAKE_V2_EPOCH_MS: u64 = 1_735_689_600_000;
/// Sonyflake v1's default start time, 2014-09-01T00:00:00Z, in Unix milliseconds.
pub const SONYFLAKE_V1_EPOCH_MS: u64 = 1_409_529_600_000;
/// Discord's epoch, 2015-01-01T00:00:00Z (the first second of 2015), in Unix milliseconds.
pub const DISCORD_EPOCH_MS: u64 = 1_420_070_400_000;
/// Instagram's epoch, 2011-08-24T21:07:01.721Z, in Unix milliseconds: `our_epoch` of the
/// `next_id()` function in "Sharding & IDs at Instagram" (Instagram Engineering, 2012).
pub const INSTAGRAM_EPOCH_MS: u64 = 1_314_220_021_721;

/// A layout with 1 ms ticks on Unix's grid.
const fn ms_layout(time: u8, node: u8, dc: u8, seq: u8, order: Order, epoch_ms: u64) -> Layout {
    Layout {
        time_bits: time,
        sequence_bits: seq,
        node_bits: node,
        datacenter_bits: dc,
        parts: NodeParts::DatacenterWorker,
        order,
        grid: Grid::Unix,
        unit_ns: NS_PER_MS,
        epoch_unix_ns: epoch_ms * NS_PER_MS,
        tick0_ms: 0,
        unit_ms: 0,
        cuts: Cuts::NONE,
    }
    .derived()
}

impl Layout {
    /// Twitter Snowflake: `0 | time 41 | datacenter 5 | worker 5 | sequence 12`, 1 ms, twepoch.
    /// Also named `twitter` in the layout string.
    pub const fn snowflake() -> Layout {
        ms_layout(41, 10, 5, 12, Order::TimeNodeSequence, TWEPOCH_MS)
    }

    /// Sonyflake v2 defaults: `0 | time 39 | sequence 8 | machine 16`, 10 ms, 2025-01-01Z.
    pub const fn sonyflake() -> Layout {
        Layout {
            unit_ns: 10 * NS_PER_MS,
            ..ms_layout(39, 16, 0, 8, Order::TimeSequenceNode, SONYFLAKE_V2_EPOCH_MS)
        }
        .derived()
    }

    /// Sonyflake v1: the v2 bits with v1's start time, 2014-09-01T00:00:00Z.
    pub const fn sonyflake_v1() -> Layout {
        Layout {
            epoch_unix_ns: SONYFLAKE_V1_EPOCH_MS * NS_PER_MS,
            ..Layout::sonyflake()
        }
        .derived()
    }

    /// Discord's snowflakes: `time 42 | worker 5 | process 5 | increment 12`, 1 ms since
    /// 2015-01-01T00:00:00Z, all 64 bits (IDs reach 2^63 in 2084).
    ///
    /// Discord's "internal worker ID" is this layout's datacenter (the high 5 node bits)
    /// and its "internal process ID" the worker (the low 5): `node_of(worker, process)`.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// // The example of Discord's developer documentation (Reference, Snowflakes).
    /// let discord = Layout::discord();
    /// let parts = discord.decompose(175928847299117063)?;
    /// assert_eq!(discord.unix_ms_of(parts.ticks)?, 1_462_015_105_796); // 2016-04-30T11:18:25.796Z
    /// assert_eq!(discord.split_node(parts.node), (1, 0)); // worker 1, process 0
    /// assert_eq!(parts.sequence, 7);
    /// assert!(!discord.is_i64_safe());
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    pub const fn discord() -> Layout {
        Layout {
            parts: NodeParts::WorkerProcess,
            ..ms_layout(42, 10, 5, 12, Order::TimeNodeSequence, DISCORD_EPOCH_MS)
        }
        .derived()
    }

    /// Instagram's IDs: `time 41 | shard 13 | sequence 10`, 1 ms since
    /// 2011-08-24T21:07:01.721Z ([`INSTAGRAM_EPOCH_MS`]), all 64 bits (IDs reach 2^63 in
    /// 2046). The shard is the node field; the sequence is `nextval() % 1024`.
    pub const fn instagram() -> Layout {
        ms_layout(41, 13, 0, 10, Order::TimeNodeSequence, INSTAGRAM_EPOCH_MS)
    }

    /// Mastodon's IDs: `time 48 | low 16`, 1 ms since 1970, all 64 bits (IDs reach 2^63 in
    /// 6429). Mastodon fills the low 16 bits from a hash of the table name, a secret and
    /// the time plus a counter, so only the time is meaningful when decoding; this layout
    /// calls them the sequence, which is what a flakeid generator mints there.
    pub const fn mastodon() -> Layout {
        ms_layout(48, 0, 0, 16, Order::TimeNodeSequence, 0)
    }

    /// IDs JavaScript holds exactly (at most 2^53 - 1, `Number.MAX_SAFE_INTEGER`), for IDs
    /// that travel as JSON numbers: `0 | time 41 | node 5 | sequence 7`, 1 ms, epoch
    /// 2025-01-01T00:00:00Z. 69.7 years (to 2094), 128,000 IDs/s per node, 32 nodes.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// let js = Layout::javascript_safe();
    /// assert_eq!(js.bits(), 53);
    /// assert!(js.max_id() <= (1 << 53) - 1);
    /// assert!(js.is_javascript_safe() && !Layout::snowflake().is_javascript_safe());
    /// ```
    pub const fn javascript_safe() -> Layout {
        ms_layout(41, 5, 0, 7, Order::TimeNodeSequence, SONYFLAKE_V2_EPOCH_MS)
    }

    /// Whether every ID of this layout is at most 2^53 - 1, so a JavaScript number (an
    /// IEEE double) holds it exactly.
    pub const fn is_javascript_safe(&self) -> bool {
        self.bits() <= super::JAVASCRIPT_SAFE_BITS
    }

    /// Every preset, in the order `flakeid layout --list` prints them, with its names and
    /// where it comes from. The layout string accepts each name and alias, ignoring case.
    ///
    /// ```
    /// use flakeid::Layout;
    ///
    /// for preset in Layout::presets() {
    ///     assert_eq!(preset.name.parse::<Layout>()?, preset.layout);
    ///     for alias in preset.aliases {
    ///         assert_eq!(alias.parse::<Layout>()?, preset.layout);
    ///     }
    /// }
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    pub fn presets() -> &'static [Preset] {
        &PRESETS
    }
}

/// A named layout: what [`Layout::presets`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Preset {
    /// The name the layout string and `--layout` accept.
    pub name: &'static str,
    /// Other names accepted for it.
    pub aliases: &'static [&'static str],
    /// The layout.
    pub layout: Layout,
    /// Where it comes from.
    pub source: &'static str,
    /// What decoding its IDs needs to know, if anything.
    pub note: Option<&'static str>,
}

static PRESETS: [Preset; 7] = [
    Preset {
        name: names::SNOWFLAKE.name,
        aliases: names::SNOWFLAKE.aliases,
        layout: Layout::snowflake(),
        source: "Twitter Snowflake, 2010 (twitter-archive/snowflake)",
        note: Some("node = datacenter (5 bits) << 5 | worker (5 bits)"),
    },
    Preset {
        name: names::SONYFLAKE.name,
        aliases: names::SONYFLAKE.aliases,
        layout: Layout::sonyflake(),
        source: "Sonyflake v2 defaults (sony/sonyflake v2)",
        note: Some("node = machine id"),
    },
    Preset {
        name: names::SONYFLAKE_V1.name,
        aliases: names::SONYFLAKE_V1.aliases,
        layout: Layout::sonyflake_v1(),
        source: "Sonyflake v1 defaults (sony/sonyflake v1)",
        note: Some("node = machine id"),
    },
    Preset {
        name: names::DISCORD.name,
        aliases: names::DISCORD.aliases,
        layout: Layout::discord(),
        source: "Discord developer documentation, Reference: Snowflakes",
        note: Some(
            "node = worker (Discord's internal worker id, 5 bits) << 5 | process (its internal process id, 5 bits); sequence = increment",
        ),
    },
    Preset {
        name: names::INSTAGRAM.name,
        aliases: names::INSTAGRAM.aliases,
        layout: Layout::instagram(),
        source: "Instagram Engineering, Sharding & IDs at Instagram (next_id(), our_epoch 1314220021721)",
        note: Some("node = logical shard id; sequence = nextval() % 1024"),
    },
    Preset {
        name: names::MASTODON.name,
        aliases: names::MASTODON.aliases,
        layout: Layout::mastodon(),
        source: "Mastodon, lib/mastodon/snowflake.rb",
        note: Some(
            "the low 16 bits (shown as sequence) are hash-derived in Mastodon: only the time is meaningful",
        ),
    },
    Preset {
        name: names::JS_SAFE.name,
        aliases: names::JS_SAFE.aliases,
        layout: Layout::javascript_safe(),
        source: "flakeid: IDs a JavaScript number holds exactly (at most 2^53 - 1)",
        note: None,
    },
];

/// The preset named `name` (or one of its aliases), ignoring case.
pub(super) fn by_name(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| {
        p.name.eq_ignore_ascii_case(name) || p.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_presets_carry_the_names_the_messages_list_in_their_order() {
        let listed: Vec<(&str, &[&str])> = names::ALL.iter().map(|n| (n.name, n.aliases)).collect();
        let presets: Vec<(&str, &[&str])> = PRESETS.iter().map(|p| (p.name, p.aliases)).collect();
        assert_eq!(presets, listed);
    }
}
