//! The start barrier of duet runs: two drivers set up (open, pragmas, prepare) on their own, then wait until the
//! lab releases both at once, so that their measured windows coincide. The lab hands each driver one end of a
//! socket pair (job.start_fd); the driver says it is ready with one byte and waits for one byte back.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;

/// Writes the ready byte and blocks until the start byte arrives. End of file instead (the lab closed its end: it
/// gave up on this duet, or died) is an error, so that nothing is measured outside a duet.
pub fn wait_for_start(fd: i32) -> Result<(), String> {
    // SAFETY: the lab passed this descriptor for our use only; File closes it when dropped, after the handshake.
    let mut sock = unsafe { File::from_raw_fd(fd) };
    sock.write_all(b"r").map_err(|e| format!("start_fd {fd}: saying ready: {e}"))?;
    let mut byte = [0u8; 1];
    match sock.read(&mut byte) {
        Ok(1) => Ok(()),
        Ok(_) => Err("the lab closed the start barrier without releasing this run".into()),
        Err(e) => Err(format!("start_fd {fd}: waiting for the start: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::wait_for_start;
    use std::io::{Read, Write};
    use std::os::fd::IntoRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn says_ready_then_waits_for_the_start_byte() {
        let (mut lab, driver) = UnixStream::pair().unwrap();
        let fd = driver.into_raw_fd();
        let waiter = std::thread::spawn(move || wait_for_start(fd));
        let mut ready = [0u8; 1];
        lab.read_exact(&mut ready).unwrap();
        assert_eq!(&ready, b"r");
        assert!(!waiter.is_finished(), "released before the start byte");
        lab.write_all(b"s").unwrap();
        assert_eq!(waiter.join().unwrap(), Ok(()));
    }

    #[test]
    fn a_lab_that_closes_its_end_releases_nothing() {
        let (lab, driver) = UnixStream::pair().unwrap();
        drop(lab);
        let fd = driver.into_raw_fd();
        assert!(wait_for_start(fd).is_err());
    }
}
