//! MariaDB (and MySQL) over a blocking socket: the client/server protocol spoken directly on a std TCP or Unix
//! socket, as `pgwire` does for PostgreSQL. The `mysql` crate cost more client instructions per point query than
//! sysbench's libmariadb; here a prepared execution is one COM_STMT_EXECUTE built in a reused buffer and sent with
//! one write, and its reply is read in large chunks into a reused buffer and only framed (rows are counted, never
//! decoded): nothing is allocated per query in steady state.
//!
//! Supported: protocol 4.1 with `mysql_native_password` (MariaDB, MySQL 5.7) and `caching_sha2_password` (MySQL
//! 8.0's default, 9.x's only password plugin): the fast path (a SHA-256 scramble the server checks against its cache)
//! everywhere, and the full authentication the server asks for while the account's password is not in its cache yet:
//! over a Unix socket the password itself (a secure transport, as libmysqlclient sends it there), over TCP the
//! password encrypted with the server's RSA public key, which it asks the server for (libmysqlclient's
//! --get-server-public-key; the lab's servers listen on 127.0.0.1 only); an auth switch to either plugin;
//! CLIENT_DEPRECATE_EOF when the server offers it, multi-result replies, text and binary result sets. Not
//! supported, each a clear error: other authentication plugins, TLS, compression, LOCAL INFILE, packets of 16 MB or
//! more.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use rsa::pkcs8::DecodePublicKey;
use rsa::{Oaep, RsaPublicKey};
use sha1::{Digest, Sha1};
use sha2::Sha256;

use crate::engine::sqltext::inline_into;
use crate::engine::{Connection, Value};

// Capability flags (the protocol's CLIENT_*).
const CLIENT_LONG_PASSWORD: u32 = 1;
const CLIENT_CONNECT_WITH_DB: u32 = 8;
const CLIENT_PROTOCOL_41: u32 = 0x200;
const CLIENT_TRANSACTIONS: u32 = 0x2000;
const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
const CLIENT_MULTI_STATEMENTS: u32 = 0x1_0000;
const CLIENT_MULTI_RESULTS: u32 = 0x2_0000;
const CLIENT_PS_MULTI_RESULTS: u32 = 0x4_0000;
const CLIENT_PLUGIN_AUTH: u32 = 0x8_0000;
const CLIENT_DEPRECATE_EOF: u32 = 0x100_0000;

// Server status flags.
const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
const SERVER_STATUS_NO_BACKSLASH_ESCAPES: u16 = 0x0200;

const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;

const MYSQL_TYPE_LONGLONG: u8 = 0x08;
const MYSQL_TYPE_VAR_STRING: u8 = 0xfd;

/// utf8mb4_general_ci.
const CHARSET: u8 = 45;
const MAX_PAYLOAD: usize = 0xff_ffff;
const NATIVE_PASSWORD: &str = "mysql_native_password";
const CACHING_SHA2: &str = "caching_sha2_password";
// caching_sha2_password's AuthMoreData (0x01) statuses after the scramble.
const SHA2_FAST_AUTH_OK: u8 = 3;
const SHA2_FULL_AUTH: u8 = 4;
const SHA2_REQUEST_PUBLIC_KEY: u8 = 2; // the client's request for the server's RSA public key
const TOO_LARGE: &str = "a packet of 16 MB or more, which this driver does not support";

/// Where and as whom to connect, from a `mysql://user[:password]@host[:port]/db[?socket=/path]` DSN.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    target: Target,
    user: String,
    password: Option<String>,
    database: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Target {
    Tcp { host: String, port: u16 },
    Unix(PathBuf),
}

fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            out.push(hex.ok_or_else(|| format!("bad MySQL DSN: bad percent escape in {s:?}"))?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("bad MySQL DSN: {s:?} is not UTF-8 once decoded"))
}

/// Parses the DSN; `password` (DBPERF_PASSWORD) wins over one in the DSN. Messages never show a password.
pub fn options(dsn: &str, password: Option<&str>) -> Result<Options, String> {
    let rest = ["mysql://", "mariadb://"]
        .iter()
        .find_map(|p| dsn.strip_prefix(p))
        .ok_or("bad MySQL DSN: it must start with mysql://")?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hostport) = authority.rsplit_once('@').unwrap_or(("", authority));
    let (user, dsn_password) = match userinfo.split_once(':') {
        Some((u, p)) => (percent_decode(u)?, Some(percent_decode(p)?)),
        None => (percent_decode(userinfo)?, None),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => {
            (h, p.parse::<u16>().map_err(|_| format!("bad MySQL DSN: port {p:?} is not a port number"))?)
        }
        _ => (hostport, 3306),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let mut target =
        Target::Tcp { host: if host.is_empty() { "127.0.0.1".into() } else { percent_decode(host)? }, port };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("socket", v)) => target = Target::Unix(PathBuf::from(percent_decode(v)?)),
            _ => {
                let key = pair.split('=').next().unwrap_or(pair);
                return Err(format!("bad MySQL DSN: parameter {key:?} is not supported (only socket=)"));
            }
        }
    }
    let database = percent_decode(path)?;
    Ok(Options {
        target,
        user,
        password: password.map(str::to_string).or(dsn_password),
        database: (!database.is_empty()).then_some(database),
    })
}

pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn io(e: std::io::Error) -> String {
    format!("connection: {e}")
}

/// The server's packets, framed out of large reads into one reused buffer.
struct Inbox {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// The sequence number the next packet must carry.
    seq: u8,
}

const INBOX: usize = 64 * 1024;

impl Inbox {
    fn new() -> Inbox {
        Inbox { buf: vec![0; INBOX], start: 0, end: 0, seq: 0 }
    }

    /// The next packet's payload, as a range of `buf` valid until the next call.
    #[inline]
    fn packet(&mut self, src: &mut impl Read) -> Result<(usize, usize), String> {
        loop {
            let avail = self.end - self.start;
            let need = if avail >= 4 {
                let h = &self.buf[self.start..self.start + 4];
                let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
                if len == MAX_PAYLOAD {
                    return Err(format!("the server sent {TOO_LARGE}"));
                }
                if avail >= 4 + len {
                    if h[3] != self.seq {
                        return Err(format!("packet out of order (sequence {}, expected {})", h[3], self.seq));
                    }
                    self.seq = self.seq.wrapping_add(1);
                    let payload = (self.start + 4, self.start + 4 + len);
                    self.start += 4 + len;
                    if self.start == self.end {
                        // Consumed: the next read starts at the front (the payload stays readable until then).
                        self.start = 0;
                        self.end = 0;
                    }
                    return Ok(payload);
                }
                4 + len
            } else {
                4
            };
            if self.start + need > self.buf.len() || self.buf.len() - self.end < 4096 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
                if need > self.buf.len() {
                    self.buf.resize(need.next_power_of_two(), 0);
                }
            }
            let n = loop {
                match src.read(&mut self.buf[self.end..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => return Err(io(e)),
                }
            };
            if n == 0 {
                return Err("connection: the server closed the connection".into());
            }
            self.end += n;
        }
    }
}

/// A reader over a payload; every read is checked (a short packet is an error, never a panic).
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

const SHORT: &str = "a packet shorter than its contents";

impl<'a> Cursor<'a> {
    fn new(b: &'a [u8]) -> Self {
        Cursor { b, i: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let s = self.b.get(self.i..self.i + n).ok_or(SHORT)?;
        self.i += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        let s = self.take(2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Result<u32, String> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn lenenc(&mut self) -> Result<u64, String> {
        Ok(match self.u8()? {
            x @ 0..=0xfa => x as u64,
            0xfc => self.u16()? as u64,
            0xfd => {
                let s = self.take(3)?;
                u32::from_le_bytes([s[0], s[1], s[2], 0]) as u64
            }
            0xfe => u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")),
            x => return Err(format!("bad length-encoded integer (0x{x:02x})")),
        })
    }
    fn lenenc_bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.lenenc()?;
        self.take(usize::try_from(n).map_err(|_| SHORT)?)
    }
    /// Up to a NUL (consumed) or the end of the payload.
    fn nul_terminated(&mut self) -> &'a [u8] {
        let rest = &self.b[self.i.min(self.b.len())..];
        let n = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        self.i += (n + 1).min(rest.len());
        &rest[..n]
    }
    fn rest(&mut self) -> &'a [u8] {
        let rest = &self.b[self.i.min(self.b.len())..];
        self.i = self.b.len();
        rest
    }
}

/// An ERR packet (0xff first) as "ERROR code (sqlstate): message", as the mysql client and the `mysql` crate say it.
fn server_error(p: &[u8]) -> String {
    let mut c = Cursor::new(p);
    let _ = c.u8();
    let Ok(code) = c.u16() else { return "ERROR: a malformed error packet".into() };
    let rest = c.rest();
    match rest {
        [b'#', state @ ..] if state.len() >= 5 => {
            format!("ERROR {code} ({}): {}", String::from_utf8_lossy(&state[..5]), String::from_utf8_lossy(&state[5..]))
        }
        _ => format!("ERROR {code}: {}", String::from_utf8_lossy(rest)),
    }
}

/// The status flags of an OK packet (0x00, or 0xfe ending a result set under CLIENT_DEPRECATE_EOF).
fn ok_status(p: &[u8]) -> Result<u16, String> {
    let mut c = Cursor::new(p);
    c.u8()?;
    c.lenenc()?; // affected rows
    c.lenenc()?; // last insert id
    c.u16()
}

/// The status flags of an EOF packet (0xfe, warnings, status).
fn eof_status(p: &[u8]) -> Result<u16, String> {
    let mut c = Cursor::new(p);
    c.u8()?;
    c.u16()?;
    c.u16()
}

/// mysql_native_password: SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))); empty for no password.
pub fn native_scramble(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(stage2);
    let mix = h.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

/// caching_sha2_password's fast path: SHA256(password) XOR SHA256(SHA256(SHA256(password)) + nonce); empty for no
/// password.
pub fn sha2_scramble(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha256::digest(password);
    let stage2 = Sha256::digest(stage1);
    let mut h = Sha256::new();
    h.update(stage2);
    h.update(nonce);
    let mix = h.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

/// caching_sha2_password's full authentication over an insecure transport: (password + NUL) XOR the nonce (repeated),
/// encrypted with the server's RSA public key (PEM, SubjectPublicKeyInfo) with OAEP padding (SHA-1), as the server
/// decrypts it.
pub fn rsa_password(password: &[u8], nonce: &[u8], pem: &[u8]) -> Result<Vec<u8>, String> {
    let text = std::str::from_utf8(pem).map_err(|_| "the server's RSA public key is not PEM text".to_string())?;
    let key = RsaPublicKey::from_public_key_pem(text.trim_end_matches('\0'))
        .map_err(|e| format!("the server's RSA public key cannot be read: {e}"))?;
    let mut plain = password.to_vec();
    plain.push(0);
    if !nonce.is_empty() {
        for (i, b) in plain.iter_mut().enumerate() {
            *b ^= nonce[i % nonce.len()];
        }
    }
    key.encrypt(&mut rand::rngs::OsRng, Oaep::new::<Sha1>(), &plain)
        .map_err(|e| format!("encrypting the password with the server's RSA public key: {e}"))
}

/// The plugin this client answers with (the server's, when it is one of the two it speaks) and its scramble.
fn scramble_for(plugin: &str, password: &[u8], nonce: &[u8]) -> Option<(&'static str, Vec<u8>)> {
    match plugin {
        NATIVE_PASSWORD => Some((NATIVE_PASSWORD, native_scramble(password, nonce))),
        CACHING_SHA2 => Some((CACHING_SHA2, sha2_scramble(password, nonce))),
        _ => None,
    }
}

/// What the server's initial handshake packet (protocol 10) says.
#[derive(Debug, PartialEq)]
struct Greeting {
    version: String,
    caps: u32,
    status: u16,
    scramble: Vec<u8>,
    plugin: String,
}

fn parse_greeting(p: &[u8]) -> Result<Greeting, String> {
    if p.first() == Some(&0xff) {
        return Err(server_error(p));
    }
    let mut c = Cursor::new(p);
    let protocol = c.u8()?;
    if protocol != 10 {
        return Err(format!("the server speaks handshake protocol {protocol}, not 10"));
    }
    let version = String::from_utf8_lossy(c.nul_terminated()).into_owned();
    c.u32()?; // connection id
    let mut scramble = c.take(8)?.to_vec();
    c.u8()?; // filler
    let mut caps = c.u16()? as u32;
    let (mut status, mut plugin) = (0, String::new());
    if c.i < p.len() {
        c.u8()?; // charset
        status = c.u16()?;
        caps |= (c.u16()? as u32) << 16;
        let data_len = c.u8()? as usize;
        c.take(10)?; // reserved (MariaDB: its extended capabilities)
        if caps & CLIENT_SECURE_CONNECTION != 0 {
            let part2 = c.take(data_len.saturating_sub(8).max(13))?;
            // The second part ends with a NUL that is not part of the scramble.
            scramble.extend_from_slice(part2.strip_suffix(&[0]).unwrap_or(part2));
        }
        if caps & CLIENT_PLUGIN_AUTH != 0 {
            plugin = String::from_utf8_lossy(c.nul_terminated()).into_owned();
        }
    }
    Ok(Greeting { version, caps, status, scramble, plugin })
}

/// The capabilities this client asks for, of those the server offers.
fn client_caps(server: u32, with_db: bool) -> Result<u32, String> {
    let needed = CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION;
    if server & needed != needed {
        return Err("the server does not speak protocol 4.1 with secure authentication".into());
    }
    let wanted = CLIENT_LONG_PASSWORD
        | CLIENT_PROTOCOL_41
        | CLIENT_TRANSACTIONS
        | CLIENT_SECURE_CONNECTION
        | CLIENT_MULTI_STATEMENTS
        | CLIENT_MULTI_RESULTS
        | CLIENT_PS_MULTI_RESULTS
        | CLIENT_PLUGIN_AUTH
        | CLIENT_DEPRECATE_EOF
        | if with_db { CLIENT_CONNECT_WITH_DB } else { 0 };
    Ok(wanted & server)
}

/// The handshake response (protocol 4.1), payload only, answered with `plugin`.
fn handshake_response(caps: u32, user: &str, auth: &[u8], database: Option<&str>, plugin: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(&caps.to_le_bytes());
    out.extend_from_slice(&(MAX_PAYLOAD as u32).to_le_bytes());
    out.push(CHARSET);
    out.extend_from_slice(&[0; 23]);
    out.extend_from_slice(user.as_bytes());
    out.push(0);
    out.push(auth.len() as u8); // a SHA1 scramble (20 bytes) or a SHA-256 one (32)
    out.extend_from_slice(auth);
    if let (Some(db), true) = (database, caps & CLIENT_CONNECT_WITH_DB != 0) {
        out.extend_from_slice(db.as_bytes());
        out.push(0);
    }
    if caps & CLIENT_PLUGIN_AUTH != 0 {
        out.extend_from_slice(plugin.as_bytes());
        out.push(0);
    }
}

struct Stmt {
    /// The server's statement id.
    id: u32,
    params: usize,
    /// The parameter types the server was last sent (sent again only when they change); empty: none yet.
    types: Vec<u8>,
}

#[inline]
fn type_of(v: &Value) -> u8 {
    match v {
        Value::Int(_) => MYSQL_TYPE_LONGLONG,
        Value::Text(_) => MYSQL_TYPE_VAR_STRING,
    }
}

fn put_lenenc(n: usize, out: &mut Vec<u8>) {
    match n {
        0..=0xfa => out.push(n as u8),
        0xfb..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&(n as u64).to_le_bytes());
        }
    }
}

/// A COM_STMT_EXECUTE packet (header included, sequence 0) for `stmt` with `values`, in `out`: the parameter
/// types go along the first time and whenever they change (the new-params-bound flag).
fn encode_execute(stmt: &mut Stmt, values: &[Value], out: &mut Vec<u8>) -> Result<(), String> {
    if values.len() != stmt.params {
        return Err(format!("the statement has {} parameters, {} values were given", stmt.params, values.len()));
    }
    out.clear();
    out.extend_from_slice(&[0, 0, 0, 0, COM_STMT_EXECUTE]);
    out.extend_from_slice(&stmt.id.to_le_bytes());
    out.push(0); // CURSOR_TYPE_NO_CURSOR
    out.extend_from_slice(&1u32.to_le_bytes()); // iteration count
    if !values.is_empty() {
        out.resize(out.len() + values.len().div_ceil(8), 0); // the NULL bitmap: never NULL
        let same = stmt.types.len() == values.len() && stmt.types.iter().zip(values).all(|(&t, v)| t == type_of(v));
        if same {
            out.push(0);
        } else {
            out.push(1);
            stmt.types.clear();
            for v in values {
                out.extend_from_slice(&[type_of(v), 0]);
                stmt.types.push(type_of(v));
            }
        }
        for v in values {
            match v {
                Value::Int(x) => out.extend_from_slice(&x.to_le_bytes()),
                Value::Text(s) => {
                    put_lenenc(s.len(), out);
                    out.extend_from_slice(s.as_bytes());
                }
            }
        }
    }
    frame(out, 0)
}

/// Writes the header of the packet in `out` (its first 4 bytes were reserved).
#[inline]
fn frame(out: &mut [u8], seq: u8) -> Result<(), String> {
    let len = out.len() - 4;
    if len >= MAX_PAYLOAD {
        return Err(format!("the statement would need {TOO_LARGE}"));
    }
    out[..4].copy_from_slice(&(len as u32 | (seq as u32) << 24).to_le_bytes());
    Ok(())
}

/// A value of the first column of a reply's first row (`Conn::query_first`).
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Int(i64),
    Text(String),
}

const UNSIGNED_FLAG: u16 = 32;

/// The first value of a binary-protocol row (`p`, 0x00 first) of `columns` columns whose first column has protocol
/// type `kind` and column flags `flags`; None for NULL.
fn first_binary_value(p: &[u8], columns: u64, kind: u8, flags: u16) -> Result<Option<Scalar>, String> {
    let mut c = Cursor::new(p);
    c.u8()?;
    // The NULL bitmap is offset by 2 bits in the binary protocol: column 0 is bit 2 of its first byte.
    let bitmap = c.take(usize::try_from((columns + 7 + 2) / 8).map_err(|_| SHORT)?)?;
    if bitmap.first().is_some_and(|b| b & 4 != 0) {
        return Ok(None);
    }
    let unsigned = flags & UNSIGNED_FLAG != 0;
    let int = |b: &[u8]| -> Result<Scalar, String> {
        let mut x = [0u8; 8];
        x[..b.len()].copy_from_slice(b);
        let negative = !unsigned && b.last().is_some_and(|&top| top & 0x80 != 0);
        if negative {
            x[b.len()..].fill(0xff);
        }
        let v = u64::from_le_bytes(x);
        if unsigned && b.len() == 8 {
            return i64::try_from(v).map(Scalar::Int).map_err(|_| format!("{v} does not fit a signed 64-bit integer"));
        }
        Ok(Scalar::Int(v as i64))
    };
    Ok(Some(match kind {
        1 => int(c.take(1)?)?,      // TINY
        2 | 13 => int(c.take(2)?)?, // SHORT, YEAR
        3 | 9 => int(c.take(4)?)?,  // LONG, INT24 (sent as 4 bytes)
        8 => int(c.take(8)?)?,      // LONGLONG
        0 | 15 | 16 | 245..=255 => Scalar::Text(String::from_utf8_lossy(c.lenenc_bytes()?).into_owned()),
        other => return Err(format!("a column of protocol type {other}, which this driver does not decode")),
    }))
}

/// The protocol type and flags of a column definition packet.
fn column_type(p: &[u8]) -> Result<(u8, u16), String> {
    let mut c = Cursor::new(p);
    for _ in 0..6 {
        c.lenenc_bytes()?; // catalog, schema, table, original table, name, original name
    }
    c.lenenc()?; // the fixed fields' length
    c.u16()?; // character set
    c.u32()?; // column length
    Ok((c.u8()?, c.u16()?))
}

/// A connection over any byte stream (a socket; a scripted one in tests).
pub struct Conn<S: Read + Write> {
    stream: S,
    inbox: Inbox,
    out: Vec<u8>,
    caps: u32,
    /// The server status flags of the last reply (NO_BACKSLASH_ESCAPES decides how text is inlined).
    status: u16,
    prepared: bool,
    sql: Vec<String>,
    stmts: Vec<Stmt>,
    /// Unprepared execution: the statement with its values inlined, reused.
    text: String,
}

pub type MyWire = Conn<Stream>;

impl MyWire {
    pub fn open(opts: &Options, label: &str, prepared: bool) -> Result<Self, String> {
        let fail = |e: String| format!("cannot connect to {label}: {e}");
        let stream = match &opts.target {
            Target::Unix(path) => {
                Stream::Unix(UnixStream::connect(path).map_err(|e| fail(format!("{}: {e}", path.display())))?)
            }
            Target::Tcp { host, port } => {
                let s = TcpStream::connect((host.as_str(), *port)).map_err(|e| fail(e.to_string()))?;
                s.set_nodelay(true).map_err(|e| fail(e.to_string()))?;
                Stream::Tcp(s)
            }
        };
        Conn::handshake(stream, opts, prepared).map_err(fail)
    }
}

impl<S: Read + Write> Conn<S> {
    /// A connection on `stream` before its handshake: no capabilities, no statements.
    fn unopened(stream: S, prepared: bool) -> Self {
        Conn {
            stream,
            inbox: Inbox::new(),
            out: Vec::with_capacity(4096),
            caps: 0,
            status: 0,
            prepared,
            sql: Vec::new(),
            stmts: Vec::new(),
            text: String::with_capacity(1024),
        }
    }

    fn handshake(stream: S, opts: &Options, prepared: bool) -> Result<Self, String> {
        let mut c = Conn::unopened(stream, prepared);
        let (s, e) = c.inbox.packet(&mut c.stream)?;
        let greeting = parse_greeting(&c.inbox.buf[s..e])?;
        c.caps = client_caps(greeting.caps, opts.database.is_some())?;
        c.status = greeting.status;
        let password = opts.password.as_deref().unwrap_or("").as_bytes();
        // Answered with the server's default plugin where it is one of the two this driver speaks, else with
        // mysql_native_password: a user of another plugin gets an auth switch, which names it.
        let (mut plugin, auth) = scramble_for(&greeting.plugin, password, &greeting.scramble)
            .unwrap_or_else(|| (NATIVE_PASSWORD, native_scramble(password, &greeting.scramble)));
        c.out.clear();
        c.out.extend_from_slice(&[0; 4]);
        handshake_response(c.caps, &opts.user, &auth, opts.database.as_deref(), plugin, &mut c.out);
        let seq = c.inbox.seq;
        c.send(seq)?;
        let secure = matches!(opts.target, Target::Unix(_));
        let mut nonce = greeting.scramble.clone();
        let mut awaiting_key = false; // caching_sha2_password over TCP: the server's public key comes next
        loop {
            let (s, e) = c.inbox.packet(&mut c.stream)?;
            let p = &c.inbox.buf[s..e];
            let reply: Vec<u8> = match p.first() {
                Some(0x00) => {
                    c.status = ok_status(p)?;
                    return Ok(c);
                }
                Some(0xff) => return Err(server_error(p)),
                Some(0xfe) => {
                    // Auth switch: the plugin the server wants for this user, and a fresh nonce.
                    let mut cur = Cursor::new(&p[1..]);
                    let wanted = String::from_utf8_lossy(cur.nul_terminated()).into_owned();
                    let data = cur.rest();
                    nonce = data.strip_suffix(&[0]).unwrap_or(data).to_vec();
                    let Some((chosen, auth)) = scramble_for(&wanted, password, &nonce) else {
                        return Err(format!(
                            "the server asks for the authentication plugin {wanted}; this driver speaks \
                             {NATIVE_PASSWORD} and {CACHING_SHA2}"
                        ));
                    };
                    plugin = chosen;
                    auth
                }
                Some(0x01) if plugin == CACHING_SHA2 && awaiting_key => {
                    awaiting_key = false;
                    rsa_password(password, &nonce, &p[1..])?
                }
                Some(0x01) if plugin == CACHING_SHA2 => match p.get(1) {
                    Some(&SHA2_FAST_AUTH_OK) => continue, // the scramble matched the server's cache: an OK follows
                    // Not in the server's cache yet: the password itself over the Unix socket; over TCP, the
                    // server's public key first.
                    Some(&SHA2_FULL_AUTH) if secure => {
                        let mut clear = password.to_vec();
                        clear.push(0);
                        clear
                    }
                    Some(&SHA2_FULL_AUTH) => {
                        awaiting_key = true;
                        vec![SHA2_REQUEST_PUBLIC_KEY]
                    }
                    _ => return Err(format!("unexpected {CACHING_SHA2} data during authentication")),
                },
                _ => return Err("unexpected packet during authentication".into()),
            };
            c.out.clear();
            c.out.extend_from_slice(&[0; 4]);
            c.out.extend_from_slice(&reply);
            let seq = c.inbox.seq;
            c.send(seq)?;
        }
    }

    /// Frames and writes the packet in `out` with sequence `seq`; the reply's packets follow on from it.
    #[inline]
    fn send(&mut self, seq: u8) -> Result<(), String> {
        frame(&mut self.out, seq)?;
        self.write_out(seq)
    }

    #[inline]
    fn write_out(&mut self, seq: u8) -> Result<(), String> {
        self.inbox.seq = seq.wrapping_add(1);
        self.stream.write_all(&self.out).map_err(io)
    }

    /// COM_QUERY with `sql` (or with `self.text` when `sql` is None).
    fn send_query(&mut self, sql: Option<&str>) -> Result<(), String> {
        let text = sql.unwrap_or(&self.text);
        self.out.clear();
        self.out.extend_from_slice(&[0, 0, 0, 0, COM_QUERY]);
        self.out.extend_from_slice(text.as_bytes());
        self.send(0)
    }

    /// Reads a command's whole reply: every result set (rows counted, `on_row` called with each row's payload)
    /// until the last; an ERR packet ends it as the error.
    #[inline]
    fn read_results(&mut self, mut on_row: impl FnMut(&[u8])) -> Result<u64, String> {
        let mut rows = 0u64;
        let deprecate_eof = self.caps & CLIENT_DEPRECATE_EOF != 0;
        loop {
            let (s, e) = self.inbox.packet(&mut self.stream)?;
            let p = &self.inbox.buf[s..e];
            let status = match p.first() {
                Some(0x00) => ok_status(p)?,
                Some(0xff) => return Err(server_error(p)),
                Some(0xfb) => return Err("the server asks for a LOCAL INFILE, which this driver does not send".into()),
                Some(_) => {
                    let columns = Cursor::new(p).lenenc()?;
                    for _ in 0..columns + u64::from(!deprecate_eof) {
                        self.inbox.packet(&mut self.stream)?; // column definitions (and their EOF): skipped
                    }
                    loop {
                        let (s, e) = self.inbox.packet(&mut self.stream)?;
                        let p = &self.inbox.buf[s..e];
                        match p.first() {
                            // A row could begin with 0xfe only as a length of 16 MB or more, which `packet`
                            // refuses: 0xfe is the end.
                            Some(0xfe) => {
                                break if deprecate_eof { ok_status(p)? } else { eof_status(p)? };
                            }
                            Some(0xff) => return Err(server_error(p)),
                            _ => {
                                rows += 1;
                                on_row(p);
                            }
                        }
                    }
                }
                None => return Err("an empty packet where a reply was expected".into()),
            };
            self.status = status;
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(rows);
            }
        }
    }

    /// The skipped definitions of a COM_STMT_PREPARE reply: (statement id, parameters).
    fn read_prepared(&mut self) -> Result<(u32, usize), String> {
        let (s, e) = self.inbox.packet(&mut self.stream)?;
        let p = &self.inbox.buf[s..e];
        match p.first() {
            Some(0x00) => {}
            Some(0xff) => return Err(server_error(p)),
            _ => return Err("unexpected reply to COM_STMT_PREPARE".into()),
        }
        let mut c = Cursor::new(&p[1..]);
        let (id, columns, params) = (c.u32()?, c.u16()? as usize, c.u16()? as usize);
        let eof = usize::from(self.caps & CLIENT_DEPRECATE_EOF == 0);
        let definitions = |n: usize| if n > 0 { n + eof } else { 0 };
        for _ in 0..definitions(params) + definitions(columns) {
            self.inbox.packet(&mut self.stream)?;
        }
        Ok((id, params))
    }

    /// Executes prepared statement `id` and returns the first column of its first row; None when there is no row
    /// or it is NULL. The stale-read probe's reads (stale/mariadb.rs).
    pub fn query_first(&mut self, id: usize, values: &[Value]) -> Result<Option<Scalar>, String> {
        if !self.prepared {
            return Err("query_first needs a prepared connection".into());
        }
        let result = self.send_execute(id, values).and_then(|_| self.read_first());
        if result.is_err() {
            self.stmts[id].types.clear();
        }
        result
    }

    /// The reply of a COM_STMT_EXECUTE: the first value of its first result set's first row, the rest consumed.
    fn read_first(&mut self) -> Result<Option<Scalar>, String> {
        let (s, e) = self.inbox.packet(&mut self.stream)?;
        let p = &self.inbox.buf[s..e];
        let columns = match p.first() {
            Some(0x00) => {
                self.status = ok_status(p)?;
                return if self.status & SERVER_MORE_RESULTS_EXISTS != 0 {
                    self.read_results(|_| {}).map(|_| None)
                } else {
                    Ok(None)
                };
            }
            Some(0xff) => return Err(server_error(p)),
            Some(_) => Cursor::new(p).lenenc()?,
            None => return Err("an empty packet where a reply was expected".into()),
        };
        let deprecate_eof = self.caps & CLIENT_DEPRECATE_EOF != 0;
        let (s, e) = self.inbox.packet(&mut self.stream)?;
        let (kind, flags) = column_type(&self.inbox.buf[s..e])?;
        for _ in 1..columns + u64::from(!deprecate_eof) {
            self.inbox.packet(&mut self.stream)?;
        }
        let mut first = None;
        loop {
            let (s, e) = self.inbox.packet(&mut self.stream)?;
            let p = &self.inbox.buf[s..e];
            match p.first() {
                Some(0xfe) => {
                    self.status = if deprecate_eof { ok_status(p)? } else { eof_status(p)? };
                    break;
                }
                Some(0xff) => return Err(server_error(p)),
                _ if first.is_none() => first = Some(first_binary_value(p, columns, kind, flags)?),
                _ => {}
            }
        }
        if self.status & SERVER_MORE_RESULTS_EXISTS != 0 {
            self.read_results(|_| {})?;
        }
        Ok(first.flatten())
    }

    /// COM_STMT_EXECUTE of statement `id`, written.
    #[inline]
    fn send_execute(&mut self, id: usize, values: &[Value]) -> Result<(), String> {
        encode_execute(&mut self.stmts[id], values, &mut self.out)?;
        self.write_out(0)
    }

    /// The server's version, from SELECT VERSION().
    pub fn version(&mut self) -> Result<String, String> {
        self.send_query(Some("SELECT VERSION()"))?;
        let mut version: Option<Result<String, String>> = None;
        self.read_results(|row| {
            if version.is_none() {
                let v = Cursor::new(row).lenenc_bytes().map(|b| String::from_utf8_lossy(b).into_owned());
                version = Some(v);
            }
        })?;
        version.unwrap_or_else(|| Err("SELECT VERSION(): no row".into()))
    }
}

impl<S: Read + Write + Send> Connection for Conn<S> {
    fn batch(&mut self, sql: &str) -> Result<(), String> {
        self.send_query(Some(sql))?;
        self.read_results(|_| {}).map(|_| ())
    }

    fn prepare(&mut self, sql: &str) -> Result<usize, String> {
        // Prepared even in unprepared mode, so that bad SQL fails before the clock starts (closed again then).
        self.out.clear();
        self.out.extend_from_slice(&[0, 0, 0, 0, COM_STMT_PREPARE]);
        self.out.extend_from_slice(sql.as_bytes());
        self.send(0)?;
        let (id, params) = self.read_prepared().map_err(|e| format!("prepare failed: {e}: {sql}"))?;
        if !self.prepared {
            self.out.clear();
            self.out.extend_from_slice(&[0, 0, 0, 0, COM_STMT_CLOSE]);
            self.out.extend_from_slice(&id.to_le_bytes());
            self.send(0)?; // no reply
        }
        self.stmts.push(Stmt { id, params, types: Vec::with_capacity(params) });
        self.sql.push(sql.to_string());
        Ok(self.stmts.len() - 1)
    }

    #[inline]
    fn execute(&mut self, id: usize, values: &[Value]) -> Result<u64, String> {
        if !self.prepared {
            self.text.clear();
            let escapes = self.status & SERVER_STATUS_NO_BACKSLASH_ESCAPES == 0;
            inline_into(&self.sql[id], values, escapes, &mut self.text);
            self.send_query(None)?;
            return self.read_results(|_| {});
        }
        let result = self.send_execute(id, values).and_then(|_| self.read_results(|_| {}));
        if result.is_err() {
            // Whether the server kept the types is unknown: the next execution sends them again.
            self.stmts[id].types.clear();
        }
        result
    }
}

impl<S: Read + Write> Drop for Conn<S> {
    fn drop(&mut self) {
        let _ = self.stream.write_all(&[1, 0, 0, 0, COM_QUIT]);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A scripted server: what it sends is read back in pieces of `chunk` bytes; what the client writes is kept.
    pub(crate) struct Script {
        pub input: Vec<u8>,
        pub pos: usize,
        pub chunk: usize,
        pub written: Vec<u8>,
        /// Replay: every write makes the whole input readable again (one reply per query).
        pub replay: bool,
    }

    impl Read for Script {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.chunk.min(buf.len()).min(self.input.len() - self.pos);
            buf[..n].copy_from_slice(&self.input[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    impl Write for Script {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.replay {
                self.pos = 0;
                self.written.clear();
            }
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    pub(crate) fn packet(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = (payload.len() as u32).to_le_bytes().to_vec();
        p[3] = seq;
        p.extend_from_slice(payload);
        p
    }

    /// A MariaDB 11 greeting: mysql_native_password, scramble "abcdefgh" + "ijklmnopqrst".
    pub(crate) fn greeting(caps: u32) -> Vec<u8> {
        greeting_of(caps, "5.5.5-11.8.3-MariaDB", NATIVE_PASSWORD)
    }

    /// A greeting of server `version` whose default plugin is `plugin`, scramble "abcdefgh" + "ijklmnopqrst".
    fn greeting_of(caps: u32, version: &str, plugin: &str) -> Vec<u8> {
        let mut g = vec![10];
        g.extend_from_slice(version.as_bytes());
        g.push(0);
        g.extend_from_slice(&42u32.to_le_bytes());
        g.extend_from_slice(b"abcdefgh\0");
        g.extend_from_slice(&(caps as u16).to_le_bytes());
        g.push(45);
        g.extend_from_slice(&2u16.to_le_bytes()); // autocommit
        g.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
        g.push(21);
        g.extend_from_slice(&[0; 10]);
        g.extend_from_slice(b"ijklmnopqrst\0");
        g.extend_from_slice(plugin.as_bytes());
        g.push(0);
        g
    }

    /// MariaDB 11's capabilities (no CLIENT_MYSQL, no SSL here).
    pub(crate) const SERVER_CAPS: u32 = 0x81bf_f7fe;

    pub(crate) fn ok(header: u8, status: u16) -> Vec<u8> {
        let mut p = vec![header, 0, 0];
        p.extend_from_slice(&status.to_le_bytes());
        p.extend_from_slice(&[0, 0]);
        p
    }

    fn opts(password: Option<&str>) -> Options {
        options("mysql://dbperf@127.0.0.1:3306/sbtest", password).unwrap()
    }

    /// A connection through the handshake of a scripted server, its script then replaced by `replies`.
    pub(crate) fn connected(prepared: bool, replies: Vec<u8>, chunk: usize) -> Conn<Script> {
        let mut input = packet(0, &greeting(SERVER_CAPS));
        input.extend(packet(2, &ok(0, 2)));
        let script = Script { input, pos: 0, chunk: 7, written: Vec::new(), replay: false };
        let mut c = Conn::handshake(script, &opts(Some("pw")), prepared).unwrap();
        c.stream = Script { input: replies, pos: 0, chunk, written: Vec::new(), replay: false };
        c
    }

    /// A connection whose server answers every write with `reply` (the no-allocation test, no_alloc.rs), with one
    /// statement of `params` parameters registered: its id.
    pub(crate) fn replaying(prepared: bool, reply: Vec<u8>, params: usize) -> (Conn<Script>, usize) {
        let mut c = connected(prepared, Vec::new(), 1 << 16);
        c.stream = Script { input: reply, pos: 0, chunk: 1 << 16, written: Vec::new(), replay: true };
        c.stmts.push(Stmt { id: 1, params, types: Vec::with_capacity(params) });
        c.sql.push("SELECT c FROM sbtest1 WHERE id = ? AND c <> ?".into());
        (c, 0)
    }

    fn column_definition(name: &str) -> Vec<u8> {
        let mut p = Vec::new();
        for s in ["def", "sbtest", "sbtest1", "sbtest1", name, name] {
            put_lenenc(s.len(), &mut p);
            p.extend_from_slice(s.as_bytes());
        }
        p.extend_from_slice(&[0x0c, 45, 0, 120, 0, 0, 0, 0xfe, 0, 0, 0, 0, 0]);
        p
    }

    /// A binary result set of one column, `rows` rows of `c` values 120 bytes long, ended as DEPRECATE_EOF does.
    pub(crate) fn binary_rows(rows: usize, status: u16) -> Vec<u8> {
        let mut out = packet(1, &[1]);
        out.extend(packet(2, &column_definition("c")));
        let mut seq = 3u8;
        for _ in 0..rows {
            let mut row = vec![0, 0];
            put_lenenc(120, &mut row);
            row.extend_from_slice(&[b'7'; 120]);
            out.extend(packet(seq, &row));
            seq = seq.wrapping_add(1);
        }
        out.extend(packet(seq, &ok(0xfe, status)));
        out
    }

    #[test]
    fn dsns_parse_with_sockets_and_without_passwords() {
        let o = options("mysql://dbperf@localhost:3307/sbtest?socket=%2Ftmp%2Fd%20x%2Fmariadb.sock", None).unwrap();
        assert_eq!(o.target, Target::Unix("/tmp/d x/mariadb.sock".into()));
        assert_eq!((o.user.as_str(), o.database.as_deref(), o.password), ("dbperf", Some("sbtest"), None));
        let o = options("mysql://bob:s%40cret@127.0.0.1/", Some("env")).unwrap();
        assert_eq!(o.target, Target::Tcp { host: "127.0.0.1".into(), port: 3306 });
        assert_eq!((o.password.as_deref(), o.database), (Some("env"), None));
        assert_eq!(options("mariadb://u:s%40cret@h:1/d", None).unwrap().password.as_deref(), Some("s@cret"));
        let e = options("mysql://bob:secret@h:x/d", None).unwrap_err();
        assert!(e.contains("port") && !e.contains("secret"), "{e}");
        assert!(options("mysql://bob@h/d?compress=true", None).unwrap_err().contains("compress"));
        assert!(options("postgresql://bob@h/d", None).is_err());
    }

    #[test]
    fn native_password_scramble_matches_its_definition() {
        // Computed independently: SHA1("secret") XOR SHA1(scramble + SHA1(SHA1("secret"))) for the scramble below
        // (python3 hashlib).
        let scramble = b"abcdefghijklmnopqrst";
        let expected = [
            0x88, 0x17, 0xc5, 0x0f, 0xa7, 0x79, 0xda, 0xef, 0x01, 0x0e, 0xe7, 0x57, 0x78, 0x25, 0xb0, 0x84, 0x7d, 0xf9,
            0x84, 0x2e,
        ];
        assert_eq!(native_scramble(b"secret", scramble), expected);
        assert!(native_scramble(b"", scramble).is_empty());
    }

    #[test]
    fn greetings_parse() {
        let g = parse_greeting(&greeting(SERVER_CAPS)).unwrap();
        assert_eq!(g.version, "5.5.5-11.8.3-MariaDB");
        assert_eq!(g.scramble, b"abcdefghijklmnopqrst");
        assert_eq!((g.plugin.as_str(), g.status, g.caps), ("mysql_native_password", 2, SERVER_CAPS));
        let mut err = vec![0xff];
        err.extend_from_slice(&1040u16.to_le_bytes());
        err.extend_from_slice(b"Too many connections");
        assert_eq!(parse_greeting(&err).unwrap_err(), "ERROR 1040: Too many connections");
        assert!(parse_greeting(&greeting(SERVER_CAPS)[..20]).is_err(), "a short greeting is an error, not a panic");
        assert!(client_caps(0, false).is_err());
        let caps = client_caps(SERVER_CAPS, true).unwrap();
        assert_ne!(caps & CLIENT_DEPRECATE_EOF, 0);
        assert_ne!(caps & CLIENT_CONNECT_WITH_DB, 0);
        assert_eq!(client_caps(SERVER_CAPS & !CLIENT_DEPRECATE_EOF, false).unwrap() & CLIENT_DEPRECATE_EOF, 0);
    }

    #[test]
    fn the_handshake_answers_with_the_scramble_and_follows_an_auth_switch() {
        let mut input = packet(0, &greeting(SERVER_CAPS));
        let mut switch = b"\xfemysql_native_password\0".to_vec();
        switch.extend_from_slice(b"ABCDEFGHIJKLMNOPQRST\0");
        input.extend(packet(2, &switch));
        input.extend(packet(4, &ok(0, 2)));
        let script = Script { input, pos: 0, chunk: 5, written: Vec::new(), replay: false };
        let c = Conn::handshake(script, &opts(Some("secret")), true).unwrap();
        let w = &c.stream.written;
        let response_len = u32::from_le_bytes([w[0], w[1], w[2], 0]) as usize;
        assert_eq!(w[3], 1, "the response is packet 1");
        let response = &w[4..4 + response_len];
        let caps = u32::from_le_bytes(response[..4].try_into().unwrap());
        assert_eq!(caps, client_caps(SERVER_CAPS, true).unwrap());
        let rest = &response[32..];
        assert!(rest.starts_with(b"dbperf\0\x14"));
        assert_eq!(&rest[8..28], &native_scramble(b"secret", b"abcdefghijklmnopqrst")[..]);
        assert_eq!(&rest[28..], b"sbtest\0mysql_native_password\0");
        let switched = &w[4 + response_len..];
        assert_eq!(&switched[..4], &[20, 0, 0, 3]);
        assert_eq!(&switched[4..], &native_scramble(b"secret", b"ABCDEFGHIJKLMNOPQRST")[..]);
        assert!(!String::from_utf8_lossy(w).contains("secret"));

        let mut input = packet(0, &greeting(SERVER_CAPS));
        input.extend(packet(2, b"\xfeclient_ed25519\0xyz"));
        let script = Script { input, pos: 0, chunk: 64, written: Vec::new(), replay: false };
        let e = Conn::handshake(script, &opts(None), true).err().unwrap();
        assert!(e.contains("client_ed25519"), "{e}");
        let mut input = packet(0, &greeting(SERVER_CAPS));
        let mut denied = vec![0xff];
        denied.extend_from_slice(&1045u16.to_le_bytes());
        denied.extend_from_slice(b"#28000Access denied for user 'dbperf'@'localhost' (using password: YES)");
        input.extend(packet(2, &denied));
        let script = Script { input, pos: 0, chunk: 64, written: Vec::new(), replay: false };
        let e = Conn::handshake(script, &opts(Some("secret")), true).err().unwrap();
        assert_eq!(e, "ERROR 1045 (28000): Access denied for user 'dbperf'@'localhost' (using password: YES)");
    }

    #[test]
    fn caching_sha2_scramble_matches_its_definition() {
        // Computed independently: SHA256("secret") XOR SHA256(SHA256(SHA256("secret")) + nonce) (python3 hashlib).
        let expected = [
            0xc7, 0x6e, 0x28, 0x98, 0x61, 0x2a, 0x4c, 0xf0, 0x42, 0xc7, 0x7f, 0xa8, 0xc4, 0x70, 0x2c, 0x4c, 0x64, 0xc0,
            0xc2, 0xc5, 0x57, 0xc5, 0x3c, 0x4d, 0x75, 0x59, 0x5a, 0xaa, 0x6a, 0xba, 0xe8, 0x09,
        ];
        assert_eq!(sha2_scramble(b"secret", b"abcdefghijklmnopqrst"), expected);
        assert!(sha2_scramble(b"", b"abcdefghijklmnopqrst").is_empty());
    }

    /// The handshake with a MySQL 9.7 server whose default plugin is caching_sha2_password, its replies after the
    /// response being `after` (sequence number, payload); what the client wrote, or the error.
    fn mysql9(dsn: &str, password: Option<&str>, after: &[(u8, &[u8])]) -> Result<Vec<u8>, String> {
        let mut input = packet(0, &greeting_of(SERVER_CAPS, "9.7.0", CACHING_SHA2));
        for (seq, p) in after {
            input.extend(packet(*seq, p));
        }
        let script = Script { input, pos: 0, chunk: 5, written: Vec::new(), replay: false };
        Conn::handshake(script, &options(dsn, password).unwrap(), true)
            .map(|mut c| std::mem::take(&mut c.stream.written))
    }

    /// The payloads of the packets in `w`, in order.
    fn payloads(mut w: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while w.len() >= 4 {
            let n = u32::from_le_bytes([w[0], w[1], w[2], 0]) as usize;
            out.push(w[4..4 + n].to_vec());
            w = &w[4 + n..];
        }
        out
    }

    #[test]
    fn caching_sha2_answers_with_its_scramble_and_takes_the_fast_path() {
        let tcp = "mysql://dbperf@127.0.0.1:3306/sbtest";
        let w = mysql9(tcp, Some("secret"), &[(2, b"\x01\x03"), (3, &ok(0, 2))]).unwrap();
        let sent = payloads(&w);
        assert_eq!(sent.len(), 1, "the fast path sends the response only");
        let rest = &sent[0][32..];
        assert!(rest.starts_with(b"dbperf\0\x20"), "a 32-byte SHA-256 scramble");
        assert_eq!(&rest[8..40], &sha2_scramble(b"secret", b"abcdefghijklmnopqrst")[..]);
        assert_eq!(&rest[40..], b"sbtest\0caching_sha2_password\0");
        // No password (mysqld --initialize-insecure's root): an empty response, and the server's OK.
        let w = mysql9(tcp, None, &[(2, &ok(0, 2))]).unwrap();
        assert!(payloads(&w)[0][32..].starts_with(b"dbperf\0\x00sbtest\0"));
    }

    #[test]
    fn caching_sha2_full_authentication_sends_the_password_over_a_unix_socket() {
        let socket = "mysql://dbperf@localhost/sbtest?socket=%2Ftmp%2Fmysqld.sock";
        let w = mysql9(socket, Some("secret"), &[(2, b"\x01\x04"), (4, &ok(0, 2))]).unwrap();
        let sent = payloads(&w);
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[1], b"secret\0");
        assert_eq!(w[4 + sent[0].len() + 3], 3, "the password is packet 3");
        let e = mysql9(socket, Some("secret"), &[(2, b"\x01\x07")]).unwrap_err();
        assert!(e.contains("unexpected caching_sha2_password data"), "{e}");
    }

    #[test]
    fn caching_sha2_full_authentication_over_tcp_encrypts_the_password_with_the_servers_rsa_key() {
        use rsa::pkcs8::EncodePublicKey;
        use rsa::RsaPrivateKey;
        let private = RsaPrivateKey::new(&mut rand::rngs::OsRng, 1024).unwrap();
        let pem = private.to_public_key().to_public_key_pem(rsa::pkcs8::LineEnding::LF).unwrap();
        let mut key = vec![0x01];
        key.extend_from_slice(pem.as_bytes());
        let tcp = "mysql://dbperf@127.0.0.1:3306/sbtest";
        let w = mysql9(tcp, Some("secret"), &[(2, b"\x01\x04"), (4, &key), (6, &ok(0, 2))]).unwrap();
        let sent = payloads(&w);
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[1], [SHA2_REQUEST_PUBLIC_KEY], "the public key is asked for");
        assert_eq!(sent[2].len(), 128, "one RSA block of the key's size");
        let plain = private.decrypt(Oaep::new::<Sha1>(), &sent[2]).unwrap();
        let nonce = b"abcdefghijklmnopqrst";
        let expected: Vec<u8> = b"secret\0".iter().enumerate().map(|(i, b)| b ^ nonce[i % nonce.len()]).collect();
        assert_eq!(plain, expected);
        assert!(!String::from_utf8_lossy(&w).contains("secret"), "the password never crosses TCP in the clear");
        let e = mysql9(tcp, Some("secret"), &[(2, b"\x01\x04"), (4, b"\x01not a key")]).unwrap_err();
        assert!(e.contains("RSA public key") && !e.contains("secret"), "{e}");
    }

    #[test]
    fn an_auth_switch_to_caching_sha2_uses_the_new_nonce() {
        let mut switch = b"\xfecaching_sha2_password\0".to_vec();
        switch.extend_from_slice(b"ABCDEFGHIJKLMNOPQRST\0");
        let mut input = packet(0, &greeting(SERVER_CAPS));
        input.extend(packet(2, &switch));
        input.extend(packet(4, b"\x01\x03"));
        input.extend(packet(5, &ok(0, 2)));
        let script = Script { input, pos: 0, chunk: 64, written: Vec::new(), replay: false };
        let c = Conn::handshake(script, &opts(Some("secret")), true).unwrap();
        let sent = payloads(&c.stream.written);
        assert_eq!(sent[1], sha2_scramble(b"secret", b"ABCDEFGHIJKLMNOPQRST"));
        let mut input = packet(0, &greeting(SERVER_CAPS));
        input.extend(packet(2, b"\xfesha256_password\0xyz"));
        let script = Script { input, pos: 0, chunk: 64, written: Vec::new(), replay: false };
        let e = Conn::handshake(script, &opts(Some("secret")), true).err().unwrap();
        assert!(e.contains("sha256_password") && e.contains(CACHING_SHA2), "{e}");
    }

    #[test]
    fn ok_eof_and_err_packets_parse() {
        assert_eq!(ok_status(&[0, 0xfc, 1, 0, 5, 0x0a, 0x00, 0, 0]).unwrap(), 0x000a);
        assert_eq!(eof_status(&[0xfe, 0, 0, 0x08, 0x00]).unwrap(), 0x0008);
        assert!(ok_status(&[0, 0xfc, 1]).is_err());
        let mut err = vec![0xff];
        err.extend_from_slice(&1213u16.to_le_bytes());
        err.extend_from_slice(b"#40001Deadlock found when trying to get lock; try restarting transaction");
        assert_eq!(
            server_error(&err),
            "ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction"
        );
        assert_eq!(server_error(&[0xff]), "ERROR: a malformed error packet");
    }

    #[test]
    fn executes_encode_in_the_binary_protocol() {
        let mut stmt = Stmt { id: 7, params: 2, types: Vec::new() };
        let mut out = Vec::new();
        let values = [Value::Int(-2), Value::Text("ab".into())];
        encode_execute(&mut stmt, &values, &mut out).unwrap();
        let mut expected = vec![0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0b0000_0000, 1, 0x08, 0, 0xfd, 0];
        expected.extend_from_slice(&(-2i64).to_le_bytes());
        expected.extend_from_slice(&[2, b'a', b'b']);
        assert_eq!(out, packet(0, &expected));
        // The same types again: not sent a second time.
        encode_execute(&mut stmt, &values, &mut out).unwrap();
        let mut again = vec![0x17, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0];
        again.extend_from_slice(&(-2i64).to_le_bytes());
        again.extend_from_slice(&[2, b'a', b'b']);
        assert_eq!(out, packet(0, &again));
        // Other types: sent again.
        encode_execute(&mut stmt, &[Value::Int(1), Value::Int(2)], &mut out).unwrap();
        assert_eq!(&out[4 + 11..4 + 16], &[1, 0x08, 0, 0x08, 0]);
        assert!(encode_execute(&mut stmt, &values[..1], &mut out).is_err());
        let mut none = Stmt { id: 1, params: 0, types: Vec::new() };
        encode_execute(&mut none, &[], &mut out).unwrap();
        assert_eq!(out, packet(0, &[0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0]));
        let mut long = Vec::new();
        put_lenenc(300, &mut long);
        put_lenenc(70_000, &mut long);
        assert_eq!(long, [0xfc, 0x2c, 0x01, 0xfd, 0x70, 0x11, 0x01]);
        assert_eq!(Cursor::new(&long).lenenc().unwrap(), 300);
    }

    #[test]
    fn result_sets_count_rows_across_split_reads() {
        for chunk in [1, 3, 100, 1 << 20] {
            let mut c = connected(true, binary_rows(5, 2), chunk);
            c.stmts.push(Stmt { id: 1, params: 1, types: Vec::new() });
            c.sql.push("SELECT c FROM sbtest1 WHERE k = ?".into());
            assert_eq!(c.execute(0, &[Value::Int(3)]).unwrap(), 5, "chunk {chunk}");
        }
        // A row longer than the read buffer: it grows.
        let mut big = packet(1, &[1]);
        big.extend(packet(2, &column_definition("c")));
        let mut row = Vec::new();
        put_lenenc(3 * INBOX, &mut row);
        row.resize(row.len() + 3 * INBOX, b'x');
        big.extend(packet(3, &row));
        big.extend(packet(4, &row));
        big.extend(packet(5, &ok(0xfe, 2)));
        let mut c = connected(false, big, 5000);
        assert_eq!(c.batch("SELECT c FROM t").map(|_| c.inbox.buf.len()), Ok(4 * INBOX));
        let mut huge = packet(1, &[1]);
        huge.extend(packet(2, &column_definition("c")));
        huge.extend(packet(3, &[0, 0, 0, 0]));
        huge.extend_from_slice(&[0xff, 0xff, 0xff, 4]);
        let mut c = connected(false, huge, 64);
        assert!(c.batch("SELECT c FROM t").unwrap_err().contains("16 MB"));
        // Without DEPRECATE_EOF: an EOF after the definitions and at the end; and two result sets in one reply.
        let mut reply = packet(1, &[1]);
        reply.extend(packet(2, &column_definition("c")));
        reply.extend(packet(3, &[0xfe, 0, 0, 2, 0]));
        reply.extend(packet(4, &[1, b'x']));
        reply.extend(packet(5, &[0xfe, 0, 0, 0x0a, 0]));
        reply.extend(packet(6, &[1]));
        reply.extend(packet(7, &column_definition("c")));
        reply.extend(packet(8, &[0xfe, 0, 0, 2, 0]));
        reply.extend(packet(9, &[1, b'y']));
        reply.extend(packet(10, &[1, b'z']));
        reply.extend(packet(11, &[0xfe, 0, 0, 2, 0]));
        let mut c = connected(false, reply, 2);
        c.caps &= !CLIENT_DEPRECATE_EOF;
        c.send_query(Some("CALL p()")).unwrap();
        assert_eq!(c.read_results(|_| {}).unwrap(), 3);
    }

    #[test]
    fn errors_and_lost_connections_are_errors() {
        let mut err = vec![0xff];
        err.extend_from_slice(&1205u16.to_le_bytes());
        err.extend_from_slice(b"#HY000Lock wait timeout exceeded; try restarting transaction");
        let mut c = connected(false, packet(1, &err), 64);
        let e = c.batch("UPDATE t SET k = 1").unwrap_err();
        assert_eq!(e, "ERROR 1205 (HY000): Lock wait timeout exceeded; try restarting transaction");
        // A reply cut short: the server went away.
        let mut c = connected(true, binary_rows(3, 2)[..50].to_vec(), 64);
        c.stmts.push(Stmt { id: 1, params: 0, types: Vec::new() });
        c.sql.push("SELECT c FROM sbtest1".into());
        assert_eq!(c.execute(0, &[]).unwrap_err(), "connection: the server closed the connection");
        // Out of order.
        let mut c = connected(false, packet(2, &ok(0, 2)), 64);
        assert!(c.batch("DO 1").unwrap_err().contains("out of order"));
    }

    #[test]
    fn first_values_decode_from_binary_rows() {
        let def = column_definition("v");
        assert_eq!(column_type(&def).unwrap(), (0xfe, 0));
        let mut bigint = vec![0, 0];
        bigint.extend_from_slice(&(-7i64).to_le_bytes());
        assert_eq!(first_binary_value(&bigint, 1, 8, 0).unwrap(), Some(Scalar::Int(-7)));
        assert_eq!(first_binary_value(&[0, 0, 0xff, 0xff, 0xff, 0xff], 1, 3, 0).unwrap(), Some(Scalar::Int(-1)));
        assert_eq!(
            first_binary_value(&[0, 0, 0xff, 0xff, 0xff, 0xff], 1, 3, UNSIGNED_FLAG).unwrap(),
            Some(Scalar::Int(u32::MAX as i64))
        );
        assert!(
            first_binary_value(&[0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 1, 8, UNSIGNED_FLAG).is_err()
        );
        assert_eq!(
            first_binary_value(&[0, 0, 5, b'0', b'-', b'1', b'-', b'9'], 1, 253, 0).unwrap(),
            Some(Scalar::Text("0-1-9".into()))
        );
        assert_eq!(first_binary_value(&[0, 0b100], 1, 8, 0).unwrap(), None, "NULL");
        assert!(first_binary_value(&[0, 0, 1], 1, 8, 0).is_err(), "short: an error, not a panic");
        assert!(first_binary_value(&[0, 0, 1, 2, 3, 4], 1, 5, 0).is_err(), "a DOUBLE is not decoded");
    }

    #[test]
    fn query_first_reads_the_first_value_and_consumes_the_rest() {
        let mut reply = packet(1, &[2]);
        let mut def = column_definition("v");
        let n = def.len();
        def[n - 6] = 8; // LONGLONG
        reply.extend(packet(2, &def));
        reply.extend(packet(3, &column_definition("c")));
        let mut seq = 4;
        for v in [41i64, 42] {
            let mut row = vec![0, 0];
            row.extend_from_slice(&v.to_le_bytes());
            row.extend_from_slice(&[1, b'x']);
            reply.extend(packet(seq, &row));
            seq += 1;
        }
        reply.extend(packet(seq, &ok(0xfe, 2)));
        let mut c = connected(true, reply, 3);
        c.stmts.push(Stmt { id: 1, params: 0, types: Vec::new() });
        c.sql.push("SELECT v, c FROM probe".into());
        assert_eq!(c.query_first(0, &[]).unwrap(), Some(Scalar::Int(41)));
        c.stream = Script { input: packet(1, &ok(0, 2)), pos: 0, chunk: 64, written: Vec::new(), replay: false };
        assert_eq!(c.query_first(0, &[]).unwrap(), None, "no result set");
    }

    #[test]
    fn unprepared_statements_inline_their_values() {
        let mut prepare_ok = vec![0, 9, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0];
        prepare_ok.truncate(12);
        let mut reply = packet(1, &prepare_ok);
        reply.extend(packet(2, &column_definition("?")));
        reply.extend(packet(3, &column_definition("c")));
        let mut c = connected(false, reply, 64);
        let id = c.prepare("SELECT c FROM t WHERE c = ?").unwrap();
        let w = &c.stream.written;
        assert_eq!(&w[w.len() - 9..], &[5, 0, 0, 0, COM_STMT_CLOSE, 9, 0, 0, 0], "closed again, unprepared");
        c.stream = Script { input: binary_rows(1, 2), pos: 0, chunk: 64, written: Vec::new(), replay: false };
        assert_eq!(c.execute(id, &[Value::Text("it's \\".into())]).unwrap(), 1);
        assert_eq!(&c.stream.written[4..], b"\x03SELECT c FROM t WHERE c = 'it''s \\\\'");
    }
}
