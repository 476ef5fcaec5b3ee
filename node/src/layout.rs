//! `Layout`: a bit layout (every preset and custom layout string the Rust crate and the
//! tool take), its facts, `compose` / `decompose` with the decoded field names composing
//! back (the core's rule, `Layout::node_from`), and `idRange`.

use std::sync::OnceLock;

use flakeid::decode::Decoder;
use flakeid::error::Field;
use napi::Either;
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;

use crate::errors::{LAYOUT, core_error, error};
use crate::numbers::{IdValue, MAX_SAFE, Whole, id_of, ms_to_ns, number_or_bigint, whole};

/// A bit layout of 64-bit IDs: how time, sequence and node share the bits, the length of a
/// tick, the epoch.
#[napi(js_name = "NativeLayout")]
pub struct NodeLayout {
    pub(crate) layout: flakeid::Layout,
    decoder: OnceLock<Decoder>,
}

impl NodeLayout {
    pub(crate) fn of(layout: flakeid::Layout) -> NodeLayout {
        NodeLayout {
            layout,
            decoder: OnceLock::new(),
        }
    }

    /// The batch decoder of this layout, made once.
    pub(crate) fn decoder(&self) -> &Decoder {
        self.decoder.get_or_init(|| Decoder::new(&self.layout))
    }
}

/// The fields `compose` takes: the tick (`ticks`, or `unixMs` for the tick it falls in),
/// `sequence`, and the node by any of the names `decompose` gives it.
#[napi(object)]
pub struct ComposeFields {
    pub ticks: Option<Whole>,
    pub unix_ms: Option<f64>,
    pub sequence: Option<Whole>,
    pub node: Option<Whole>,
    pub datacenter: Option<Whole>,
    pub worker: Option<Whole>,
    pub process: Option<Whole>,
    pub machine: Option<Whole>,
}

/// One ID's fields, as `decompose` gives them: a field that fits a JavaScript number
/// exactly is one, else a BigInt.
#[napi(object)]
pub struct Decomposed {
    pub id: BigInt,
    pub ticks: Either<f64, BigInt>,
    pub unix_ms: f64,
    pub sequence: Either<f64, BigInt>,
    pub node: Either<f64, BigInt>,
    pub datacenter: Option<Either<f64, BigInt>>,
    pub worker: Option<Either<f64, BigInt>>,
    pub process: Option<Either<f64, BigInt>>,
    pub machine: Option<Either<f64, BigInt>>,
}

/// The first and last ID of a span of time, both inclusive (SQL's `BETWEEN`).
#[napi(object)]
pub struct IdRange {
    pub first: BigInt,
    pub last: BigInt,
}

/// A layout's facts, at once (for `layout.facts()` and the README's table).
#[napi(object)]
pub struct Facts {
    pub name: Option<String>,
    pub text: String,
    pub time_bits: u32,
    pub sequence_bits: u32,
    pub node_bits: u32,
    pub datacenter_bits: u32,
    pub worker_bits: u32,
    pub unit_ms: f64,
    pub epoch_unix_ms: f64,
    pub end_unix_ms: f64,
    pub lifetime_years: f64,
    pub ids_per_second_per_node: f64,
    pub node_count: f64,
    pub max_node: f64,
    pub max_sequence: f64,
    pub max_id: BigInt,
    pub order: String,
    pub node_fields: Vec<String>,
    pub javascript_safe: bool,
}

#[napi]
impl NodeLayout {
    /// A layout from its string: a preset's name (`snowflake`, `sonyflake`, `discord`,
    /// ...) or `key=value` pairs (`time=41,seq=12,node=10,epoch=2010-11-04T01:42:54.657Z`).
    #[napi(factory, catch_unwind)]
    pub fn parse(spec: String) -> napi::Result<NodeLayout> {
        if spec.trim().is_empty() {
            return Err(error(
                LAYOUT,
                "",
                format!(
                    "the layout string is empty: give a preset's name ({}) or key=value pairs such as time=41,seq=12,node=10",
                    flakeid::layout::PresetNames
                ),
            ));
        }
        spec.parse::<flakeid::Layout>()
            .map(NodeLayout::of)
            .map_err(core_error)
    }

    /// The presets' names.
    #[napi(catch_unwind)]
    pub fn presets() -> Vec<String> {
        flakeid::Layout::presets()
            .iter()
            .map(|p| p.name.to_string())
            .collect()
    }

    /// The layout string that reads back as this layout (a preset's name where it is one).
    #[napi(catch_unwind)]
    pub fn text(&self) -> String {
        self.layout.to_string()
    }

    /// Whether `other` is the same layout.
    #[napi(catch_unwind)]
    pub fn equals(&self, other: &NodeLayout) -> bool {
        self.layout == other.layout
    }

    /// Every fact at once.
    #[napi(catch_unwind)]
    pub fn facts(&self) -> Facts {
        let l = &self.layout;
        let name = flakeid::Layout::presets()
            .iter()
            .find(|p| p.layout == *l)
            .map(|p| p.name.to_string());
        Facts {
            name,
            text: l.to_string(),
            time_bits: l.time_bits(),
            sequence_bits: l.sequence_bits(),
            node_bits: l.node_bits(),
            datacenter_bits: l.datacenter_bits(),
            worker_bits: l.worker_bits(),
            unit_ms: l.unit_ns() as f64 / 1e6,
            epoch_unix_ms: l.epoch_unix_ms() as f64,
            end_unix_ms: l.end_unix_ms() as f64,
            lifetime_years: l.lifetime_years(),
            ids_per_second_per_node: l.ids_per_second_per_node(),
            node_count: l.node_count() as f64,
            max_node: l.max_node() as f64,
            max_sequence: l.max_sequence() as f64,
            max_id: BigInt::from(l.max_id()),
            order: match l.order() {
                flakeid::layout::Order::TimeNodeSequence => "time|node|sequence".into(),
                _ => "time|sequence|node".into(),
            },
            node_fields: l
                .node_fields()
                .iter()
                .map(|f| f.name().to_string())
                .collect(),
            javascript_safe: l.max_id() <= MAX_SAFE,
        }
    }

    /// How long until the layout ends, in milliseconds from `now_ms` (0 once it has).
    #[napi(catch_unwind)]
    pub fn ms_left(&self, now_ms: f64) -> napi::Result<f64> {
        let now = ms_to_ns("now", now_ms)?;
        Ok(self.layout.time_left(now).as_secs_f64() * 1e3)
    }

    /// The ID of the fields given (see [`ComposeFields`]); a node given by several names
    /// must agree, a value too wide for its field is a `RangeError`.
    #[napi(catch_unwind)]
    pub fn compose(&self, fields: ComposeFields) -> napi::Result<BigInt> {
        let l = &self.layout;
        let ticks = match (&fields.ticks, fields.unix_ms) {
            (Some(t), None) => whole("ticks", t, l.max_ticks())?,
            (None, Some(ms)) => l.ticks_at(ms_to_ns("unixMs", ms)?).map_err(core_error)?,
            // Both, as `decompose` gives them: taken where they name the same tick.
            (Some(t), Some(ms)) => {
                let ticks = whole("ticks", t, l.max_ticks())?;
                let at = l.ticks_at(ms_to_ns("unixMs", ms)?).map_err(core_error)?;
                if at != ticks {
                    return Err(error(
                        LAYOUT,
                        "",
                        format!(
                            "ticks {ticks} and unixMs {ms} name different ticks (unixMs falls in tick {at}): give one of them, or both as decompose gives them"
                        ),
                    ));
                }
                ticks
            }
            (None, None) => {
                return Err(error(
                    LAYOUT,
                    "",
                    "give the ID's time: ticks, unixMs or time",
                ));
            }
        };
        let sequence = match &fields.sequence {
            Some(s) => whole("sequence", s, l.max_sequence())?,
            None => 0,
        };
        let mut given = Vec::with_capacity(5);
        for (field, value) in [
            (Field::Node, &fields.node),
            (Field::Datacenter, &fields.datacenter),
            (Field::Worker, &fields.worker),
            (Field::Process, &fields.process),
            (Field::Machine, &fields.machine),
        ] {
            if let Some(v) = value {
                given.push((field, whole(field.name(), v, u64::MAX)?));
            }
        }
        let node = l.node_from(&given).map_err(core_error)?.unwrap_or(0);
        l.compose(ticks, sequence, node)
            .map(BigInt::from)
            .map_err(core_error)
    }

    /// The fields of one ID (a BigInt, a safe whole number or decimal text), named as
    /// `compose` takes them back.
    #[napi(catch_unwind)]
    pub fn decompose(&self, id: IdValue) -> napi::Result<Decomposed> {
        let id = id_of(&id)?;
        let l = &self.layout;
        let p = l.decompose(id).map_err(core_error)?;
        let unix_ms = l.unix_ms_of(p.ticks).map_err(core_error)?;
        let mut d = Decomposed {
            id: BigInt::from(id),
            ticks: number_or_bigint(p.ticks),
            unix_ms: unix_ms as f64,
            sequence: number_or_bigint(p.sequence),
            node: number_or_bigint(p.node),
            datacenter: None,
            worker: None,
            process: None,
            machine: None,
        };
        let fields = l.node_fields();
        if let Some((a, b)) = fields.parts() {
            let (x, y) = l.split_node(p.node);
            for (field, v) in [(a, x), (b, y)] {
                let slot = match field {
                    Field::Datacenter => &mut d.datacenter,
                    Field::Worker => &mut d.worker,
                    _ => &mut d.process,
                };
                *slot = Some(number_or_bigint(v));
            }
        }
        if fields.machine() {
            d.machine = Some(number_or_bigint(p.node));
        }
        Ok(d)
    }

    /// The first and last ID this layout gives to the instants from `from_ms`
    /// (inclusive) to `to_ms` (exclusive), both ends of the pair inclusive.
    #[napi(catch_unwind)]
    pub fn id_range(&self, from_ms: f64, to_ms: f64) -> napi::Result<IdRange> {
        let r = self
            .layout
            .id_range_ns(ms_to_ns("from", from_ms)?, ms_to_ns("to", to_ms)?)
            .map_err(core_error)?;
        Ok(IdRange {
            first: BigInt::from(r.first.get()),
            last: BigInt::from(r.last.get()),
        })
    }
}
