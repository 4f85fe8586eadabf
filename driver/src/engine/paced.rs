//! A server connection that pauses before every request (Job::request_pause_us): counted runs, so that the
//! server's read always finds it waiting and the work counted per query does not follow the host's pace.

use std::thread::sleep;
use std::time::Duration;

use crate::engine::{Connection, Value};

pub struct Paced {
    inner: Box<dyn Connection>,
    pause: Duration,
}

impl Paced {
    pub fn new(inner: Box<dyn Connection>, pause: Duration) -> Self {
        Paced { inner, pause }
    }
}

impl Connection for Paced {
    fn batch(&mut self, sql: &str) -> Result<(), String> {
        sleep(self.pause);
        self.inner.batch(sql)
    }

    fn prepare(&mut self, sql: &str) -> Result<usize, String> {
        sleep(self.pause);
        self.inner.prepare(sql)
    }

    fn execute(&mut self, id: usize, values: &[Value]) -> Result<u64, String> {
        sleep(self.pause);
        self.inner.execute(id, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    struct Counting(u32);

    impl Connection for Counting {
        fn batch(&mut self, _: &str) -> Result<(), String> {
            self.0 += 1;
            Ok(())
        }
        fn prepare(&mut self, _: &str) -> Result<usize, String> {
            self.0 += 1;
            Ok(7)
        }
        fn execute(&mut self, id: usize, _: &[Value]) -> Result<u64, String> {
            self.0 += 1;
            Ok(id as u64)
        }
    }

    #[test]
    fn every_request_waits_the_pause_first_and_passes_through() {
        let mut c = Paced::new(Box::new(Counting(0)), Duration::from_millis(5));
        let started = Instant::now();
        c.batch("BEGIN").unwrap();
        let id = c.prepare("SELECT 1").unwrap();
        assert_eq!(c.execute(id, &[]).unwrap(), 7);
        assert!(started.elapsed() >= Duration::from_millis(15), "{:?}", started.elapsed());
    }
}

#[cfg(test)]
mod refused {
    use crate::engine::factory::Engine;
    use crate::job::Job;

    #[test]
    fn sqlite_refuses_a_request_pause() {
        let job: Job = serde_json::from_value(serde_json::json!({
            "mode": "exec", "engine": "sqlite", "tables": 1, "table_size": 10,
            "library": "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0", "database": ":memory:", "request_pause_us": 2000
        }))
        .unwrap();
        let err = Engine::open(&job).err().expect("refused");
        assert!(err.contains("request_pause_us is for servers"), "{err}");
    }
}
