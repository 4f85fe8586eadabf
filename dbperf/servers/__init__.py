"""Server engines the lab installs, starts, configures and stops itself: PostgreSQL and MariaDB."""
