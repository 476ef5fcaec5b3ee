//! Decoded IDs as rows of text, for `flakeid decode` and the service's `/v1/decode`,
//! written without `core::fmt` (each piece in place by `line.rs`'s `Line`, the time by
//! its `TimeText`), every row appended to one buffer per batch. Tested against the
//! `format!` oracle it replaced (`tests` below).

use flakeid::Layout;

pub use crate::batch::Row;
use crate::batch::{Batch, Columns, Width};
pub use crate::line::ROW_MAX;
use crate::line::{Line, TICK_TEXT, TimeText};

/// The text form of decoded rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFormat {
    /// Aligned columns, with a header line.
    Table,
    /// One JSON object per line: `id` (a string), `ticks`, `unix_ms`, `time`, `sequence`,
    /// `node`, and `datacenter` and `worker` (Snowflake layouts) or `machine` (Sonyflake).
    Json,
    /// Comma-separated values, with a header line.
    Csv,
}

/// Writes the part of a row in `format` that only the tick decides (ticks, unix_ms and
/// time, with the separators around them) into `l`.
#[inline(always)]
fn tick_text(format: RowFormat, time: &mut TimeText, l: &mut Line<'_>, r: &Row) {
    match format {
        RowFormat::Json => {
            l.bytes(b"\",\"ticks\":");
            l.u64(r.ticks);
            l.bytes(b",\"unix_ms\":");
            l.u64(r.unix_ms);
            l.bytes(b",\"time\":\"");
            time.push(l, r.unix_ms);
            l.bytes(b"\",\"sequence\":");
        }
        RowFormat::Csv => {
            l.byte(b',');
            time.push(l, r.unix_ms);
            l.byte(b',');
            l.u64(r.unix_ms);
            l.byte(b',');
            l.u64(r.ticks);
            l.byte(b',');
        }
        RowFormat::Table => {
            l.byte(b' ');
            let time_len = time.push(l, r.unix_ms);
            l.spaces(25usize.saturating_sub(time_len));
            l.byte(b' ');
            l.right(r.ticks, 14);
            l.byte(b' ');
        }
    }
}

/// Writes rows in one format for one layout.
#[derive(Debug)]
pub struct RowWriter {
    format: RowFormat,
    layout: Layout,
    datacenter: bool,
    /// The node's parts are Discord's `worker` and `process` (else `datacenter`, `worker`).
    discord: bool,
    machine: bool,
    time: TimeText,
    /// The text between the ID and the sequence, which only the tick decides (ticks,
    /// unix_ms and time), and its length, for the tick it was written for: consecutive IDs
    /// share it.
    tick_text: Box<[u8; ROW_MAX]>,
    tick_text_len: usize,
    /// The (ticks, unix_ms) `tick_text` was written for (from the start, (0, 0)'s: a
    /// key always with its text, so no row needs to ask whether there is one).
    tick_of_text: (u64, u64),
    /// The (ticks, unix_ms) of the row written last.
    last_tick: (u64, u64),
    /// The byte after each row.
    separator: u8,
}

impl RowWriter {
    /// A writer of rows of IDs of `layout`, in `format`.
    pub fn new(layout: &Layout, format: RowFormat) -> RowWriter {
        let fields = layout.node_fields();
        let mut w = RowWriter {
            format,
            layout: *layout,
            datacenter: fields.parts().is_some(),
            discord: layout.node_parts() == flakeid::layout::NodeParts::WorkerProcess,
            machine: fields.machine(),
            time: TimeText::new(),
            tick_text: Box::new([0; ROW_MAX]),
            tick_text_len: 0,
            tick_of_text: (0, 0),
            last_tick: (0, 0),
            separator: b'\n',
        };
        w.tick_part(&Row {
            id: 0,
            ticks: 0,
            unix_ms: 0,
            sequence: 0,
            node: 0,
        });
        w
    }

    /// The header line, if the format has one, appended to `out`.
    pub fn header(&self, out: &mut Vec<u8>) {
        match self.format {
            RowFormat::Json => {}
            RowFormat::Table => {
                out.extend_from_slice(
                    b"id                   time                               ticks sequence     node",
                );
                if self.datacenter {
                    out.extend_from_slice(match self.discord {
                        true => b"     worker process",
                        false => b" datacenter worker",
                    });
                }
                out.push(b'\n');
            }
            RowFormat::Csv => {
                out.extend_from_slice(b"id,time,unix_ms,ticks,sequence,node");
                if self.datacenter {
                    out.extend_from_slice(match self.discord {
                        true => b",worker,process",
                        false => b",datacenter,worker",
                    });
                }
                if self.machine {
                    out.extend_from_slice(b",machine");
                }
                out.push(b'\n');
            }
        }
    }

    /// Writes the part of a row that only the tick decides into `tick_text`, to be copied
    /// into the rows after it that share the tick.
    #[cold]
    fn tick_part(&mut self, r: &Row) {
        let mut line = Line {
            buf: &mut self.tick_text[..],
            len: 0,
        };
        tick_text(self.format, &mut self.time, &mut line, r);
        self.tick_text_len = line.len.min(TICK_TEXT);
        self.tick_of_text = (r.ticks, r.unix_ms);
    }

    /// The part of the row that only the tick decides: copied from `tick_text` when it
    /// holds this tick's; else written in place, and kept in `tick_text` once a second row
    /// in a row has the tick (the first row of a run of one tick pays no copy, and a row
    /// whose tick no neighbour shares does not copy what it has just written).
    #[inline(always)]
    fn tick(&mut self, l: &mut Line<'_>, r: &Row) {
        let key = (r.ticks, r.unix_ms);
        if self.tick_of_text != key && self.last_tick == key {
            self.tick_part(r);
        }
        self.last_tick = key;
        if self.tick_of_text == key {
            let block: &[u8; TICK_TEXT] = self.tick_text[..TICK_TEXT]
                .try_into()
                .expect("TICK_TEXT <= ROW_MAX");
            l.block(block, self.tick_text_len);
        } else {
            tick_text(self.format, &mut self.time, l, r);
        }
    }

    /// The byte written after each row: a newline, or `b','` for the rows of a JSON array
    /// (then the caller writes the brackets and drops the last comma).
    pub fn separator(mut self, byte: u8) -> RowWriter {
        self.separator = byte;
        self
    }

    /// Writes every decoded row of `batch` into `out` from `at`, as [`RowWriter::row`]
    /// writes each, and returns where the last ends. `out` is grown once for the batch.
    pub fn rows(&mut self, out: &mut Vec<u8>, at: usize, batch: &Batch) -> usize {
        match batch.columns() {
            Some(Width::Narrow(c)) => self.columns(out, at, &c),
            Some(Width::Wide(c)) => self.columns(out, at, &c),
            None => at,
        }
    }

    /// [`RowWriter::rows`] for one width of the sequence and node columns.
    fn columns<S: Copy + Into<u64>>(
        &mut self,
        out: &mut Vec<u8>,
        mut at: usize,
        c: &Columns<'_, S>,
    ) -> usize {
        let need = at
            .saturating_add(c.len().saturating_mul(ROW_MAX / 2))
            .saturating_add(ROW_MAX);
        if out.len() < need {
            out.resize(need, 0);
        }
        // Loops, not closures: a closure of a row this size may be left out of line.
        match self.format {
            RowFormat::Json => {
                for r in c.rows() {
                    at = self.json(out, at, &r);
                }
            }
            RowFormat::Csv => {
                for r in c.rows() {
                    at = self.csv(out, at, &r);
                }
            }
            RowFormat::Table => {
                for r in c.rows() {
                    at = self.table(out, at, &r);
                }
            }
        }
        at
    }

    /// Writes one row into `out` at `at` and returns where it ends. The row is written in
    /// place over [`ROW_MAX`] bytes from `at` (the row is shorter; the bytes after its end
    /// may be overwritten, and `out` is grown with zeros first if it is shorter than that):
    /// size `out` once, for a batch, to keep the writer from growing it row by row.
    #[inline]
    pub fn row(&mut self, out: &mut Vec<u8>, at: usize, r: &Row) -> usize {
        match self.format {
            RowFormat::Json => self.json(out, at, r),
            RowFormat::Csv => self.csv(out, at, r),
            RowFormat::Table => self.table(out, at, r),
        }
    }

    // JSON and CSV have one shape, spelled out twice on purpose: each separator is a
    // literal, so each copy is of a known size and inlined. A shared table of separators
    // measured about 10% slower for JSON. Each format's row is inlined into the loop over a
    // batch's rows, which picks the format once.

    /// [`RowWriter::row`] in JSON.
    #[inline(always)]
    fn json(&mut self, out: &mut Vec<u8>, at: usize, r: &Row) -> usize {
        let l = &mut Line::at(out, at);
        l.bytes(b"{\"id\":\"");
        l.u64(r.id);
        self.tick(l, r);
        l.u64(r.sequence);
        l.bytes(b",\"node\":");
        l.u64(r.node);
        if self.datacenter {
            let (dc, worker) = self.layout.split_node(r.node);
            if self.discord {
                l.bytes(b",\"worker\":");
                l.u64(dc);
                l.bytes(b",\"process\":");
            } else {
                l.bytes(b",\"datacenter\":");
                l.u64(dc);
                l.bytes(b",\"worker\":");
            }
            l.u64(worker);
        }
        if self.machine {
            l.bytes(b",\"machine\":");
            l.u64(r.node);
        }
        l.bytes(&[b'}', self.separator]);
        at + l.len
    }

    /// [`RowWriter::row`] in CSV.
    #[inline(always)]
    fn csv(&mut self, out: &mut Vec<u8>, at: usize, r: &Row) -> usize {
        let l = &mut Line::at(out, at);
        l.u64(r.id);
        self.tick(l, r);
        l.u64(r.sequence);
        l.byte(b',');
        l.u64(r.node);
        if self.datacenter {
            let (dc, worker) = self.layout.split_node(r.node);
            l.byte(b',');
            l.u64(dc);
            l.byte(b',');
            l.u64(worker);
        }
        if self.machine {
            l.byte(b',');
            l.u64(r.node);
        }
        l.byte(self.separator);
        at + l.len
    }

    /// [`RowWriter::row`] as a table line.
    #[inline(always)]
    fn table(&mut self, out: &mut Vec<u8>, at: usize, r: &Row) -> usize {
        let l = &mut Line::at(out, at);
        l.left(r.id, 20);
        self.tick(l, r);
        l.right(r.sequence, 8);
        l.byte(b' ');
        l.right(r.node, 8);
        if self.datacenter {
            let (dc, worker) = self.layout.split_node(r.node);
            l.byte(b' ');
            l.right(dc, 10);
            l.byte(b' ');
            l.right(worker, if self.discord { 7 } else { 6 });
        }
        l.byte(self.separator);
        at + l.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flakeid::layout::Order;
    use flakeid::rfc3339::Timestamp;

    /// A short buffer (empty, or shorter than a row from `at`) is grown, never a panic,
    /// and the row lands where it was asked for.
    #[test]
    fn a_short_buffer_is_grown_not_a_panic() {
        let layout = Layout::snowflake();
        let r = Row {
            id: 1 << 22,
            ticks: 1,
            unix_ms: 1_288_834_974_658,
            sequence: 0,
            node: 0,
        };
        for format in [RowFormat::Table, RowFormat::Json, RowFormat::Csv] {
            let mut full = vec![0; ROW_MAX];
            let end = RowWriter::new(&layout, format).row(&mut full, 0, &r);
            for (start, at) in [(0usize, 0usize), (3, 3), (10, 5), (0, 7)] {
                let mut out = vec![b'#'; start];
                let got = RowWriter::new(&layout, format).row(&mut out, at, &r);
                assert_eq!(got - at, end, "{format:?} from {at} of {start}");
                assert_eq!(&out[at..got], &full[..end], "{format:?}");
            }
        }
    }

    /// A writer's first row is written in full whatever its tick, (0, 0) (the key its
    /// cache of tick text starts with) included, and so are the rows after it.
    #[test]
    fn the_first_row_is_whole_whatever_its_tick() {
        let layout = Layout::snowflake();
        for format in [RowFormat::Table, RowFormat::Json, RowFormat::Csv] {
            for (ticks, unix_ms) in [(0, 0), (0, layout.epoch_unix_ms()), (5, 7), (0, 0)] {
                let mut w = RowWriter::new(&layout, format);
                for id in [0, 1 << 22, 0] {
                    let r = Row {
                        id,
                        ticks,
                        unix_ms,
                        sequence: id % 7,
                        node: 3,
                    };
                    let mut out = Vec::new();
                    let end = w.row(&mut out, 0, &r);
                    let row = String::from_utf8(out[..end].to_vec()).unwrap();
                    assert_eq!(row, oracle(&layout, format, &r), "{format:?}");
                }
            }
        }
    }

    /// The `format!` rows this writer replaced: the oracle.
    fn oracle(layout: &Layout, format: RowFormat, r: &Row) -> String {
        let time = Timestamp(i128::from(r.unix_ms) * 1_000_000).to_string();
        let (dc, worker) = layout.split_node(r.node);
        let dcw = layout.datacenter_bits() > 0;
        let machine = layout.order() == Order::TimeSequenceNode;
        let (a, b) = layout.node_parts().fields();
        let (a, b) = (a.name(), b.name());
        match format {
            RowFormat::Json => {
                let mut s = format!(
                    "{{\"id\":\"{}\",\"ticks\":{},\"unix_ms\":{},\"time\":\"{time}\",\"sequence\":{},\"node\":{}",
                    r.id, r.ticks, r.unix_ms, r.sequence, r.node
                );
                if dcw {
                    s += &format!(",\"{a}\":{dc},\"{b}\":{worker}");
                }
                if machine {
                    s += &format!(",\"machine\":{}", r.node);
                }
                s + "}\n"
            }
            RowFormat::Csv => {
                let mut s = format!(
                    "{},{time},{},{},{},{}",
                    r.id, r.unix_ms, r.ticks, r.sequence, r.node
                );
                if dcw {
                    s += &format!(",{dc},{worker}");
                }
                if machine {
                    s += &format!(",{}", r.node);
                }
                s + "\n"
            }
            RowFormat::Table => {
                let mut s = format!(
                    "{:<20} {:<25} {:>14} {:>8} {:>8}",
                    r.id, time, r.ticks, r.sequence, r.node
                );
                if dcw {
                    s += &format!(" {dc:>10} {worker:>w$}", w = b.len().max(6));
                }
                s + "\n"
            }
        }
    }

    #[test]
    fn rows_equal_the_format_oracle() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let layouts = [
            Layout::snowflake(),
            Layout::sonyflake(),
            Layout::discord(),
            Layout::mastodon(),
            "time=40,seq=1,node=1,unit=1s".parse().unwrap(),
            // A sequence and a node wider than the table's columns.
            "time=20,seq=30,node=14,unit=1s".parse().unwrap(),
        ];
        let mut checked = 0;
        for l in layouts {
            for format in [RowFormat::Json, RowFormat::Csv, RowFormat::Table] {
                let mut w = RowWriter::new(&l, format);
                let mut ms = 1_796_083_200_000u64;
                let mut ticks = 0;
                for i in 0..20_000u64 {
                    let id = next() & l.max_id();
                    let p = l.decompose(id).unwrap();
                    // Runs of rows in one tick (the cache of the tick's text), and changes.
                    if i % 4 == 0 {
                        ticks = p.ticks;
                    }
                    // Runs in one second, jumps, and the extremes: 0, 9, 10, 99, 100, ...
                    if i % 4 == 0 {
                        ms = match i % 7 {
                            0 => next() % (1 << 50),
                            1 => 10u64.pow((i % 19) as u32),
                            // The time the layout gives the tick, as in decoded rows.
                            2 | 3 => l.unix_ms_of(ticks).unwrap_or(ms),
                            _ => ms + next() % 3,
                        };
                    }
                    let r = Row {
                        id: [id, u64::MAX, 0, 9, 10][(i % 5) as usize],
                        ticks,
                        unix_ms: ms,
                        sequence: p.sequence,
                        node: p.node,
                    };
                    let mut out = vec![b'#'; 3 + ROW_MAX];
                    let end = w.row(&mut out, 3, &r);
                    assert_eq!(&out[..3], b"###", "nothing before the row");
                    let row = String::from_utf8(out[3..end].to_vec()).unwrap();
                    assert_eq!(row, oracle(&l, format, &r), "{l}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 6 * 3 * 20_000);
    }
}
