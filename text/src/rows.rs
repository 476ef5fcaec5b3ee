//! Decoded IDs as rows of text, for `flakeid decode` and the service's `/v1/decode`,
//! written without `core::fmt` (each piece in place by `line.rs`'s `Line`, the time by
//! its `TimeText`), every row appended to one buffer per batch. Tested against the
//! `format!` oracle it replaced (`tests` below).

use flakeid::Layout;

pub use crate::batch::Row;
use crate::batch::{Batch, Columns, Width};
use crate::line::{Line, ROW_MAX, TICK_TEXT, TimeText};

/// The writer's buffer of rows: rows are written into it in place, over-copies and all,
/// and appended to the caller's `Vec` from it a buffer at a time (8 rows of the most a
/// row may take, 4 KB: in the L1 cache, so the copy out costs about 1-1.7 ns a row,
/// 1.04-1.10x the rows' time on `benches/rows.rs`; a buffer of 64 rows cost 1.08-1.21x).
/// Writing straight into the `Vec`'s spare capacity instead (with `unsafe`, as
/// `MaybeUninit` bytes) measured 1.3-1.6x: the compiler kept fewer of the row's pieces
/// as plain moves.
const ROWS_BUFFER: usize = 8 * ROW_MAX;

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

/// Writes rows in one format for one layout, appending them to the caller's `Vec<u8>`.
#[derive(Debug)]
pub struct RowWriter {
    rows: Rows,
    /// Where rows are written before they are appended ([`ROWS_BUFFER`]).
    buffer: Box<[u8; ROWS_BUFFER]>,
}

/// What a [`RowWriter`] writes rows with: the format, the layout's fields and the cached
/// text of ticks.
#[derive(Debug)]
struct Rows {
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
        RowWriter {
            rows: Rows::new(layout, format),
            buffer: Box::new([0; ROWS_BUFFER]),
        }
    }

    /// The header line, if the format has one, appended to `out`.
    pub fn header(&self, out: &mut Vec<u8>) {
        self.rows.header(out);
    }

    /// The byte written after each row: a newline, or `b','` for the rows of a JSON array
    /// (then the caller writes the brackets and drops the last comma).
    pub fn separator(mut self, byte: u8) -> RowWriter {
        self.rows.separator = byte;
        self
    }

    /// Appends every decoded row of `batch` to `out`, as [`RowWriter::row`] appends each,
    /// and returns how many bytes that is (`out` grows by exactly that).
    pub fn rows(&mut self, out: &mut Vec<u8>, batch: &Batch) -> usize {
        match batch.columns() {
            Some(Width::Narrow(c)) => self.columns(out, &c),
            Some(Width::Wide(c)) => self.columns(out, &c),
            None => 0,
        }
    }

    /// [`RowWriter::rows`] for one width of the sequence and node columns: the rows
    /// written a buffer at a time, each buffer appended to `out`.
    fn columns<S: Copy + Into<u64>>(&mut self, out: &mut Vec<u8>, c: &Columns<'_, S>) -> usize {
        let before = out.len();
        let mut rows = c.rows();
        // Room for the rows at about what a JSON row of Twitter's layout takes.
        out.reserve(rows.size_hint().0.saturating_mul(224));
        let buffer = &mut self.buffer[..];
        loop {
            let mut at = 0;
            // Loops, not closures: a closure of a row this size may be left out of line.
            let more = match self.rows.format {
                RowFormat::Json => loop {
                    if ROWS_BUFFER - at < ROW_MAX {
                        break true;
                    }
                    let Some(r) = rows.next() else { break false };
                    at = self.rows.json(buffer, at, &r);
                },
                RowFormat::Csv => loop {
                    if ROWS_BUFFER - at < ROW_MAX {
                        break true;
                    }
                    let Some(r) = rows.next() else { break false };
                    at = self.rows.csv(buffer, at, &r);
                },
                RowFormat::Table => loop {
                    if ROWS_BUFFER - at < ROW_MAX {
                        break true;
                    }
                    let Some(r) = rows.next() else { break false };
                    at = self.rows.table(buffer, at, &r);
                },
            };
            out.extend_from_slice(&buffer[..at]);
            if !more {
                return out.len() - before;
            }
        }
    }

    /// Appends one row to `out` and returns its length (`out` grows by exactly that). To
    /// append many, [`RowWriter::rows`] writes them from a batch's columns.
    #[inline]
    pub fn row(&mut self, out: &mut Vec<u8>, r: &Row) -> usize {
        let buffer = &mut self.buffer[..];
        let len = match self.rows.format {
            RowFormat::Json => self.rows.json(buffer, 0, r),
            RowFormat::Csv => self.rows.csv(buffer, 0, r),
            RowFormat::Table => self.rows.table(buffer, 0, r),
        };
        out.extend_from_slice(&buffer[..len]);
        len
    }
}

impl Rows {
    fn new(layout: &Layout, format: RowFormat) -> Rows {
        let fields = layout.node_fields();
        let mut w = Rows {
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

    fn header(&self, out: &mut Vec<u8>) {
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

    // JSON and CSV have one shape, spelled out twice on purpose: each separator is a
    // literal, so each copy is of a known size and inlined. A shared table of separators
    // measured about 10% slower for JSON. Each format's row is inlined into the loop over a
    // batch's rows, which picks the format once.

    /// [`RowWriter::row`] in JSON.
    #[inline(always)]
    fn json(&mut self, out: &mut [u8], at: usize, r: &Row) -> usize {
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
    fn csv(&mut self, out: &mut [u8], at: usize, r: &Row) -> usize {
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
    fn table(&mut self, out: &mut [u8], at: usize, r: &Row) -> usize {
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

    /// A row is appended after whatever `out` holds, whatever its capacity (none, less
    /// than a row, plenty), and `out` grows by exactly the row.
    #[test]
    fn a_row_is_appended_whatever_the_buffer() {
        let layout = Layout::snowflake();
        let r = Row {
            id: 1 << 22,
            ticks: 1,
            unix_ms: 1_288_834_974_658,
            sequence: 0,
            node: 0,
        };
        for format in [RowFormat::Table, RowFormat::Json, RowFormat::Csv] {
            let mut alone = Vec::new();
            let len = RowWriter::new(&layout, format).row(&mut alone, &r);
            assert_eq!(alone.len(), len);
            let text = String::from_utf8(alone.clone()).unwrap();
            assert_eq!(text, oracle(&layout, format, &r));
            for (held, capacity) in [(0usize, 0usize), (3, 3), (10, 12), (7, 4096)] {
                let mut out = Vec::with_capacity(capacity);
                out.resize(held, b'#');
                let got = RowWriter::new(&layout, format).row(&mut out, &r);
                assert_eq!(got, len, "{format:?} after {held} of {capacity}");
                assert_eq!(out.len(), held + len);
                assert!(out[..held].iter().all(|&b| b == b'#'));
                assert_eq!(&out[held..], &alone[..], "{format:?}");
            }
        }
    }

    /// A batch's rows are appended after what `out` holds, and their length is returned:
    /// the rows one by one, end to end, over many of the writer's buffers.
    #[test]
    fn a_batch_is_appended_as_its_rows_end_to_end() {
        let layout = Layout::snowflake();
        let ids: Vec<u64> = (0..5_000u64)
            .map(|i| layout.compose(1_000 + i / 7, i % 4096, i % 1024).unwrap())
            .collect();
        let mut batch = Batch::new(flakeid::decode::Decoder::new(&layout));
        batch.decode_slice(&ids).unwrap();
        for format in [RowFormat::Table, RowFormat::Json, RowFormat::Csv] {
            let mut one_by_one = b"head\n".to_vec();
            let mut w = RowWriter::new(&layout, format);
            for &id in &ids {
                let p = layout.decompose(id).unwrap();
                let row = Row {
                    id,
                    ticks: p.ticks,
                    unix_ms: layout.unix_ms_of(p.ticks).unwrap(),
                    sequence: p.sequence,
                    node: p.node,
                };
                w.row(&mut one_by_one, &row);
            }
            let mut out = b"head\n".to_vec();
            let len = RowWriter::new(&layout, format).rows(&mut out, &batch);
            assert_eq!(out.len(), 5 + len, "{format:?}");
            assert!(out == one_by_one, "{format:?}");
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
                    w.row(&mut out, &r);
                    let row = String::from_utf8(out).unwrap();
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
                    let mut out = b"###".to_vec();
                    w.row(&mut out, &r);
                    assert_eq!(&out[..3], b"###", "nothing before the row");
                    let row = String::from_utf8(out[3..].to_vec()).unwrap();
                    assert_eq!(row, oracle(&l, format, &r), "{l}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 6 * 3 * 20_000);
    }
}
