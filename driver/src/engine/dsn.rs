//! What the server engines share about reaching a server: the password, and the DSN as messages may show it.

/// The password of a server engine comes from the environment only, never from the job or the command line.
const PASSWORD_ENV: &str = "DBPERF_PASSWORD";

pub fn password() -> Option<String> {
    std::env::var(PASSWORD_ENV).ok()
}

/// The password in `name` (a job's password_env), which must then be set; None: DBPERF_PASSWORD's, if any.
pub fn password_in(name: Option<&str>) -> Result<Option<String>, String> {
    match name {
        None => Ok(password()),
        Some(name) => {
            std::env::var(name).map(Some).map_err(|_| format!("the password's environment variable {name} is not set"))
        }
    }
}

/// The DSN without anything after a user's ':' (a password never reaches a message).
pub fn label(dsn: &str) -> String {
    match (dsn.find("://"), dsn.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let userinfo = &dsn[s + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{}{}", &dsn[..s + 3], user, &dsn[at..])
        }
        _ => dsn.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn labels_drop_passwords() {
        assert_eq!(label("postgresql://bob:secret@127.0.0.1:5432/db"), "postgresql://bob@127.0.0.1:5432/db");
        assert_eq!(label("mysql://bob@127.0.0.1:3306/db"), "mysql://bob@127.0.0.1:3306/db");
        assert_eq!(label("mysql://127.0.0.1/db"), "mysql://127.0.0.1/db");
    }
}
