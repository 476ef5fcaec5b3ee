//! A node id's state file: its text (a version line, then `key value` lines), read and
//! written through the namespace's directory.

use super::*;

const MAGIC: &str = "flakeid-claim v1";

/// What a state file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct State {
    pub(super) node: u64,
    pub(super) reserved_until_ns: u64,
    pub(super) holder: String,
    pub(super) released: bool,
    /// Raised by every claim: a renewal or release must find its own.
    pub(super) generation: u64,
}

impl State {
    fn to_text(&self) -> String {
        // A holder name never spans lines.
        let holder: String = self
            .holder
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        format!(
            "{MAGIC}\nnode {}\nreserved_until_unix_ns {}\nholder {holder}\nstate {}\ngeneration {}\n",
            self.node,
            self.reserved_until_ns,
            if self.released { "released" } else { "held" },
            self.generation
        )
    }

    fn parse(text: &str, path: &Path, expected_node: u64) -> Result<State, ClaimError> {
        let corrupt = |reason: &str| ClaimError::Corrupt {
            path: path.display().to_string(),
            reason: reason.into(),
        };
        let mut lines = text.lines();
        if lines.next() != Some(MAGIC) {
            return Err(corrupt("its first line is not 'flakeid-claim v1'"));
        }
        let (mut node, mut reserved, mut holder, mut released) = (None, None, None, None);
        let mut generation = Some(0);
        for line in lines {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "node" => node = value.parse().ok(),
                "reserved_until_unix_ns" => reserved = value.parse().ok(),
                "holder" => holder = Some(value.to_string()),
                "state" => released = Some(value == "released"),
                "generation" => generation = value.parse().ok(),
                _ => {}
            }
        }
        match (node, reserved, generation) {
            (Some(node), _, _) if node != expected_node => Err(corrupt(&format!(
                "it names node {node}, not {expected_node}"
            ))),
            (Some(node), Some(reserved_until_ns), Some(generation)) => Ok(State {
                node,
                reserved_until_ns,
                holder: holder.unwrap_or_default(),
                released: released.unwrap_or(false),
                generation,
            }),
            _ => Err(corrupt(
                "a node, reserved_until_unix_ns or generation line is missing or not a number",
            )),
        }
    }
}

/// Reads node `node`'s state file in `ns`; `None` if there is none.
pub(super) fn read_state(ns: &Dir, node: u64, trust: &Trust) -> Result<Option<State>, ClaimError> {
    let name = state_name(node);
    let Some(bytes) = ns.read(&name, trust)? else {
        return Ok(None);
    };
    let path = ns.path_of(&name);
    let text = String::from_utf8(bytes).map_err(|_| ClaimError::Corrupt {
        path: path.display().to_string(),
        reason: "it is not UTF-8 text".into(),
    })?;
    State::parse(&text, &path, node).map(Some)
}

pub(super) fn write_state(ns: &Dir, state: &State, trust: &Trust) -> Result<(), ClaimError> {
    ns.replace(&state_name(state.node), state.to_text().as_bytes(), trust)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_text_round_trips_and_bad_text_is_corrupt() {
        let s = State {
            node: 7,
            reserved_until_ns: 1_800_000_000_123_456_789,
            holder: "host:1\nnode 9".into(),
            released: true,
            generation: 12,
        };
        let p = Path::new("x.state");
        let back = State::parse(&s.to_text(), p, 7).unwrap();
        assert_eq!(back.generation, 12);
        assert!(matches!(
            State::parse(&s.to_text(), p, 8),
            Err(ClaimError::Corrupt { .. })
        ));
        assert_eq!(back.node, 7);
        assert_eq!(back.reserved_until_ns, s.reserved_until_ns);
        assert_eq!(back.holder, "host:1?node 9");
        assert!(back.released);
        assert!(matches!(
            State::parse("hello\n", p, 3),
            Err(ClaimError::Corrupt { .. })
        ));
        assert!(matches!(
            State::parse("flakeid-claim v1\nnode 3\n", p, 3),
            Err(ClaimError::Corrupt { .. })
        ));
    }
}
