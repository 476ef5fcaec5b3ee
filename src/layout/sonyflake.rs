//! Sonyflake v2's settings and its rules for them (zero means default, 1..=30 bits,
//! at least 32 time bits), as [`Layout::sonyflake_v2`].

use core::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

use super::{Layout, Order, SONYFLAKE_V2_EPOCH_MS};
use crate::error::Error;

/// Sonyflake v2's settings, with Go's meaning: zero values pick the defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SonyflakeSettings {
    /// Sequence width; 0 means 8, otherwise 1..=30.
    pub bits_sequence: u32,
    /// Machine-id width; 0 means 16, otherwise 1..=30.
    pub bits_machine_id: u32,
    /// Tick unit; zero means 10 ms, otherwise at least 1 ms (need not be whole ms).
    pub time_unit: Duration,
    /// Epoch; `None` means 2025-01-01T00:00:00Z. Must not lie in the future.
    pub start_time: Option<SystemTime>,
}

impl Layout {
    /// A Sonyflake v2 layout under Sonyflake's own rules (0 means default; 1..=30 bits for
    /// sequence and machine; time bits `63 - sequence - machine` at least 32; unit >= 1 ms;
    /// start time not ahead of now).
    pub fn sonyflake_v2(settings: SonyflakeSettings) -> Result<Layout, Error> {
        let seq = match settings.bits_sequence {
            0 => 8,
            b @ 1..=30 => b,
            bits => return Err(Error::InvalidSequenceBits { bits }),
        };
        let machine = match settings.bits_machine_id {
            0 => 16,
            b @ 1..=30 => b,
            bits => return Err(Error::InvalidNodeBits { bits }),
        };
        let time = 63 - seq - machine;
        if time < 32 {
            return Err(Error::TimeBitsTooFew {
                bits: time,
                min: 32,
            });
        }
        let unit = match settings.time_unit {
            Duration::ZERO => Duration::from_millis(10),
            u => u,
        };
        let epoch = match settings.start_time {
            None => UNIX_EPOCH + Duration::from_millis(SONYFLAKE_V2_EPOCH_MS),
            Some(t) => t,
        };
        Layout::builder()
            .time_bits(time)
            .sequence_bits(seq)
            .node_bits(machine)
            .order(Order::TimeSequenceNode)
            .unit(unit)
            .epoch(epoch)
            .build()
    }
}
