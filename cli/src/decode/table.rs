//! `decode --column`: one column of a table on standard input decoded, every row written
//! whole with the decoded fields beside it, so a table is decoded without `cut` and a join
//! by row position. CSV (with or without a header) or NDJSON, told by the first
//! character; CSV out as CSV or JSON lines, NDJSON out as NDJSON. A row whose ID does not
//! read is written with its decoded fields empty (`null` in JSON) and reported on
//! standard error (exit 1): no row is dropped, no field guessed.

use std::io::{self, Read, Write};
use std::process::ExitCode;

use flakeid::Layout;
use flakeid::decode::Decoder;
use flakeid::rfc3339::Timestamp;
use flakeid_text::rows::{Row, RowFormat};

use super::line::{BadLine, DECODE_BATCH, parse_id};
use crate::args::InputEncoding;
use crate::out::{CliError, CliResult, quiet_on_broken_pipe, warn};

/// Which column: its header name, or its number from 1.
enum Which {
    Name(String),
    Number(usize),
}

impl Which {
    fn of(text: &str) -> Which {
        match text.trim().parse::<usize>() {
            Ok(n) if n > 0 => Which::Number(n),
            _ => Which::Name(text.trim().to_string()),
        }
    }
}

/// The decoded fields' names, in the order written: `time`, `unix_ms`, `ticks`,
/// `sequence`, `node`, then the node's parts. Prefixed with the column's name (`id_time`)
/// when the input has a column of the same name already.
fn field_names(decoder: &Decoder, column: &str, taken: &[String]) -> Vec<String> {
    let mut names = vec!["time", "unix_ms", "ticks", "sequence"];
    names.extend(decoder.layout().node_fields().iter().map(|f| f.name()));
    let clash = names.iter().any(|n| taken.iter().any(|t| t == n));
    names
        .into_iter()
        .map(|n| match clash {
            true => format!("{column}_{n}"),
            false => n.to_string(),
        })
        .collect()
}

/// One row's decoded values, in `field_names` order: the time as RFC 3339 text, the rest
/// as numbers.
fn values(layout: &Layout, r: Row) -> Vec<serde_json::Value> {
    let f = layout.node_fields();
    let mut v: Vec<serde_json::Value> = vec![
        Timestamp(i128::from(r.unix_ms) * 1_000_000)
            .to_string()
            .into(),
        r.unix_ms.into(),
        r.ticks.into(),
        r.sequence.into(),
        r.node.into(),
    ];
    if f.parts().is_some() {
        let (a, b) = layout.split_node(r.node);
        v.extend([a.into(), b.into()]);
    }
    if f.machine() {
        v.push(r.node.into());
    }
    v
}

/// A value as a CSV field: text as it is, a number in decimal.
fn field(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A row's decoded values, or why it had no ID.
type Decoded = Result<Vec<serde_json::Value>, String>;

/// A batch of rows waiting for the decoder: each row's ID, or why it has none.
struct Batch<R> {
    rows: Vec<(R, Result<u64, String>)>,
    /// The good rows' IDs and, once decoded, their columns.
    good: flakeid_text::batch::Batch,
}

impl<R> Batch<R> {
    fn new(decoder: &Decoder) -> Batch<R> {
        Batch {
            rows: Vec::with_capacity(DECODE_BATCH),
            good: flakeid_text::batch::Batch::new(decoder.clone()),
        }
    }

    /// Decodes the batch's good IDs; then each row with its decoded values, or why it had
    /// no ID.
    fn decode(&mut self, decoder: &Decoder) -> CliResult<Vec<(R, Decoded)>> {
        self.good.clear();
        for id in self.rows.iter().filter_map(|(_, id)| id.as_ref().ok()) {
            self.good.push(*id);
        }
        self.good.decode().map_err(|e| CliError::new(None, e))?;
        let mut k = 0;
        let mut out = Vec::with_capacity(self.rows.len());
        for (row, id) in self.rows.drain(..) {
            let decoded = id.and_then(|_| {
                k += 1;
                let row = self
                    .good
                    .row(k - 1)
                    .ok_or_else(|| "no decoded row".to_string())?;
                Ok(values(decoder.layout(), row))
            });
            out.push((row, decoded));
        }
        Ok(out)
    }
}

/// The ID of a field, or why not.
fn id_of(decoder: &Decoder, encoding: InputEncoding, field: &str) -> Result<u64, String> {
    parse_id(decoder.layout(), encoding, field.trim())
        .map_err(|BadLine { error, hint }| format!("{field:?}: {error}{hint}"))
}

pub(super) fn run(
    column: &str,
    decoder: Decoder,
    encoding: InputEncoding,
    format: Option<RowFormat>,
    out: &mut impl Write,
) -> CliResult<ExitCode> {
    let mut input = Vec::new();
    let mut stdin = io::stdin().lock();
    // The first bytes tell CSV from NDJSON; the rest is streamed.
    let mut first = [0u8; 1];
    loop {
        match stdin.read(&mut first) {
            Ok(0) => return Ok(ExitCode::SUCCESS),
            Ok(_) if first[0].is_ascii_whitespace() => input.push(first[0]),
            Ok(_) => {
                input.push(first[0]);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CliError::new(None, format!("reading standard input: {e}"))),
        }
    }
    let reader = io::Cursor::new(input).chain(stdin);
    let which = Which::of(column);
    let bad = if first[0] == b'{' {
        if matches!(format, Some(RowFormat::Csv | RowFormat::Table)) {
            return Err(CliError::new(
                Some("--format"),
                "NDJSON in is NDJSON out: give --format json (or none)",
            ));
        }
        ndjson(reader, &which, column, &decoder, encoding, out)?
    } else {
        let json = match format {
            None | Some(RowFormat::Csv) => false,
            Some(RowFormat::Json) => true,
            Some(RowFormat::Table) => {
                return Err(CliError::new(
                    Some("--format"),
                    "a table with its columns passed through is CSV or JSON: give --format csv or json",
                ));
            }
        };
        csv_table(reader, &which, column, &decoder, encoding, json, out)?
    };
    out.flush().or_else(quiet_on_broken_pipe)?;
    Ok(if bad > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Reports a row without an ID (after the rows before it are out).
fn report(out: &mut impl Write, what: &str, number: u64, why: &str) -> CliResult {
    out.flush().or_else(quiet_on_broken_pipe)?;
    warn(format_args!(
        "{what} {number}: {why}; written with its decoded fields empty"
    ));
    Ok(())
}

/// Where CSV rows go: a CSV writer, or JSON lines.
enum Sink<'a, W: Write> {
    Csv(Box<csv::Writer<&'a mut W>>),
    Json(&'a mut W),
}

impl<W: Write> Sink<'_, W> {
    /// Everything written so far, out (before a report on standard error).
    fn flush(&mut self) -> CliResult {
        match self {
            Sink::Csv(w) => w.flush().or_else(quiet_on_broken_pipe),
            Sink::Json(w) => w.flush().or_else(quiet_on_broken_pipe),
        }
    }
}

fn csv_table(
    reader: impl Read,
    which: &Which,
    column: &str,
    decoder: &Decoder,
    encoding: InputEncoding,
    json: bool,
    out: &mut impl Write,
) -> CliResult<u64> {
    let mut records = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(reader);
    let mut first = csv::StringRecord::new();
    let read = |r: &mut csv::Reader<_>, rec: &mut csv::StringRecord, n: u64| {
        r.read_record(rec)
            .map_err(|e| CliError::new(None, format!("reading the CSV at record {n}: {e}")))
    };
    if !read(&mut records, &mut first, 1)? {
        return Ok(0);
    }
    // The column, and whether the first record is a header.
    let (index, header) = match which {
        Which::Name(name) => match first.iter().position(|f| f.trim() == name) {
            Some(i) => (i, true),
            None => {
                return Err(CliError::new(
                    Some("--column"),
                    format!(
                        "the header has no column {name:?}: it has {}; give one of those, or the column's number",
                        first
                            .iter()
                            .map(|f| format!("{f:?}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        },
        Which::Number(n) => {
            let i = n - 1;
            if i >= first.len() {
                return Err(CliError::new(
                    Some("--column"),
                    format!(
                        "the first record has {} column{}: give a number from 1 to {}, or a header's name",
                        first.len(),
                        if first.len() == 1 { "" } else { "s" },
                        first.len()
                    ),
                ));
            }
            let is_id = first
                .get(i)
                .is_some_and(|f| id_of(decoder, encoding, f).is_ok());
            (i, !is_id)
        }
    };
    let names: Vec<String> = match header {
        true => first.iter().map(str::to_string).collect(),
        false => (1..=first.len()).map(|i| format!("column{i}")).collect(),
    };
    let column_name = names
        .get(index)
        .cloned()
        .unwrap_or_else(|| column.to_string());
    let fields = field_names(decoder, &column_name, &names);
    let mut sink = match json {
        true => Sink::Json(out),
        false => Sink::Csv(Box::new(
            csv::WriterBuilder::new().flexible(true).from_writer(out),
        )),
    };
    if let (true, Sink::Csv(w)) = (header, &mut sink) {
        w.write_record(names.iter().chain(&fields))
            .map_err(|e| CliError::new(None, e))?;
    }
    let mut batch: Batch<(u64, csv::StringRecord)> = Batch::new(decoder);
    let mut bad = 0u64;
    let mut number = 1u64;
    let mut pending = (!header).then_some(first);
    loop {
        let record = match pending.take() {
            Some(r) => r,
            None => {
                number += 1;
                let mut r = csv::StringRecord::new();
                if !read(&mut records, &mut r, number)? {
                    break;
                }
                r
            }
        };
        let id = match record.get(index) {
            Some(field) => id_of(decoder, encoding, field),
            None => Err(format!(
                "no field {} (the row has {})",
                index + 1,
                record.len()
            )),
        };
        batch.rows.push(((number, record), id));
        if batch.rows.len() == DECODE_BATCH {
            bad += write_csv_rows(&mut batch, decoder, &names, &fields, &mut sink)?;
        }
    }
    bad += write_csv_rows(&mut batch, decoder, &names, &fields, &mut sink)?;
    sink.flush()?;
    Ok(bad)
}

/// Writes a batch of CSV rows, each whole with its decoded values; how many had no ID.
fn write_csv_rows<W: Write>(
    batch: &mut Batch<(u64, csv::StringRecord)>,
    decoder: &Decoder,
    names: &[String],
    fields: &[String],
    sink: &mut Sink<'_, W>,
) -> CliResult<u64> {
    let mut bad = 0;
    for ((number, record), decoded) in batch.decode(decoder)? {
        let values = match decoded {
            Ok(values) => values,
            Err(why) => {
                bad += 1;
                sink.flush()?;
                warn(format_args!(
                    "record {number}: {why}; written with its decoded fields empty"
                ));
                vec![serde_json::Value::Null; fields.len()]
            }
        };
        match sink {
            Sink::Json(w) => {
                let mut object = serde_json::Map::new();
                for (name, value) in names.iter().zip(record.iter()) {
                    object.insert(name.clone(), value.into());
                }
                for (name, value) in fields.iter().zip(values) {
                    object.insert(name.clone(), value);
                }
                let mut line = serde_json::to_vec(&object).map_err(|e| CliError::new(None, e))?;
                line.push(b'\n');
                w.write_all(&line).or_else(quiet_on_broken_pipe)?;
            }
            Sink::Csv(w) => {
                let values = values.iter().map(|v| match v {
                    serde_json::Value::Null => String::new(),
                    v => field(v),
                });
                w.write_record(record.iter().map(str::to_string).chain(values))
                    .map_err(|e| CliError::new(None, e))?
            }
        }
    }
    Ok(bad)
}

fn ndjson(
    reader: impl Read,
    which: &Which,
    column: &str,
    decoder: &Decoder,
    encoding: InputEncoding,
    out: &mut impl Write,
) -> CliResult<u64> {
    let key = match which {
        Which::Name(n) => n.clone(),
        Which::Number(_) => {
            return Err(CliError::new(
                Some("--column"),
                "NDJSON objects have keys, not numbered columns: give the key's name",
            ));
        }
    };
    let mut batch: Batch<JsonRow> = Batch::new(decoder);
    let mut bad = 0u64;
    let mut fields: Option<Vec<String>> = None;
    let lines = io::BufReader::new(reader);
    for (i, line) in io::BufRead::lines(lines).enumerate() {
        let number = i as u64 + 1;
        let line = line.map_err(|e| CliError::new(None, format!("reading line {number}: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let (object, id) =
            match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&line) {
                Ok(o) => {
                    let id = match o.get(&key) {
                        Some(serde_json::Value::String(s)) => id_of(decoder, encoding, s),
                        Some(serde_json::Value::Number(n)) => {
                            id_of(decoder, encoding, &n.to_string())
                        }
                        Some(_) => Err(format!("{key:?} is neither a string nor a number")),
                        None => Err(format!("no key {key:?}")),
                    };
                    (Ok(o), id)
                }
                Err(e) => (Err(line.clone()), Err(format!("not a JSON object: {e}"))),
            };
        if fields.is_none() {
            let taken: Vec<String> = object
                .as_ref()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            fields = Some(field_names(decoder, column, &taken));
        }
        batch.rows.push(((number, object), id));
        if batch.rows.len() == DECODE_BATCH {
            bad += write_json_rows(
                &mut batch,
                decoder,
                fields.as_deref().unwrap_or_default(),
                out,
            )?;
        }
    }
    bad += write_json_rows(
        &mut batch,
        decoder,
        fields.as_deref().unwrap_or_default(),
        out,
    )?;
    Ok(bad)
}

type JsonRow = (
    u64,
    Result<serde_json::Map<String, serde_json::Value>, String>,
);

/// Writes a batch of NDJSON rows, each object with its decoded fields added (a line that
/// is no object as it came); how many had no ID.
fn write_json_rows(
    batch: &mut Batch<JsonRow>,
    decoder: &Decoder,
    fields: &[String],
    out: &mut impl Write,
) -> CliResult<u64> {
    let mut bad = 0;
    let mut text = Vec::new();
    for ((number, object), decoded) in batch.decode(decoder)? {
        if let Err(why) = &decoded {
            bad += 1;
            out.write_all(&text).or_else(quiet_on_broken_pipe)?;
            text.clear();
            report(out, "line", number, why)?;
        }
        match object {
            Ok(mut o) => {
                if let Ok(values) = decoded {
                    for (name, value) in fields.iter().zip(values) {
                        o.insert(name.clone(), value);
                    }
                }
                serde_json::to_writer(&mut text, &o).map_err(|e| CliError::new(None, e))?;
            }
            Err(line) => text.extend_from_slice(line.as_bytes()),
        }
        text.push(b'\n');
    }
    out.write_all(&text).or_else(quiet_on_broken_pipe)?;
    Ok(bad)
}
