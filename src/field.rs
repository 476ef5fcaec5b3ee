//! The fields of an ID by name ([`Field`]) and the names of a layout's node fields
//! ([`NodeParts`], [`NodeFields`]): a leaf that the errors and the layouts both name.

use core::fmt;

/// A field of an ID, named in range errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// The time part, in ticks since the epoch.
    Ticks,
    /// The per-tick sequence number.
    Sequence,
    /// The node id (the whole node field).
    Node,
    /// Snowflake's datacenter id (the high part of the node field).
    Datacenter,
    /// The worker id: Snowflake's low part of the node field, Discord's high part
    /// ([`NodeParts`](crate::layout::NodeParts)).
    Worker,
    /// Discord's internal process id (the low part of its node field).
    Process,
    /// Sonyflake's machine id: the whole node field, where the node ends the ID.
    Machine,
}

impl Field {
    /// The field's name as used in messages and JSON keys.
    pub const fn name(self) -> &'static str {
        match self {
            Field::Ticks => "ticks",
            Field::Sequence => "sequence",
            Field::Node => "node",
            Field::Datacenter => "datacenter",
            Field::Worker => "worker",
            Field::Process => "process",
            Field::Machine => "machine",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a layout names the two parts of a node field split in two (high, low): a property
/// of the layout, never of which preset it happens to equal.
///
/// ```
/// use flakeid::Layout;
/// use flakeid::error::Field;
/// use flakeid::layout::NodeParts;
///
/// assert_eq!(Layout::snowflake().node_parts(), NodeParts::DatacenterWorker);
/// assert_eq!(Layout::discord().node_parts().fields(), (Field::Worker, Field::Process));
/// // Discord's bits spelled out without `parts=` are Snowflake's names on Discord's bits.
/// let custom: Layout = "time=42,seq=12,node=10,dc=5,epoch=2015-01-01T00:00:00Z".parse()?;
/// assert_ne!(custom, Layout::discord());
/// assert_eq!(custom.node_parts(), NodeParts::DatacenterWorker);
/// # Ok::<(), flakeid::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum NodeParts {
    /// Twitter Snowflake's `datacenter` (high) and `worker` (low); the default, and the
    /// names of a custom layout's `dc=` split.
    #[default]
    DatacenterWorker,
    /// Discord's internal `worker` id (high) and `process` id (low); a layout string says
    /// `parts=worker-process`.
    WorkerProcess,
}

impl NodeParts {
    /// The two parts, (high, low).
    pub const fn fields(self) -> (Field, Field) {
        match self {
            NodeParts::DatacenterWorker => (Field::Datacenter, Field::Worker),
            NodeParts::WorkerProcess => (Field::Worker, Field::Process),
        }
    }

    /// The value of `parts=` in a layout string.
    pub const fn as_str(self) -> &'static str {
        match self {
            NodeParts::DatacenterWorker => "datacenter-worker",
            NodeParts::WorkerProcess => "worker-process",
        }
    }

    /// The parts named by `parts=` in a layout string.
    pub fn from_name(name: &str) -> Option<NodeParts> {
        match name {
            "datacenter-worker" => Some(NodeParts::DatacenterWorker),
            "worker-process" => Some(NodeParts::WorkerProcess),
            _ => None,
        }
    }
}

/// The node fields an ID of a layout decodes to, in the order written: `node` (always),
/// the node's two parts where the layout splits it ([`NodeParts`]), and `machine` where the
/// node ends the ID ([`Order::TimeSequenceNode`](crate::layout::Order::TimeSequenceNode), Sonyflake's name for the whole node).
/// [`Layout::node_from`](crate::Layout::node_from) takes exactly these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeFields {
    parts: Option<(Field, Field)>,
    machine: bool,
}

impl NodeFields {
    /// The node's two parts, (high, low), where the layout splits it.
    pub const fn parts(&self) -> Option<(Field, Field)> {
        self.parts
    }

    /// Whether the layout names its whole node `machine` too (Sonyflake's order).
    pub const fn machine(&self) -> bool {
        self.machine
    }

    /// The fields of a layout (its [`Layout::node_fields`](crate::Layout::node_fields)).
    pub(crate) const fn new(parts: Option<(Field, Field)>, machine: bool) -> NodeFields {
        NodeFields { parts, machine }
    }

    /// The fields in the order decoded output writes them.
    pub fn iter(&self) -> impl Iterator<Item = Field> + '_ {
        let (high, low) = match self.parts {
            Some((h, l)) => (Some(h), Some(l)),
            None => (None, None),
        };
        [
            Some(Field::Node),
            high,
            low,
            self.machine.then_some(Field::Machine),
        ]
        .into_iter()
        .flatten()
    }

    /// Whether `field` is one of them.
    pub fn contains(&self, field: Field) -> bool {
        self.iter().any(|f| f == field)
    }
}

impl fmt::Display for NodeFields {
    /// `node`, `node, datacenter, worker`, `node, machine`...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, field) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(field.name())?;
        }
        Ok(())
    }
}
