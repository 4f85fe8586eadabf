//! PostgreSQL over a blocking socket: the frontend/backend protocol spoken with the `postgres-protocol` crate's
//! message codecs on a std TCP or Unix socket, no async runtime. The `postgres` crate's blocking API runs a tokio
//! runtime underneath, and about 13 µs of client user CPU per point query went to epoll and task polling; here a
//! prepared execution is one write (Bind, Execute, Sync) and the reads its reply needs. `postgres::Config` still
//! parses the DSN.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

use bytes::{BufMut, BytesMut};
use postgres::config::Host;
use postgres::fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::{ErrorResponseBody, Message};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;

use crate::engine::sqltext::{dollar_placeholders, inline};
use crate::engine::{Connection, Value};

const INT2: u32 = 21;
const INT4: u32 = 23;
const INT8: u32 = 20;
const FLOAT8: u32 = 701;

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s) => s.write_all(buf),
        }
    }
}

struct Prepared {
    name: String,
    /// Parameter type oids, as the server inferred them.
    params: Vec<u32>,
}

pub struct PgWire {
    stream: Stream,
    out: BytesMut,
    input: BytesMut,
    chunk: Box<[u8]>,
    prepared: bool,
    sql: Vec<String>,
    stmts: Vec<Prepared>,
}

fn io(e: std::io::Error) -> String {
    format!("connection: {e}")
}

/// "ERROR: message (code)", as the server said it.
fn server_error(body: &ErrorResponseBody) -> String {
    let (mut severity, mut message, mut code) = (String::new(), String::new(), String::new());
    let mut fields = body.fields();
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'S' => severity = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    format!("{severity}: {message} ({code})")
}

/// How one parameter is sent: binary for the integer and float types, text otherwise (the server parses it).
#[inline]
fn format_of(v: &Value, oid: u32) -> i16 {
    match (v, oid) {
        (Value::Int(_), INT2 | INT4 | INT8 | FLOAT8) => 1,
        _ => 0,
    }
}

#[inline]
fn write_param(v: &Value, oid: u32, buf: &mut BytesMut) {
    match (v, oid) {
        (Value::Int(x), INT2) if i16::try_from(*x).is_ok() => buf.put_i16(*x as i16),
        (Value::Int(x), INT4) if i32::try_from(*x).is_ok() => buf.put_i32(*x as i32),
        (Value::Int(x), INT8) => buf.put_i64(*x),
        (Value::Int(x), FLOAT8) => buf.put_f64(*x as f64),
        // Out of range for the column's type: the server reports it, as it would for any client.
        (Value::Int(x), INT2 | INT4) => buf.put_slice(x.to_string().as_bytes()),
        (Value::Int(x), _) => buf.put_slice(itoa_buf(*x).as_bytes()),
        (Value::Text(s), _) => buf.put_slice(s.as_bytes()),
    }
}

/// An integer's decimal text without a heap allocation.
struct Itoa {
    bytes: [u8; 20],
    start: usize,
}

impl Itoa {
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

fn itoa_buf(x: i64) -> Itoa {
    let mut bytes = [0u8; 20];
    let mut i = bytes.len();
    let neg = x < 0;
    let mut n = x.unsigned_abs();
    loop {
        i -= 1;
        bytes[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if neg {
        i -= 1;
        bytes[i] = b'-';
    }
    Itoa { bytes, start: i }
}

pub fn config(dsn: &str, password: Option<&str>) -> Result<postgres::Config, String> {
    let mut cfg: postgres::Config = dsn.parse().map_err(|e| format!("bad PostgreSQL DSN: {e}"))?;
    if let Some(p) = password {
        cfg.password(p);
    }
    Ok(cfg)
}

impl PgWire {
    pub fn open(cfg: &postgres::Config, label: &str, prepared: bool) -> Result<Self, String> {
        let fail = |e: String| format!("cannot connect to {label}: {e}");
        let port = cfg.get_ports().first().copied().unwrap_or(5432);
        let stream = match cfg.get_hosts().first() {
            Some(Host::Unix(dir)) => {
                let path = dir.join(format!(".s.PGSQL.{port}"));
                Stream::Unix(UnixStream::connect(&path).map_err(|e| fail(format!("{}: {e}", path.display())))?)
            }
            Some(Host::Tcp(host)) => {
                let s = TcpStream::connect((host.as_str(), port)).map_err(|e| fail(e.to_string()))?;
                s.set_nodelay(true).map_err(|e| fail(e.to_string()))?;
                Stream::Tcp(s)
            }
            None => return Err(fail("the DSN names no host".into())),
        };
        let mut c = PgWire {
            stream,
            out: BytesMut::with_capacity(4096),
            input: BytesMut::with_capacity(16384),
            chunk: vec![0u8; 16384].into_boxed_slice(),
            prepared,
            sql: Vec::new(),
            stmts: Vec::new(),
        };
        c.startup(cfg).map_err(fail)?;
        Ok(c)
    }

    fn flush(&mut self) -> Result<(), String> {
        self.stream.write_all(&self.out).map_err(io)?;
        self.out.clear();
        Ok(())
    }

    fn recv(&mut self) -> Result<Message, String> {
        loop {
            if let Some(m) = Message::parse(&mut self.input).map_err(io)? {
                return Ok(m);
            }
            let n = self.stream.read(&mut self.chunk).map_err(io)?;
            if n == 0 {
                return Err("connection: the server closed the connection".into());
            }
            self.input.extend_from_slice(&self.chunk[..n]);
        }
    }

    fn startup(&mut self, cfg: &postgres::Config) -> Result<(), String> {
        let user = cfg.get_user().ok_or("the DSN names no user")?.to_string();
        let db = cfg.get_dbname().unwrap_or(&user).to_string();
        let password = cfg.get_password().map(|p| p.to_vec());
        let params = [("user", user.as_str()), ("database", db.as_str()), ("client_encoding", "UTF8")];
        frontend::startup_message(params.iter().copied(), &mut self.out).map_err(io)?;
        self.flush()?;
        let need_password = || password.clone().ok_or_else(|| "the server asks for a password".to_string());
        let mut scram: Option<sasl::ScramSha256> = None;
        loop {
            match self.recv()? {
                Message::AuthenticationOk
                | Message::ParameterStatus(_)
                | Message::BackendKeyData(_)
                | Message::NoticeResponse(_) => {}
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(&need_password()?, &mut self.out).map_err(io)?;
                    self.flush()?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let hash = md5_hash(user.as_bytes(), &need_password()?, body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.out).map_err(io)?;
                    self.flush()?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut mechanisms = body.mechanisms();
                    let mut found = false;
                    while let Some(m) = mechanisms.next().map_err(io)? {
                        found |= m == sasl::SCRAM_SHA_256;
                    }
                    if !found {
                        return Err("the server offers no SASL mechanism this driver speaks".into());
                    }
                    let s = sasl::ScramSha256::new(&need_password()?, sasl::ChannelBinding::unsupported());
                    frontend::sasl_initial_response(sasl::SCRAM_SHA_256, s.message(), &mut self.out).map_err(io)?;
                    self.flush()?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram.as_mut().ok_or("SASL continue before SASL start")?;
                    s.update(body.data()).map_err(|e| format!("SCRAM: {e}"))?;
                    frontend::sasl_response(s.message(), &mut self.out).map_err(io)?;
                    self.flush()?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let s = scram.as_mut().ok_or("SASL final before SASL start")?;
                    s.finish(body.data()).map_err(|e| format!("SCRAM: {e}"))?;
                }
                Message::ErrorResponse(body) => return Err(server_error(&body)),
                Message::ReadyForQuery(_) => return Ok(()),
                _ => return Err("unexpected message during startup".into()),
            }
        }
    }

    /// Reads up to ReadyForQuery: the rows seen, or the first error the server sent.
    fn finish(&mut self) -> Result<u64, String> {
        let mut rows = 0u64;
        let mut error = None;
        loop {
            match self.recv()? {
                Message::DataRow(_) => rows += 1,
                Message::ErrorResponse(body) if error.is_none() => error = Some(server_error(&body)),
                Message::ReadyForQuery(_) => {
                    return match error {
                        Some(e) => Err(e),
                        None => Ok(rows),
                    }
                }
                _ => {}
            }
        }
    }

    pub fn version(&mut self) -> Result<String, String> {
        frontend::query("SHOW server_version", &mut self.out).map_err(io)?;
        self.flush()?;
        let mut version = None;
        loop {
            match self.recv()? {
                Message::DataRow(row) => {
                    let mut ranges = row.ranges();
                    if let Ok(Some(Some(r))) = ranges.next() {
                        version = Some(String::from_utf8_lossy(&row.buffer()[r]).into_owned());
                    }
                }
                Message::ErrorResponse(body) => return Err(server_error(&body)),
                Message::ReadyForQuery(_) => return version.ok_or_else(|| "SHOW server_version: no row".into()),
                _ => {}
            }
        }
    }
}

impl PgWire {
    /// Bind, Execute (at most `max_rows` rows; 0: all) and Sync of prepared statement `id`, flushed.
    fn send_bound(&mut self, id: usize, values: &[Value], max_rows: i32) -> Result<(), String> {
        let stmt = &self.stmts[id];
        let oids = &stmt.params;
        let formats = values.iter().zip(oids).map(|(v, &o)| format_of(v, o));
        let result = frontend::bind(
            "",
            &stmt.name,
            formats,
            values.iter().zip(oids),
            |(v, &o), buf| {
                write_param(v, o, buf);
                Ok(IsNull::No)
            },
            // Results in binary: nothing is decoded, and integers are shorter.
            std::iter::once(1),
            &mut self.out,
        );
        if result.is_err() {
            self.out.clear();
            return Err("bind: cannot encode the parameters".into());
        }
        frontend::execute("", max_rows, &mut self.out).map_err(io)?;
        frontend::sync(&mut self.out);
        self.flush()
    }

    /// Executes a prepared statement (binary results) and returns the first column of its first row as an integer
    /// (int2, int4 or int8); None when there is no row or it is NULL. The stale-read probe's read (stale/postgres.rs).
    pub fn query_first_int(&mut self, id: usize, values: &[Value]) -> Result<Option<i64>, String> {
        if !self.prepared {
            return Err("query_first_int needs a prepared connection".into());
        }
        self.send_bound(id, values, 1)?;
        let (mut value, mut error, mut seen) = (None, None, false);
        loop {
            match self.recv()? {
                Message::DataRow(row) if !seen => {
                    seen = true;
                    let mut ranges = row.ranges();
                    if let Ok(Some(Some(r))) = ranges.next() {
                        let b = &row.buffer()[r];
                        value = match b.len() {
                            2 => Some(i16::from_be_bytes([b[0], b[1]]) as i64),
                            4 => Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]) as i64),
                            8 => Some(i64::from_be_bytes(b.try_into().expect("8 bytes"))),
                            n => return Err(format!("expected an integer column, got {n} bytes")),
                        };
                    }
                }
                Message::ErrorResponse(body) if error.is_none() => error = Some(server_error(&body)),
                Message::ReadyForQuery(_) => {
                    return match error {
                        Some(e) => Err(e),
                        None => Ok(value),
                    }
                }
                _ => {}
            }
        }
    }
}

impl Connection for PgWire {
    fn batch(&mut self, sql: &str) -> Result<(), String> {
        frontend::query(sql, &mut self.out).map_err(io)?;
        self.flush()?;
        self.finish().map(|_| ())
    }

    fn prepare(&mut self, sql: &str) -> Result<usize, String> {
        let text = dollar_placeholders(sql);
        let name = format!("dbperf{}", self.stmts.len());
        // Prepared even in unprepared mode, so that bad SQL fails before the clock starts (closed again then).
        frontend::parse(&name, &text, std::iter::empty(), &mut self.out).map_err(io)?;
        frontend::describe(b'S', &name, &mut self.out).map_err(io)?;
        frontend::sync(&mut self.out);
        self.flush()?;
        let mut params = Vec::new();
        let mut error = None;
        loop {
            match self.recv()? {
                Message::ParameterDescription(body) => {
                    let mut it = body.parameters();
                    while let Some(oid) = it.next().map_err(io)? {
                        params.push(oid);
                    }
                }
                Message::ErrorResponse(body) => error = Some(server_error(&body)),
                Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        if let Some(e) = error {
            return Err(format!("prepare failed: {e}: {text}"));
        }
        if !self.prepared {
            frontend::close(b'S', &name, &mut self.out).map_err(io)?;
            frontend::sync(&mut self.out);
            self.flush()?;
            self.finish()?;
        }
        self.stmts.push(Prepared { name, params });
        self.sql.push(sql.to_string());
        Ok(self.stmts.len() - 1)
    }

    fn execute(&mut self, id: usize, values: &[Value]) -> Result<u64, String> {
        if !self.prepared {
            let text = inline(&self.sql[id], values, false);
            frontend::query(&text, &mut self.out).map_err(io)?;
            self.flush()?;
            return self.finish();
        }
        self.send_bound(id, values, 0)?;
        self.finish()
    }
}

impl Drop for PgWire {
    fn drop(&mut self) {
        self.out.clear();
        frontend::terminate(&mut self.out);
        let _ = self.stream.write_all(&self.out);
    }
}

#[cfg(test)]
mod tests {
    use super::itoa_buf;

    #[test]
    fn integers_as_text() {
        for x in [0i64, 7, -7, 1234567890, i64::MIN, i64::MAX] {
            assert_eq!(itoa_buf(x).as_bytes(), x.to_string().as_bytes());
        }
    }
}
