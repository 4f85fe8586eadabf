//! SQLite loaded at run time from a shared library, so that any build of it can be measured by its path.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::ptr;
use std::sync::Arc;

use crate::engine::{Connection, Value};

const SQLITE_OK: c_int = 0;
const SQLITE_ROW: c_int = 100;
const SQLITE_DONE: c_int = 101;
const SQLITE_INTEGER: c_int = 1;
const SQLITE_OPEN_READWRITE: c_int = 0x0000_0002;
const SQLITE_OPEN_CREATE: c_int = 0x0000_0004;
/// Multi-thread mode: each connection is used by one thread only, so its mutex would be pure overhead.
const SQLITE_OPEN_NOMUTEX: c_int = 0x0000_8000;
/// SQLITE_TRANSIENT: SQLite copies the bound text, so our buffer can be reused at once.
const SQLITE_TRANSIENT: isize = -1;

type Db = *mut c_void;
type Stmt = *mut c_void;

/// Function pointers resolved once; the Library stays loaded for as long as any Api clone lives.
pub struct Api {
    _lib: libloading::Library,
    libversion: unsafe extern "C" fn() -> *const c_char,
    threadsafe: unsafe extern "C" fn() -> c_int,
    open_v2: unsafe extern "C" fn(*const c_char, *mut Db, c_int, *const c_char) -> c_int,
    close_v2: unsafe extern "C" fn(Db) -> c_int,
    errmsg: unsafe extern "C" fn(Db) -> *const c_char,
    exec: unsafe extern "C" fn(Db, *const c_char, *const c_void, *mut c_void, *mut *mut c_char) -> c_int,
    busy_timeout: unsafe extern "C" fn(Db, c_int) -> c_int,
    prepare_v2: unsafe extern "C" fn(Db, *const c_char, c_int, *mut Stmt, *mut *const c_char) -> c_int,
    bind_int64: unsafe extern "C" fn(Stmt, c_int, i64) -> c_int,
    bind_text: unsafe extern "C" fn(Stmt, c_int, *const c_char, c_int, isize) -> c_int,
    step: unsafe extern "C" fn(Stmt) -> c_int,
    reset: unsafe extern "C" fn(Stmt) -> c_int,
    finalize: unsafe extern "C" fn(Stmt) -> c_int,
    column_count: unsafe extern "C" fn(Stmt) -> c_int,
    column_type: unsafe extern "C" fn(Stmt, c_int) -> c_int,
    column_int64: unsafe extern "C" fn(Stmt, c_int) -> i64,
    column_bytes: unsafe extern "C" fn(Stmt, c_int) -> c_int,
    column_text: unsafe extern "C" fn(Stmt, c_int) -> *const c_char,
    /// sqlite3_config and sqlite3_status: only the page cache buffer (engine/page_cache.rs) uses them.
    config: Option<unsafe extern "C" fn(c_int, ...) -> c_int>,
    status: Option<unsafe extern "C" fn(c_int, *mut c_int, *mut c_int, c_int) -> c_int>,
}

const SQLITE_CONFIG_PAGECACHE: c_int = 7;
const SQLITE_CONFIG_PCACHE_HDRSZ: c_int = 24;

impl Api {
    pub fn load(path: &str) -> Result<Arc<Api>, String> {
        // SAFETY: loading a library runs its initialisers; the user named this file as a SQLite library.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("cannot load library {path}: {e}"))?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the signature matches SQLite's documented C API for this symbol.
                *unsafe { lib.get($name.as_bytes()) }.map_err(|_| {
                    format!("{path} is not a SQLite library (symbol {} not found)", $name.trim_end_matches('\0'))
                })?
            };
        }
        let api = Api {
            libversion: sym!("sqlite3_libversion\0"),
            threadsafe: sym!("sqlite3_threadsafe\0"),
            open_v2: sym!("sqlite3_open_v2\0"),
            close_v2: sym!("sqlite3_close_v2\0"),
            errmsg: sym!("sqlite3_errmsg\0"),
            exec: sym!("sqlite3_exec\0"),
            busy_timeout: sym!("sqlite3_busy_timeout\0"),
            prepare_v2: sym!("sqlite3_prepare_v2\0"),
            bind_int64: sym!("sqlite3_bind_int64\0"),
            bind_text: sym!("sqlite3_bind_text\0"),
            step: sym!("sqlite3_step\0"),
            reset: sym!("sqlite3_reset\0"),
            finalize: sym!("sqlite3_finalize\0"),
            column_count: sym!("sqlite3_column_count\0"),
            column_type: sym!("sqlite3_column_type\0"),
            column_int64: sym!("sqlite3_column_int64\0"),
            column_bytes: sym!("sqlite3_column_bytes\0"),
            column_text: sym!("sqlite3_column_text\0"),
            // SAFETY: the signatures match SQLite's documented C API; absent symbols stay None.
            config: unsafe { lib.get(b"sqlite3_config\0") }.ok().map(|s| *s),
            status: unsafe { lib.get(b"sqlite3_status\0") }.ok().map(|s| *s),
            _lib: lib,
        };
        Ok(Arc::new(api))
    }

    pub fn version(&self) -> String {
        // SAFETY: sqlite3_libversion returns a static NUL-terminated string.
        unsafe { CStr::from_ptr((self.libversion)()) }.to_string_lossy().into_owned()
    }

    /// SQLITE_CONFIG_PCACHE_HDRSZ: the bytes SQLite keeps beside each page of a page cache buffer's slot.
    pub fn page_cache_header_bytes(&self) -> Result<usize, String> {
        let config = self.config.ok_or("this SQLite library has no sqlite3_config")?;
        let mut bytes: c_int = 0;
        // SAFETY: SQLITE_CONFIG_PCACHE_HDRSZ takes one int* argument.
        let rc = unsafe { config(SQLITE_CONFIG_PCACHE_HDRSZ, &mut bytes as *mut c_int) };
        if rc != SQLITE_OK || bytes <= 0 {
            return Err(format!("sqlite3_config(SQLITE_CONFIG_PCACHE_HDRSZ) failed with code {rc}"));
        }
        Ok(bytes as usize)
    }

    /// SQLITE_CONFIG_PAGECACHE: `slots` slots of `slot_bytes` at `buffer`, which must outlive every connection.
    pub fn config_page_cache(&self, buffer: *mut c_void, slot_bytes: c_int, slots: c_int) -> Result<(), String> {
        let config = self.config.ok_or("this SQLite library has no sqlite3_config")?;
        // SAFETY: SQLITE_CONFIG_PAGECACHE takes (void*, int, int); the buffer is never freed (page_cache.rs).
        let rc = unsafe { config(SQLITE_CONFIG_PAGECACHE, buffer, slot_bytes, slots) };
        if rc != SQLITE_OK {
            return Err(format!(
                "sqlite3_config(SQLITE_CONFIG_PAGECACHE) did not take (code {rc}): SQLite was initialised already"
            ));
        }
        Ok(())
    }

    /// A sqlite3_status counter's high-water mark; None when the library has no sqlite3_status.
    pub fn status_high(&self, op: c_int) -> Option<i64> {
        let status = self.status?;
        let (mut current, mut high): (c_int, c_int) = (0, 0);
        // SAFETY: two int out-pointers, no reset.
        let rc = unsafe { status(op, &mut current, &mut high, 0) };
        (rc == SQLITE_OK).then_some(high as i64)
    }

    pub fn threadsafe(&self) -> bool {
        // SAFETY: no arguments, no state.
        unsafe { (self.threadsafe)() != 0 }
    }
}

pub struct SqliteConnection {
    api: Arc<Api>,
    db: Db,
    prepared: bool,
    sql: Vec<CString>,
    stmts: Vec<Stmt>,
}

// SAFETY: a connection is moved to its thread once and then used only there (SQLITE_OPEN_NOMUTEX contract).
unsafe impl Send for SqliteConnection {}

impl SqliteConnection {
    pub fn open(api: Arc<Api>, path: &str, busy_timeout_ms: u32, prepared: bool) -> Result<Self, String> {
        let cpath = CString::new(path).map_err(|_| "database path contains NUL".to_string())?;
        let mut db: Db = ptr::null_mut();
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
        // SAFETY: valid C string and out pointer.
        let rc = unsafe { (api.open_v2)(cpath.as_ptr(), &mut db, flags, ptr::null()) };
        let conn = SqliteConnection { api, db, prepared, sql: Vec::new(), stmts: Vec::new() };
        if rc != SQLITE_OK {
            return Err(format!("cannot open {path}: {}", conn.errmsg()));
        }
        // SAFETY: db is open.
        unsafe { (conn.api.busy_timeout)(conn.db, busy_timeout_ms as c_int) };
        Ok(conn)
    }

    fn errmsg(&self) -> String {
        if self.db.is_null() {
            return "out of memory".into();
        }
        // SAFETY: db is a connection handle; errmsg returns a string owned by SQLite.
        unsafe { CStr::from_ptr((self.api.errmsg)(self.db)) }.to_string_lossy().into_owned()
    }

    fn prepare_raw(&self, sql: &CStr) -> Result<Stmt, String> {
        let mut stmt: Stmt = ptr::null_mut();
        // SAFETY: db open, sql NUL-terminated.
        let rc = unsafe { (self.api.prepare_v2)(self.db, sql.as_ptr(), -1, &mut stmt, ptr::null_mut()) };
        if rc != SQLITE_OK {
            return Err(format!("prepare failed: {}: {}", self.errmsg(), sql.to_string_lossy()));
        }
        Ok(stmt)
    }

    /// The first column of every row of `sql`, as text (NULL as an empty string): for reading settings back.
    pub fn first_column(&self, sql: &str) -> Result<Vec<String>, String> {
        let c = CString::new(sql).map_err(|_| "SQL contains NUL".to_string())?;
        let stmt = self.prepare_raw(&c)?;
        let mut out = Vec::new();
        let result = loop {
            // SAFETY: stmt was just prepared on this connection.
            let rc = unsafe { (self.api.step)(stmt) };
            if rc == SQLITE_ROW {
                // SAFETY: the statement is on a row; the text is copied before the next step.
                let text = unsafe { (self.api.column_text)(stmt, 0) };
                out.push(if text.is_null() {
                    String::new()
                } else {
                    // SAFETY: column_text returns a NUL-terminated string valid until the next step.
                    unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
                });
            } else if rc == SQLITE_DONE {
                break Ok(out);
            } else {
                break Err(format!("{}: {sql}", self.errmsg()));
            }
        };
        // SAFETY: stmt is not used after this.
        unsafe { (self.api.finalize)(stmt) };
        result
    }

    /// Binds, steps through every row reading each column as a client would, and resets. Returns rows.
    // Inlined into execute: the hot loop's call into SQLite is then one call frame, not two (cachegrind: 20
    // instructions an event).
    #[inline(always)]
    fn run_stmt(&self, stmt: Stmt, values: &[Value]) -> Result<u64, String> {
        let api = &self.api;
        for (i, v) in values.iter().enumerate() {
            let idx = (i + 1) as c_int;
            // SAFETY: stmt is a live prepared statement; text is copied by SQLite (TRANSIENT).
            let rc = unsafe {
                match v {
                    Value::Int(x) => (api.bind_int64)(stmt, idx, *x),
                    Value::Text(s) => {
                        (api.bind_text)(stmt, idx, s.as_ptr() as *const c_char, s.len() as c_int, SQLITE_TRANSIENT)
                    }
                }
            };
            if rc != SQLITE_OK {
                // SAFETY: as above.
                unsafe { (api.reset)(stmt) };
                return Err(format!("bind failed: {}", self.errmsg()));
            }
        }
        let mut rows = 0u64;
        loop {
            // SAFETY: as above.
            let rc = unsafe { (api.step)(stmt) };
            if rc == SQLITE_ROW {
                rows += 1;
                // SAFETY: the statement is on a row.
                unsafe {
                    let n = (api.column_count)(stmt);
                    for c in 0..n {
                        if (api.column_type)(stmt, c) == SQLITE_INTEGER {
                            std::hint::black_box((api.column_int64)(stmt, c));
                        } else {
                            std::hint::black_box((api.column_bytes)(stmt, c));
                        }
                    }
                }
            } else if rc == SQLITE_DONE {
                // SAFETY: as above.
                unsafe { (api.reset)(stmt) };
                return Ok(rows);
            } else {
                let msg = self.errmsg();
                // SAFETY: as above.
                unsafe { (api.reset)(stmt) };
                return Err(msg);
            }
        }
    }
}

impl Connection for SqliteConnection {
    fn batch(&mut self, sql: &str) -> Result<(), String> {
        let c = CString::new(sql).map_err(|_| "SQL contains NUL".to_string())?;
        // SAFETY: db open, sql NUL-terminated, no callback.
        let rc = unsafe { (self.api.exec)(self.db, c.as_ptr(), ptr::null(), ptr::null_mut(), ptr::null_mut()) };
        if rc != SQLITE_OK {
            return Err(format!("{}: {sql}", self.errmsg()));
        }
        Ok(())
    }

    fn prepare(&mut self, sql: &str) -> Result<usize, String> {
        let c = CString::new(sql).map_err(|_| "SQL contains NUL".to_string())?;
        // Prepare even when unprepared mode is asked for, so that bad SQL fails before the clock starts.
        let stmt = self.prepare_raw(&c)?;
        if !self.prepared {
            // SAFETY: stmt was just prepared.
            unsafe { (self.api.finalize)(stmt) };
        }
        self.sql.push(c);
        self.stmts.push(if self.prepared { stmt } else { ptr::null_mut() });
        Ok(self.stmts.len() - 1)
    }

    #[inline(always)]
    fn execute(&mut self, id: usize, values: &[Value]) -> Result<u64, String> {
        if self.prepared {
            return self.run_stmt(self.stmts[id], values);
        }
        let stmt = self.prepare_raw(&self.sql[id])?;
        let r = self.run_stmt(stmt, values);
        // SAFETY: stmt prepared above and not used afterwards.
        unsafe { (self.api.finalize)(stmt) };
        r
    }
}

impl Drop for SqliteConnection {
    fn drop(&mut self) {
        // SAFETY: statements and db belong to this connection and are not used after this.
        unsafe {
            for s in self.stmts.drain(..) {
                if !s.is_null() {
                    (self.api.finalize)(s);
                }
            }
            if !self.db.is_null() {
                (self.api.close_v2)(self.db);
            }
        }
    }
}
