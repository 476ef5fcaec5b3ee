//! The names of a layout's node fields, one rule for both ways: the fields an ID decodes to
//! beside its ticks and sequence ([`Layout::node_fields`]) are the fields a node id is
//! composed from ([`Layout::node_from`]), in the library, the tool and Python.

use super::{Layout, Order, check};
use crate::error::Error;
use crate::field::{Field, NodeFields, NodeParts};

impl Layout {
    /// How this layout names its node's two parts (meaningful where
    /// [`Layout::datacenter_bits`] is not 0).
    pub const fn node_parts(&self) -> NodeParts {
        self.parts
    }

    /// The node fields this layout's IDs decode to, which [`Layout::node_from`] takes back.
    pub const fn node_fields(&self) -> NodeFields {
        NodeFields::new(
            match self.datacenter_bits {
                0 => None,
                _ => Some(self.parts.fields()),
            },
            matches!(self.order, Order::TimeSequenceNode),
        )
    }

    /// The node id that named node fields give, as a decoded ID shows them
    /// ([`Layout::node_fields`]): `node` or `machine` whole, or the node's two parts
    /// together; any of them together where they agree, so a decoded ID's fields compose
    /// back as they are. `None` where no field is given.
    ///
    /// Refused: a field this layout does not have ([`Error::NotANodeField`]), one part
    /// without the other ([`Error::NodePartMissing`]), fields that name different node ids
    /// ([`Error::NodeFieldsDisagree`]), a value too large for its field
    /// ([`Error::OutOfRange`]).
    ///
    /// ```
    /// use flakeid::Layout;
    /// use flakeid::error::{Error, Field};
    ///
    /// let snowflake = Layout::snowflake();
    /// let node = snowflake.node_from(&[(Field::Datacenter, 1), (Field::Worker, 7)])?;
    /// assert_eq!(node, Some(39));
    /// // What decode prints composes back: node, datacenter and worker, agreeing.
    /// let all = [(Field::Node, 39), (Field::Datacenter, 1), (Field::Worker, 7)];
    /// assert_eq!(snowflake.node_from(&all)?, Some(39));
    /// assert_eq!(Layout::sonyflake().node_from(&[(Field::Machine, 513)])?, Some(513));
    /// assert!(matches!(
    ///     snowflake.node_from(&[(Field::Machine, 1)]),
    ///     Err(Error::NotANodeField { field: Field::Machine, .. })
    /// ));
    /// # Ok::<(), flakeid::Error>(())
    /// ```
    pub fn node_from(&self, given: &[(Field, u64)]) -> Result<Option<u64>, Error> {
        let fields = self.node_fields();
        let mut node: Option<(Field, u64)> = None;
        let mut agree = |field: Field, value: u64| match node {
            Some((first, v)) if v != value => Err(Error::NodeFieldsDisagree {
                first,
                second: field,
            }),
            Some(_) => Ok(()),
            None => {
                node = Some((field, value));
                Ok(())
            }
        };
        let (mut high, mut low) = (None, None);
        for &(field, value) in given {
            if !fields.contains(field) {
                return Err(Error::NotANodeField { field, fields });
            }
            match fields.parts() {
                Some((h, _)) if field == h => high = Some(value),
                Some((_, l)) if field == l => low = Some(value),
                _ => agree(field, check(field, value, self.max_node())?)?,
            }
        }
        if let Some((h, l)) = fields.parts() {
            match (high, low) {
                // Each part range-checked, and named as the layout names it.
                (Some(hv), Some(lv)) => agree(h, self.node_of(hv, lv)?)?,
                (Some(_), None) => {
                    return Err(Error::NodePartMissing {
                        given: h,
                        missing: l,
                    });
                }
                (None, Some(_)) => {
                    return Err(Error::NodePartMissing {
                        given: l,
                        missing: h,
                    });
                }
                (None, None) => {}
            }
        }
        Ok(node.map(|(_, v)| v))
    }
}
