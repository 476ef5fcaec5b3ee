//! Decoded IDs as rows of text, for `flakeid decode` and the service's `/v1/decode`,
//! written without `core::fmt`: integers by a two-digits-a-step
//! writer, the RFC 3339 time from a cache of the current second (consecutive IDs share
//! it), every row appended to one buffer per batch. Tested against the `format!` oracle
//! it replaced (`tests` below).

use flakeid::rfc3339::{self, Timestamp};
use flakeid::{Encoding, Layout};

pub use crate::batch::Row;
use crate::batch::{Batch, Columns, Width};

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

const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The most one row takes in the batch's text, over-copies included: a row is at most
/// about 310 bytes (nine 20-digit numbers, a timestamp and the keys), and the fixed-size
/// copies below write up to `TICK_TEXT` (128) bytes past where the row then goes on.
pub const ROW_MAX: usize = 512;

/// The room kept for the part of a row that only the tick decides (at most about 80 bytes).
const TICK_TEXT: usize = 128;

/// A row being written straight into the batch's text, from `len`. Numbers go in place,
/// four digits a step, from their known length; padding and the cached tick text are
/// fixed-size copies (no `memset`/`memmove` call per piece), of which only `len` counts.
struct Line<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Line<'_> {
    #[inline]
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    /// The first `len` bytes of `block` (a fixed-size copy of all of it).
    #[inline]
    fn block(&mut self, block: &[u8; TICK_TEXT], len: usize) {
        self.buf[self.len..self.len + TICK_TEXT].copy_from_slice(block);
        self.len += len;
    }

    #[inline]
    fn byte(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// `n` spaces, at most 32 (a fixed-size copy of 32).
    #[inline]
    fn spaces(&mut self, n: usize) {
        self.buf[self.len..self.len + 32].copy_from_slice(&[b' '; 32]);
        self.len += n.min(32);
    }

    /// `v` in decimal, by the core's writer (four digits a step), straight into the row
    /// (which keeps the 20 bytes' slack it may write).
    #[inline(always)]
    fn u64(&mut self, v: u64) {
        if v < 10_000 {
            return self.small(v as u32);
        }
        let at: &mut [u8; Encoding::MAX_LEN] = (&mut self.buf
            [self.len..self.len + Encoding::MAX_LEN])
            .try_into()
            .expect("20 bytes");
        self.len += Encoding::Decimal.write(v, at);
    }

    /// `v` (below 10,000: a sequence, node or part of one) without a branch on its length,
    /// which varies from row to row in real data: its four digits, leading zeros shifted
    /// out, stored as one 4-byte word of which the length counts.
    #[inline(always)]
    fn small(&mut self, v: u32) {
        let len = 1 + u32::from(v >= 10) + u32::from(v >= 100) + u32::from(v >= 1000);
        let (high, low) = ((v / 100) as usize * 2, (v % 100) as usize * 2);
        let digits = u32::from_le_bytes([PAIRS[high], PAIRS[high + 1], PAIRS[low], PAIRS[low + 1]]);
        let word = digits >> (8 * (4 - len));
        self.buf[self.len..self.len + 4].copy_from_slice(&word.to_le_bytes());
        self.len += len as usize;
    }

    /// `v` right-aligned in `width` columns (as `{:>width$}`).
    #[inline]
    fn right(&mut self, v: u64, width: usize) {
        self.spaces(width.saturating_sub(Encoding::decimal_len(v)));
        self.u64(v);
    }

    /// `v` left-aligned in `width` columns (as `{:<width$}`).
    #[inline]
    fn left(&mut self, v: u64, width: usize) {
        let len = Encoding::decimal_len(v);
        self.u64(v);
        self.spaces(width.saturating_sub(len));
    }
}

/// The room for a second's RFC 3339 text before the milliseconds: 19 bytes for a
/// four-digit year, up to about 42 for the widest expanded one.
const SECOND_TEXT: usize = 48;

/// The RFC 3339 text of the last second seen, up to the `.` before the milliseconds.
#[derive(Debug)]
struct SecondCache {
    second: u64,
    prefix: [u8; SECOND_TEXT],
    len: usize,
}

impl SecondCache {
    fn new() -> Self {
        SecondCache {
            second: u64::MAX,
            prefix: [0; SECOND_TEXT],
            len: 0,
        }
    }

    /// Appends `unix_ms` as RFC 3339 (`2026-10-31T12:00:00.000Z`, or the expanded year);
    /// returns its length.
    #[inline]
    fn push(&mut self, out: &mut Line<'_>, unix_ms: u64) -> usize {
        let second = unix_ms / 1000;
        if second != self.second {
            self.fill(second);
        }
        // A fixed-size copy of which the length counts.
        out.buf[out.len..out.len + SECOND_TEXT].copy_from_slice(&self.prefix);
        out.len += self.len;
        let ms = (unix_ms % 1000) as usize;
        let pair = (ms % 100) * 2;
        out.bytes(&[
            b'.',
            b'0' + (ms / 100) as u8,
            PAIRS[pair],
            PAIRS[pair + 1],
            b'Z',
        ]);
        self.len + 5
    }

    #[inline]
    fn fill(&mut self, second: u64) {
        self.second = second;
        if let Some(text) = i64::try_from(second).ok().and_then(rfc3339::date_time) {
            self.prefix[..text.len()].copy_from_slice(&text);
            self.len = text.len();
            return;
        }
        let text = Timestamp(i128::from(second) * 1_000_000_000).to_string();
        // A whole second is written with `.000Z`: keep what comes before it.
        let cut = text.len().saturating_sub(5).min(SECOND_TEXT);
        self.prefix[..cut].copy_from_slice(&text.as_bytes()[..cut]);
        self.len = cut;
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
    time: SecondCache,
    /// The text between the ID and the sequence, which only the tick decides (ticks,
    /// unix_ms and time), and its length, for the tick it was written for: consecutive IDs
    /// share it.
    tick_text: Box<[u8; ROW_MAX]>,
    tick_text_len: usize,
    tick_of_text: Option<(u64, u64)>,
    /// The byte after each row.
    separator: u8,
}

impl RowWriter {
    /// A writer of rows of IDs of `layout`, in `format`.
    pub fn new(layout: &Layout, format: RowFormat) -> RowWriter {
        let fields = crate::NodeFields::of(layout);
        RowWriter {
            format,
            layout: *layout,
            datacenter: fields.datacenter_worker,
            discord: fields.split_names.0 == "worker",
            machine: fields.machine,
            time: SecondCache::new(),
            tick_text: Box::new([0; ROW_MAX]),
            tick_text_len: 0,
            tick_of_text: None,
            separator: b'\n',
        }
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

    /// Writes the part of a row that only the tick decides into `tick_text`.
    #[cold]
    fn tick_part(&mut self, r: &Row) {
        let mut line = Line {
            buf: &mut self.tick_text[..],
            len: 0,
        };
        let l = &mut line;
        match self.format {
            RowFormat::Json => {
                l.bytes(b"\",\"ticks\":");
                l.u64(r.ticks);
                l.bytes(b",\"unix_ms\":");
                l.u64(r.unix_ms);
                l.bytes(b",\"time\":\"");
                self.time.push(l, r.unix_ms);
                l.bytes(b"\",\"sequence\":");
            }
            RowFormat::Csv => {
                l.byte(b',');
                self.time.push(l, r.unix_ms);
                l.byte(b',');
                l.u64(r.unix_ms);
                l.byte(b',');
                l.u64(r.ticks);
                l.byte(b',');
            }
            RowFormat::Table => {
                l.byte(b' ');
                let time_len = self.time.push(l, r.unix_ms);
                l.spaces(25usize.saturating_sub(time_len));
                l.byte(b' ');
                l.right(r.ticks, 14);
                l.byte(b' ');
            }
        }
        self.tick_text_len = l.len.min(TICK_TEXT);
        self.tick_of_text = Some((r.ticks, r.unix_ms));
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
        for row in c.rows() {
            at = self.row(out, at, &row);
        }
        at
    }

    /// Writes one row into `out` at `at` and returns where it ends. The row is written in
    /// place over [`ROW_MAX`] bytes from `at` (the row is shorter; the bytes after its end
    /// may be overwritten, and `out` is grown with zeros first if it is shorter than that):
    /// size `out` once, for a batch, to keep the writer from growing it row by row.
    #[inline]
    pub fn row(&mut self, out: &mut Vec<u8>, at: usize, r: &Row) -> usize {
        if out.len() < at.saturating_add(ROW_MAX) {
            out.resize(at + ROW_MAX, 0);
        }
        if self.tick_of_text != Some((r.ticks, r.unix_ms)) {
            self.tick_part(r);
        }
        let tick_text: &[u8; TICK_TEXT] = self.tick_text[..TICK_TEXT]
            .try_into()
            .expect("TICK_TEXT <= ROW_MAX");
        let mut line = Line {
            buf: &mut out[at..at + ROW_MAX],
            len: 0,
        };
        let l = &mut line;
        // JSON and CSV have one shape, spelled out twice on purpose: each separator is a
        // literal, so each copy is of a known size and inlined. A shared table of
        // separators measured about 10% slower for JSON.
        match self.format {
            RowFormat::Json => {
                l.bytes(b"{\"id\":\"");
                l.u64(r.id);
                l.block(tick_text, self.tick_text_len);
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
            }
            RowFormat::Csv => {
                l.u64(r.id);
                l.block(tick_text, self.tick_text_len);
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
            }
            RowFormat::Table => {
                l.left(r.id, 20);
                l.block(tick_text, self.tick_text_len);
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
            }
        }
        at + l.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flakeid::layout::Order;

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

    /// The `format!` rows this writer replaced: the oracle.
    fn oracle(layout: &Layout, format: RowFormat, r: &Row) -> String {
        let time = Timestamp(i128::from(r.unix_ms) * 1_000_000).to_string();
        let (dc, worker) = layout.split_node(r.node);
        let dcw = layout.datacenter_bits() > 0;
        let machine = layout.order() == Order::TimeSequenceNode;
        let (a, b) = crate::NodeFields::of(layout).split_names;
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
        assert_eq!(checked, 5 * 3 * 20_000);
    }
}
